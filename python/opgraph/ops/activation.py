"""Elementwise activations: ``relu``, ``gelu``, ``sigmoid``, ``tanh``, ``silu``."""

from .._C import Error
from . import _require_output, call

# name -> (forward op, backward op, whether the backward takes the output rather than the input)
_OPS = {
    "relu": ("aten::relu", "aten::threshold_backward", False),
    "gelu": ("aten::gelu", "aten::gelu_backward", False),
    "sigmoid": ("aten::sigmoid", "aten::sigmoid_backward", True),
    "tanh": ("aten::tanh", "aten::tanh_backward", True),
    "silu": ("aten::silu", "aten::silu_backward", False),
}


def _ops(name):
    if name not in _OPS:
        raise Error(f"opgraph.ops.activation: unknown activation {name!r}; expected one of {', '.join(_OPS)}")
    return _OPS[name]


def forward(X, act="relu", out=None):
    return call(_ops(act)[0], X, out=out)


def backward(X, grad_output, output=None, act="relu"):
    """Gradient with respect to ``X`` of ``forward(X, act)``, given the
    gradient of its output; ``output`` (the forward's result) is needed for
    the activations whose gradient reads it (sigmoid, tanh)."""
    _, op, from_output = _ops(act)
    if from_output:
        _require_output("opgraph.ops.activation.backward", output, f"act={act!r}")
        return call(op, grad_output, output)
    if act == "relu":
        return call(op, grad_output, X, threshold=0)
    return call(op, grad_output, X)
