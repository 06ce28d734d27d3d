"""opgraph kernels registered with PyTorch's dispatcher from C++.

The default kernels (registration.py) are Python functions: each call from
PyTorch runs a few Python frames before reaching opgraph. This path instead
builds a small C++ library against the torch wheel's headers and CMake
package (``torch.utils.cmake_prefix_path``), once per torch and opgraph
installation, whose boxed kernel reads PyTorch's argument stack directly. Select
it with ``CustomOpLibrary(path, kernels="cpp")``. Fake kernels and autograd
stay the Python ones.
"""

import ctypes
import functools
import hashlib
import os
from pathlib import Path

import torch
import torch.utils

from .. import Error, __version__, build_package, cmake_prefix_path

_SOURCE = Path(__file__).resolve().parent / "csrc"


@functools.cache
def _library() -> ctypes.CDLL:
    cache = Path(os.environ.get("OPGRAPH_CACHE_DIR", Path.home() / ".cache" / "opgraph"))
    # One per installation: environments with the same versions keep apart.
    installation = hashlib.sha1(f"{cmake_prefix_path}:{torch.utils.cmake_prefix_path}".encode()).hexdigest()[:12]
    build_dir = cache / f"torch-kernels-{__version__}-torch-{torch.__version__}-{installation}"
    path = build_package(
        _SOURCE, target="opgraph_torch_kernels", build_dir=build_dir, prefix_paths=[torch.utils.cmake_prefix_path]
    )
    library = ctypes.CDLL(str(path))
    library.opgraph_torch_register_cpu.restype = ctypes.c_char_p
    library.opgraph_torch_register_cpu.argtypes = [ctypes.c_char_p] * 3
    return library


def register_cpu(op: str, functional: str, out: str) -> None:
    """Registers the C++ CPU kernel of opgraph op `op` for its PyTorch
    overloads `functional` and `out` ("name" or "name.overload")."""
    error = _library().opgraph_torch_register_cpu(op.encode(), functional.encode(), out.encode())
    if error is not None:
        raise Error(f"{op}: registering its C++ kernels with PyTorch failed: {error.decode()}")
