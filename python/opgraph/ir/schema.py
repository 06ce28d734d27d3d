"""The schema of an op type, read from ``torch.ops`` (every ATen op and every
op registered with torch.library) or else from opgraph's registry, as one
list of ``Argument`` either way."""

from dataclasses import dataclass
from typing import Any

import torch

from .. import _C
from .._C import Error
from .names import runtime_name

# Argument kinds the IR holds; anything else (Generator, Dimname, Storage,
# Stream, ...) has no value a graph can carry.
ATTRIBUTE_KINDS = ("int", "float", "bool", "str", "Scalar", "ScalarType", "Device", "Layout", "MemoryFormat")


@dataclass(frozen=True)
class Argument:
    name: str
    kind: str  # "Tensor", one of ATTRIBUTE_KINDS, or the unsupported type's name
    is_list: bool
    optional: bool  # Tensor?, int?; for a list, its elements may be None (Tensor?[])
    kwarg_only: bool
    has_default: bool
    default: Any
    type: str  # as the schema spells it, for messages

    @property
    def is_tensor(self):
        return self.kind == "Tensor"


def torch_op(op_type) -> torch._ops.OpOverload | None:
    """``torch.ops.<ns>.<name>.<overload>`` for ``op_type``, or None when torch has no such op."""
    namespace, _, rest = op_type.partition(".")
    name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


def arguments(op_type) -> list[Argument]:
    """The arguments of ``op_type``'s schema; raises opgraph.Error when neither torch nor opgraph knows the op."""
    op = torch_op(op_type)
    if op is not None:
        return [_from_torch(a) for a in op._schema.arguments]
    try:
        schema = _C.op_schema(runtime_name(op_type))
    except Error:
        raise Error(
            f"opgraph.ir: op '{op_type}' has no schema: it is neither in torch.ops nor in opgraph's "
            f"registry; load the op package that defines it"
        ) from None
    return [_from_opgraph(a) for a in schema.arguments]


def _torch_kind(jit_type):
    """(kind, is_list, optional) of a torch JIT type."""
    optional = False
    if isinstance(jit_type, torch.OptionalType):
        optional, jit_type = True, jit_type.getElementType()
    if isinstance(jit_type, torch.ListType):
        element = jit_type.getElementType()
        element_optional = isinstance(element, torch.OptionalType)
        if element_optional:
            element = element.getElementType()
        return _base_kind(str(element)), True, optional or element_optional
    return _base_kind(str(jit_type)), False, optional


def _base_kind(spelling):
    return {"number": "Scalar", "SymInt": "int"}.get(spelling, spelling)


def _from_torch(argument):
    kind, is_list, optional = _torch_kind(argument.real_type)
    has_default = argument.has_default_value()
    return Argument(
        argument.name,
        kind,
        is_list,
        optional,
        argument.kwarg_only,
        has_default,
        argument.default_value if has_default else None,
        str(argument.real_type),
    )


def _from_opgraph(argument):
    """From opgraph's spelling: "int[2]?", "Tensor?[]", "SymInt"."""
    element, _, size = argument.type.partition("[")
    optional = argument.type.endswith("?") or element.endswith("?")
    return Argument(
        argument.name,
        _base_kind(element.rstrip("?")),
        bool(size),
        optional,
        argument.kwarg_only,
        argument.has_default,
        argument.default if argument.has_default else None,
        argument.type,
    )
