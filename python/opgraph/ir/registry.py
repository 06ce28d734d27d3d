"""The two registries of the IR: conversion functions (an FX node's
``NodeInfo`` -> ``OpNode``) and execution functions (input tensors and
attributes -> output tensors), keyed by op type.

Neither is needed for ATen ops: conversion has a default for every op and
execution falls back to ``torch.ops.aten.<op>.<overload>``. A key names the
op with or without its ``.default`` overload (``custom.fused_gate`` matches
the node ``custom.fused_gate.default``)."""

from collections.abc import Callable

from .names import without_default

_CONVERSION_REGISTRY: dict[str, Callable] = {}
_EXECUTION_REGISTRY: dict[str, Callable] = {}


def _register(registry, kind, op_type):
    def decorator(fn):
        registry[without_default(op_type)] = fn
        return fn

    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"{kind}: expected an op type such as 'custom.fused_gate', got {op_type!r}")
    return decorator


def register_conversion(op_type: str):
    """Decorator: ``fn(node_info) -> OpNode`` converts nodes of ``op_type``."""
    return _register(_CONVERSION_REGISTRY, "register_conversion", op_type)


# Seed 004's name.
register_op = register_conversion


def register_executor(op_type: str):
    """Decorator: ``fn(inputs: list[Tensor], attrs: dict) -> list[Tensor]`` runs nodes of ``op_type``."""
    return _register(_EXECUTION_REGISTRY, "register_executor", op_type)


def get_conversion_fn(op_type: str) -> Callable | None:
    return _CONVERSION_REGISTRY.get(without_default(op_type))


def get_execution_fn(op_type: str) -> Callable | None:
    return _EXECUTION_REGISTRY.get(without_default(op_type))
