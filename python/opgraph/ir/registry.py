"""The two registries of the IR: conversion functions (an FX node's
``NodeInfo`` -> ``OpNode``) and execution functions (input tensors and
attributes -> output tensors), keyed by op.

Neither is needed for ATen ops: conversion has a default for every op and
execution falls back to ``torch.ops.aten.<op>.<overload>``. A key names the
op in torch's spelling or the graph's, with or without its default overload:
``custom.fused_gate``, ``custom.fused_gate.default`` and ``custom::fused_gate``
are one key."""

from collections.abc import Callable

from .._C import Error
from .names import runtime_name

_CONVERSION_REGISTRY: dict[str, Callable] = {}
_EXECUTION_REGISTRY: dict[str, Callable] = {}


def _register(registry, kind, op_type):
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"{kind}: expected an op type such as 'custom.fused_gate', got {op_type!r}")
    key = runtime_name(op_type)

    def decorator(fn):
        registry[key] = fn
        return fn

    return decorator


def _lookup(registry, op_type):
    try:
        return registry.get(runtime_name(op_type))
    except Error:
        return None  # no op has that name, so nothing is registered for it


def register_conversion(op_type: str):
    """Decorator: ``fn(node_info) -> OpNode`` converts nodes of ``op_type``."""
    return _register(_CONVERSION_REGISTRY, "register_conversion", op_type)


# Seed 004's name.
register_op = register_conversion


def register_executor(op_type: str):
    """Decorator: ``fn(inputs: list[Tensor], attrs: dict) -> list[Tensor]`` runs nodes of ``op_type``;
    ``inputs`` are the node's input tensors in order, a Tensor[] argument's items in place."""
    return _register(_EXECUTION_REGISTRY, "register_executor", op_type)


def get_conversion_fn(op_type: str) -> Callable | None:
    return _lookup(_CONVERSION_REGISTRY, op_type)


def get_execution_fn(op_type: str) -> Callable | None:
    return _lookup(_EXECUTION_REGISTRY, op_type)
