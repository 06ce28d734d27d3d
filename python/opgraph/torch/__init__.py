"""opgraph ops as PyTorch custom ops.

``CustomOpLibrary(path)`` registers every op of an op package with
``torch.library`` from the op's own schema: a kernel that hands PyTorch's
tensors to opgraph without a copy, a fake kernel from the C++ shape function
(torch.compile, torch.export), autograd from the op's backward op, and a
destination-passing ``out`` variant. The ops are then ``torch.ops.<ns>.<op>``
in eager code, TorchScript, torch.compile and torch.export alike.
"""

from .library import BoundOp, CustomOp, CustomOpLibrary
from .registration import register_op

__all__ = ["BoundOp", "CustomOp", "CustomOpLibrary", "register_op"]
