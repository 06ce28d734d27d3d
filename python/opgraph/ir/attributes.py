"""Attribute values: from an FX node's arguments into the IR (plain Python:
numbers, bools, strings, lists, None; dtypes, devices, layouts and memory
formats as their names), back into torch for execution, and into the graph
JSON's typed attributes for the runtime."""

import torch

from .._C import Error
from .schema import ATTRIBUTE_KINDS

# Enum-valued defaults come out of torch's schemas as integers.
_MEMORY_FORMATS = ["contiguous_format", "preserve_format", "channels_last", "channels_last_3d"]
_LAYOUTS = ["strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged"]
# The dtypes the runtime holds, under the names the graph JSON uses.
_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int8: "int8",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.bool: "bool",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}
# ...and dtype defaults as c10::ScalarType numbers (randperm's dtype=4).
_SCALAR_TYPES = {
    0: torch.uint8,
    1: torch.int8,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    9: torch.complex64,
    10: torch.complex128,
    11: torch.bool,
    15: torch.bfloat16,
}


def unsupported(op_type, argument, value):
    return Error(
        f"opgraph.ir: {op_type}: argument '{argument.name}' of type {argument.type} cannot be held in the "
        f"IR (got {value!r}); the IR holds tensors and {', '.join(ATTRIBUTE_KINDS)} values and lists"
    )


def dtype_name(op_type, what, dtype):
    if dtype not in _DTYPES:
        raise Error(
            f"opgraph.ir: {op_type}: {what}: dtype {dtype} is not one opgraph holds ({', '.join(_DTYPES.values())})"
        )
    return _DTYPES[dtype]


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
        return dtype_name(op_type, argument.name, _SCALAR_TYPES.get(value, value) if isinstance(value, int) else value)
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
    if argument.kind == "ScalarType":
        return _TORCH_DTYPES[value]
    if argument.kind == "Device":
        return torch.device(value)
    if argument.kind in ("MemoryFormat", "Layout"):
        return getattr(torch, value)
    return value


def to_json(op_type, argument, value):
    """The graph JSON's typed attribute for an IR attribute."""
    if value is None:
        return {"type": "none"}
    kind = argument.kind
    if argument.is_list:
        if kind == "bool":
            return {"type": "bools", "value": [bool(v) for v in value]}
        if kind == "float" or (kind == "Scalar" and any(isinstance(v, float) for v in value)):
            return {"type": "floats", "value": [float(v) for v in value]}
        if kind in ("int", "Scalar") and any(isinstance(v, str) for v in value):
            return {"type": "symints", "value": value}  # sizes computed from symbols (symbolic.py)
        if kind in ("int", "Scalar"):
            return {"type": "ints", "value": [int(v) for v in value]}
        raise unsupported(op_type, argument, value)
    if kind == "ScalarType":
        return {"type": "dtype", "value": value}
    if kind in ("int", "Scalar") and isinstance(value, str):
        return {"type": "symint", "value": value}
    if kind in ("Device", "Layout", "MemoryFormat", "str"):
        return {"type": "str", "value": value}
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "float", "value": float(value)} if kind == "float" else {"type": "int", "value": value}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    raise unsupported(op_type, argument, value)


def from_json(attribute):
    """The IR value of a graph JSON attribute (the inverse of ``to_json``)."""
    return attribute.get("value")
