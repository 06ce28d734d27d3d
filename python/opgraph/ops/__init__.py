"""Calling registered ops from Python.

``call(name, *inputs, out=None, **attrs)`` runs any op in the registry: tensor
inputs are positional (NumPy arrays, PyTorch tensors, anything that speaks
DLPack or the buffer protocol, passed without copying; a list of them for a
``Tensor[]`` argument), attributes are keyword arguments, and the results come
back as NumPy arrays, or are written into ``out``. ``call_reference`` runs an
op's plain reference implementation, the oracle its fast kernels are tested
against.
"""

from .._C import call, call_reference

__all__ = ["call", "call_reference"]
