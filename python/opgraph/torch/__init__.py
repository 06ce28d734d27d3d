"""opgraph ops as PyTorch custom ops.

``CustomOpLibrary(path)`` registers every op of an op package with
``torch.library`` from the op's own schema: a kernel that hands PyTorch's
tensors to opgraph without a copy, a fake kernel from the C++ shape function
(torch.compile, torch.export), autograd from the op's backward op, and a
destination-passing ``out`` variant. The ops are then ``torch.ops.<ns>.<op>``
in eager code, TorchScript, torch.compile and torch.export alike.

``load_library(path)`` is the counterpart of ``torch.ops.load_library``: it
loads and registers a package, and returns its CustomOpLibrary.
``opgraph.torch.cpp_extension`` builds packages from sources and registers
them the same way.
"""

from .library import BoundOp, CustomOp, CustomOpLibrary
from .registration import register_torch_op


def load_library(path) -> CustomOpLibrary:
    """Loads the op package at ``path`` (any location opgraph.load_package
    takes) and registers its ops as ``torch.ops.<ns>.<op>``, as
    ``torch.ops.load_library`` does for a TORCH_LIBRARY extension."""
    return CustomOpLibrary(path)


__all__ = ["BoundOp", "CustomOp", "CustomOpLibrary", "load_library", "register_torch_op"]
