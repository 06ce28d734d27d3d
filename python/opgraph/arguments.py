"""An op's arguments as Python front ends see them: for each argument of a
schema, whether it is a tensor, a tensor list or an attribute, whether it may
be None, its default, and where it sits among the positional arguments. Read
from opgraph's registry or from torch's schemas (torch.ops, for ops of
exported models that opgraph's registry may not have), one list of
``Argument`` either way."""

from dataclasses import dataclass, replace
from typing import Any

from . import _C
from ._C import Error

# Attribute kinds a graph holds; anything else (Generator, Dimname, Storage,
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
    type: str  # as the schema spells the type: "int[2]?", for messages
    text: str  # as the schema spells the argument: "Tensor? bias=None"
    position: int | None  # index among the positional arguments; None when keyword-only

    @property
    def is_tensor(self):
        return self.kind == "Tensor"

    @property
    def is_tensor_list(self):
        return self.is_tensor and self.is_list


def of_schema(schema) -> list[Argument]:
    """The arguments of an ``opgraph.Schema``."""
    return _positioned([_from_opgraph(a) for a in schema.arguments])


def of_op(name) -> list[Argument]:
    """The arguments of the registered op ``name`` ("aten::conv2d")."""
    return of_schema(_C.op_schema(name))


def of_torch_op(op) -> list[Argument]:
    """The arguments of a ``torch._ops.OpOverload``."""
    return _positioned([_from_torch(a) for a in op._schema.arguments])


def of_ir_op(op) -> list[Argument]:
    """The arguments of an op of an IR's graph ("aten::conv2d", "custom::fused_gate"; torch's
    spelling, "aten.conv2d.default", is read too): torch's schema where torch.ops has the op, else
    opgraph's; raises opgraph.Error when neither knows it."""
    overload = torch_op(op)
    if overload is not None:
        return of_torch_op(overload)
    from .ir.names import runtime_name

    try:
        return of_op(runtime_name(op))
    except Error:
        raise Error(
            f"opgraph.ir: op '{op}' has no schema: it is neither in torch.ops nor in opgraph's registry; "
            f"load the op package that defines it"
        ) from None


def torch_op(op):
    """``torch.ops.<ns>.<name>.<overload>`` for an op of an IR's graph ("aten::add.Tensor"; torch's
    spelling is read too), or None when torch has no such op."""
    import torch

    from .ir.names import runtime_name

    namespace, _, rest = runtime_name(op).partition("::")
    name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        return None


def _positioned(arguments):
    positional = [a for a in arguments if not a.kwarg_only]
    return [a if a.kwarg_only else replace(a, position=positional.index(a)) for a in arguments]


def _torch_kind(jit_type):
    """(kind, is_list, optional) of a torch JIT type."""
    import torch

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
    return {"number": "Scalar", "SymInt": "int", "SymBool": "bool"}.get(spelling, spelling)


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
        str(argument),
        None,
    )


def _from_opgraph(argument):
    """From opgraph's spelling: "int[2]?", "Tensor?[]", "SymInt"."""
    element, _, size = argument.type.partition("[")
    return Argument(
        argument.name,
        _base_kind(element.rstrip("?")),
        bool(size),
        argument.type.endswith("?") or element.endswith("?"),
        argument.kwarg_only,
        argument.has_default,
        argument.default if argument.has_default else None,
        argument.type,
        str(argument),
        None,
    )
