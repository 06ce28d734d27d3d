"""2-D convolution over NCHW batches with fused bias and activation.

``W`` is (out_channels, in_channels / groups, kh, kw). ``stride``,
``padding`` and ``dilation`` are an int or a pair. They and ``groups`` and
``act`` are keywords, or one ``Conv2DAttrs`` passed after the bias
(``forward(X, W, b, attrs)``, the call layers written against bindings make).
"""

from dataclasses import dataclass

from . import call


@dataclass
class Conv2DAttrs:
    """A convolution's geometry and fused activation, as one object."""

    stride: int | tuple = 1
    padding: int | tuple = 0
    dilation: int | tuple = 1
    groups: int = 1
    act: str | None = None


def forward(X, W, b=None, attrs=None, *, stride=1, padding=0, dilation=1, groups=1, act=None, out=None):
    """``act(conv2d(X, W) + b)``, written into ``out`` when given; ``attrs``
    (a Conv2DAttrs) replaces the keywords stride to act."""
    if attrs is not None:
        stride, padding, dilation, groups, act = attrs.stride, attrs.padding, attrs.dilation, attrs.groups, attrs.act
    return call(
        "opgraph::conv2d",
        X,
        W,
        b,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
        activation=act or "none",
        out=out,
    )


def backward(X, W, grad_output, output=None, b=None, stride=1, padding=0, dilation=1, groups=1, act=None):
    """Gradients ``(dX, dW, db)`` of ``forward``; ``output`` (the forward's
    result) is needed only with an activation."""
    if not act or act == "none":
        return call(
            "opgraph::conv2d_backward",
            grad_output,
            X,
            W,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
        )
    return call(
        "opgraph::conv2d_act_backward",
        grad_output,
        X,
        W,
        b,
        output,
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
        activation=act,
    )
