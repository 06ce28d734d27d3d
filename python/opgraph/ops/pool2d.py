"""2-D max and average pooling over NCHW batches.

``kind`` is ``"max"`` or ``"avg"``; ``stride`` defaults to the kernel size,
as in PyTorch.
"""

from .._C import Error
from . import call

_KINDS = ("max", "avg")


def _check(kind):
    if kind not in _KINDS:
        raise Error(f"opgraph.ops.pool2d: kind: expected 'max' or 'avg', got {kind!r}")


def forward(X, kind="max", kernel_size=2, stride=None, padding=0, out=None):
    _check(kind)
    return call(
        f"aten::{kind}_pool2d", X, kernel_size=kernel_size, stride=stride or kernel_size, padding=padding, out=out
    )


def backward(X, grad_output, kind="max", kernel_size=2, stride=None, padding=0):
    """Gradient of ``forward`` with respect to ``X``."""
    _check(kind)
    stride = stride or kernel_size
    if kind == "max":
        return call(
            "opgraph::max_pool2d_backward", grad_output, X, kernel_size=kernel_size, stride=stride, padding=padding
        )
    return call(
        "aten::avg_pool2d_backward",
        grad_output,
        X,
        kernel_size=kernel_size,
        stride=stride,
        padding=padding,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    )
