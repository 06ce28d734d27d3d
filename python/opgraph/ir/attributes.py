"""Attribute values: from an FX node's arguments into the IR (plain Python:
numbers, bools, strings, lists, None; dtypes, devices, layouts and memory
formats as their names), which the graph takes as they are
(``opgraph.Graph.add_node`` binds them to the op's schema), and from a graph
node back into torch for execution."""

import torch

from .. import dtypes
from .._C import Error
from ..arguments import ATTRIBUTE_KINDS

# Enum-valued defaults come out of torch's schemas as integers.
_MEMORY_FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
_LAYOUTS = ["strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged"]


def unsupported(op_type, argument, value):
    return Error(
        f"opgraph.ir: {op_type}: argument '{argument.name}' of type {argument.type} cannot be held in the "
        f"IR (got {value!r}); the IR holds tensors and {', '.join(ATTRIBUTE_KINDS)} values and lists"
    )


def to_ir(op_type, argument, value):
    """The IR's value for ``value`` given to the non-tensor ``argument``."""
    if value is None:
        return None
    if argument.kind not in ATTRIBUTE_KINDS:
        raise unsupported(op_type, argument, value)
    if argument.is_list:
        return [_item_to_ir(op_type, argument, v) for v in value]
    return _item_to_ir(op_type, argument, value)


def _item_to_ir(op_type, argument, value):
    kind = argument.kind
    if kind == "ScalarType":
        dtype = dtypes.SCALAR_TYPE_NUMBERS.get(value, value) if isinstance(value, int) else value
        return dtypes.name_of(dtype, f"opgraph.ir: {op_type}: {argument.name}")
    if kind == "Device":
        return str(torch.device(value))
    if kind == "MemoryFormat":
        return _MEMORY_FORMATS[value] if isinstance(value, int) else str(value).removeprefix("torch.")
    if kind == "Layout":
        return _LAYOUTS[value] if isinstance(value, int) else str(value).removeprefix("torch.")
    if isinstance(value, (bool, int, float, str)):
        return value
    raise unsupported(op_type, argument, value)


def to_torch(argument, value):
    """The torch value of an IR attribute, for calling the op."""
    if value is None:
        return None
    if argument.is_list:
        return [_item_to_torch(argument, v) for v in value]
    return _item_to_torch(argument, value)


def _item_to_torch(argument, value):
    if argument.kind == "bool":
        return bool(value)  # a graph keeps an op's bool[] as ints when the registry does not know the op
    if argument.kind == "ScalarType":
        return dtypes.to_torch(value)
    if argument.kind == "Device":
        return torch.device(value)
    if argument.kind in ("MemoryFormat", "Layout"):
        return getattr(torch, value)
    return value
