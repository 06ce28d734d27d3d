"""Softmax and log-softmax along one dimension."""

from . import call


def forward(X, dim=-1, log=False, out=None):
    return call("aten::log_softmax.int" if log else "aten::softmax.int", X, dim=dim, out=out)


def backward(grad_output, output, dim=-1, log=False):
    """Gradient with respect to the input of ``forward(X, dim, log)``, given
    the gradient of its output and the output itself (the input is not read)."""
    op = "aten::_log_softmax_backward_data" if log else "aten::_softmax_backward_data"
    return call(op, grad_output, output, dim=dim, input_dtype=output.dtype)
