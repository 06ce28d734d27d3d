"""opgraph's dtypes under their three spellings: opgraph's names (what the
graph, Session and shape functions use), NumPy dtypes and torch dtypes. The
one table every front end converts through; torch is imported only when a
torch dtype is asked for, so that NumPy users never load it."""

import numpy as np

from ._C import Error, dtype_names

# The list of the package C ABI (OG_DTYPES in opgraph/package/abi.h), as libopgraph holds it.
NAMES = tuple(dtype_names())
# NumPy has no bfloat16.
NUMPY_NAMES = tuple(name for name in NAMES if name != "bfloat16")
# torch's schemas give dtype defaults as c10::ScalarType numbers (randperm's dtype=4).
SCALAR_TYPE_NUMBERS = {
    0: "uint8",
    1: "int8",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "float64",
    9: "complex64",
    10: "complex128",
    11: "bool",
    15: "bfloat16",
}


def spelling(dtype):
    """A dtype's name as opgraph would spell it, whether or not opgraph holds it:
    "float32" for "float32", numpy.float32, numpy.dtype("float32") or torch.float32."""
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        return str(dtype).removeprefix("torch.")
    try:
        return np.dtype(dtype).name
    except TypeError:
        return repr(dtype)


def name_of(dtype, what="dtype"):
    """opgraph's name of ``dtype`` (see ``spelling``); raises opgraph.Error,
    starting with ``what``, for a dtype opgraph does not hold."""
    name = spelling(dtype)
    if name not in NAMES:
        raise Error(f"{what}: dtype {dtype} is not one opgraph holds ({', '.join(NAMES)})")
    return name


def to_numpy(name):
    """The NumPy dtype of an opgraph dtype name."""
    if name_of(name) not in NUMPY_NAMES:
        raise Error(f"{name} has no NumPy dtype")
    return np.dtype(name)


def to_torch(name):
    """The torch dtype of an opgraph dtype name."""
    import torch

    return getattr(torch, name_of(name))
