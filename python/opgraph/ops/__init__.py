"""Calling registered ops from Python.

``call(name, *inputs, out=None, **attrs)`` runs any op in the registry: tensor
inputs are positional (NumPy arrays, PyTorch tensors, anything that speaks
DLPack or the buffer protocol, passed without copying; a list of them for a
``Tensor[]`` argument), attributes are keyword arguments, and the results come
back as NumPy arrays, or are written into ``out``. ``call_reference`` runs an
op's plain reference implementation, the oracle its fast kernels are tested
against.

On top of ``call`` sits one module per op family, each with ``forward`` and
``backward``: ``gemm``, ``conv2d``, ``pool2d``, ``softmax``, ``cross_entropy``,
``activation``. ``require(name)`` returns one by name. They share one argument
order: ``forward(inputs..., parameters..., attributes..., out=None)`` and
``backward(inputs..., parameters..., grad_output, forward results...,
attributes...)``, where a backward takes only the inputs, parameters and
results its gradient reads, and ``act=`` names a fused activation.

Most families are imported with the package: ``import opgraph`` imports
``opgraph.layers``, which builds on ``activation``, ``conv2d``,
``cross_entropy``, ``gemm`` and ``pool2d``. ``softmax``, which no layer uses,
is imported on first access (``opgraph.ops.softmax`` or ``require``).
"""

import importlib

from .._C import call, call_reference

FAMILIES = ("activation", "conv2d", "cross_entropy", "gemm", "pool2d", "softmax")


def _require_output(where, output, needed_by):
    """Raises an Error unless ``output``, the forward's result that a backward
    reads for ``needed_by``, was given."""
    if output is None:
        from .._C import Error

        raise Error(
            f"{where}: output: expected the forward's output, which the gradient of {needed_by} reads; got None"
        )


def require(name):
    """The op family module called ``name`` (``require("gemm")`` is ``opgraph.ops.gemm``)."""
    if name not in FAMILIES:
        from .._C import Error

        raise Error(f"opgraph.ops.require: unknown op family {name!r}; expected one of {', '.join(FAMILIES)}")
    return importlib.import_module(f"{__name__}.{name}")


__all__ = ["FAMILIES", "call", "call_reference", "require", *FAMILIES]


def __getattr__(name):
    # A family opgraph.layers did not import (softmax) loads on first access.
    if name in FAMILIES:
        return require(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
