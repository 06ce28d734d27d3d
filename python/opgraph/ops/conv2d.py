"""2-D convolution over NCHW batches with fused bias and activation.

``W`` is (out_channels, in_channels / groups, kh, kw). ``stride``,
``padding`` and ``dilation`` are an int or a pair. They and ``groups`` and
``act`` are keywords, or one ``Conv2DAttrs`` passed after the bias
(``forward(X, W, b, attrs)``, the call layers written against bindings make)
or after ``backward``'s output.
"""

from dataclasses import dataclass

from . import _require_output, call


@dataclass
class Conv2DAttrs:
    """A convolution's geometry and fused activation, as one object."""

    stride: int | tuple = 1
    padding: int | tuple = 0
    dilation: int | tuple = 1
    groups: int = 1
    act: str | None = None


def _attributes(attrs, stride, padding, dilation, groups, act):
    """The geometry as the ops' keyword arguments, and the activation; from
    ``attrs`` when given, else from the keywords."""
    if attrs is not None:
        stride, padding, dilation, groups, act = attrs.stride, attrs.padding, attrs.dilation, attrs.groups, attrs.act
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups), act


def forward(X, W, b=None, attrs=None, *, stride=1, padding=0, dilation=1, groups=1, act=None, out=None):
    """``act(conv2d(X, W) + b)``, written into ``out`` when given; ``attrs``
    (a Conv2DAttrs) replaces the keywords stride to act."""
    geometry, act = _attributes(attrs, stride, padding, dilation, groups, act)
    return call("opgraph::conv2d", X, W, b, **geometry, activation=act or "none", out=out)


def backward(X, W, b, grad_output, output=None, attrs=None, *, stride=1, padding=0, dilation=1, groups=1, act=None):
    """Gradients ``(dX, dW, db)`` of ``forward(X, W, b, ...)`` with the same
    attributes, given the gradient of its output; ``output`` (the forward's
    result) is needed only with an activation."""
    geometry, act = _attributes(attrs, stride, padding, dilation, groups, act)
    if not act or act == "none":
        return call("opgraph::conv2d_backward", grad_output, X, W, **geometry)
    _require_output("opgraph.ops.conv2d.backward", output, f"act={act!r}")
    return call("opgraph::conv2d_act_backward", grad_output, X, W, b, output, **geometry, activation=act)
