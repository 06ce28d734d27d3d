"""Python attribute values -> the graph JSON's typed attributes, by the op's schema."""

import numpy as np

from .._C import Error
from .types import DType


def _sequence(value, size):
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] * (size or 1)  # an int for an int[2] means the same value twice, as in PyTorch


def encode(op, argument, value):
    """The JSON attribute {"type": ..., "value": ...} for ``value`` given to ``argument`` of ``op``."""
    if value is None:
        if not argument.optional:
            raise Error(f"{op}: {argument.name}: expected {argument.type}, got None")
        return {"type": "none"}
    kind = argument.type.rstrip("?")
    base, _, rest = kind.partition("[")
    size = int(rest[:-1]) if rest[:-1].isdigit() else None
    try:
        if rest:
            items = _sequence(value, size)
            if base in ("int", "SymInt"):
                return {"type": "ints", "value": [int(_integer(v)) for v in items]}
            if base == "float":
                return {"type": "floats", "value": [float(v) for v in items]}
            if base == "bool":
                return {"type": "bools", "value": [bool(v) for v in items]}
        elif base in ("int", "SymInt"):
            return {"type": "int", "value": int(_integer(value))}
        elif base == "float":
            return {"type": "float", "value": float(value)}
        elif base == "Scalar":
            integral = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
            return {"type": "int", "value": int(value)} if integral else {"type": "float", "value": float(value)}
        elif base == "bool":
            return {"type": "bool", "value": bool(value)}
        elif base == "str":
            return {"type": "str", "value": str(value)}
        elif base == "ScalarType":
            return {"type": "dtype", "value": DType.of(value).value}
    except (TypeError, ValueError) as e:
        raise Error(f"{op}: {argument.name}: expected {argument.type}, got {value!r} ({e})") from None
    raise Error(f"{op}: {argument.name}: a graph cannot hold an attribute of type {argument.type}")


def _integer(value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("not an integer")
    return value
