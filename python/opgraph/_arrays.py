"""The array namespace of data: NumPy for arrays in host memory, CuPy for
arrays on a CUDA device. The layers and optimizers compute with the namespace
of their data, so that CuPy data stays on the GPU and reaches the CUDA
kernels. CuPy is imported only for data that lives on a GPU."""

import sys

import numpy as np

from ._C import Error

_DLPACK_CUDA = 2  # DLDeviceType kDLCUDA


def _cupy():
    """The cupy module, or a clear error where it is not installed."""
    try:
        import cupy
    except ImportError as error:
        raise Error(
            "data on a CUDA device needs CuPy for the layers' arithmetic: pip install cupy-cuda13x "
            f"(importing cupy failed: {error})"
        ) from None
    return cupy


def namespace(x):
    """``cupy`` for a CuPy array, else ``numpy``."""
    cupy = sys.modules.get("cupy")
    return cupy if cupy is not None and isinstance(x, cupy.ndarray) else np


def as_array(x):
    """``x`` as a NumPy or CuPy array without a copy: those as they are, other
    DLPack producers (a PyTorch tensor, say) as NumPy in host memory and as
    CuPy on a CUDA device, anything else through ``numpy.asarray``."""
    if isinstance(x, np.ndarray) or namespace(x) is not np:
        return x
    if hasattr(x, "__dlpack_device__"):
        if x.__dlpack_device__()[0] == _DLPACK_CUDA:
            return _cupy().from_dlpack(x)
        return np.from_dlpack(x)
    return np.asarray(x)


def device_of(x):
    """``"cuda"`` or ``"cpu"``: where ``x`` (a NumPy or CuPy array) lives."""
    return "cpu" if namespace(x) is np else "cuda"


def namespace_for(device):
    """The namespace of arrays on ``device`` ("cpu" or "cuda")."""
    if device == "cpu":
        return np
    if device == "cuda":
        return _cupy()
    raise Error(f"device: expected 'cpu' or 'cuda', got {device!r}")


def to_namespace(x, xp):
    """``x`` in namespace ``xp``: copied between the host and the device where
    it is not there already."""
    x = as_array(x)
    if namespace(x) is xp:
        return x
    return x.get() if xp is np else xp.asarray(x)
