"""2-D convolution over NCHW batches with fused bias and activation.

``W`` is (out_channels, in_channels / groups, kh, kw). ``stride``,
``padding`` and ``dilation`` are an int or a pair.
"""

from . import call


def forward(X, W, b=None, stride=1, padding=0, dilation=1, groups=1, act=None, out=None):
    """``act(conv2d(X, W) + b)``, written into ``out`` when given."""
    return call("opgraph::conv2d", X, W, b, stride=stride, padding=padding, dilation=dilation, groups=groups,
                activation=act or "none", out=out)


def backward(X, W, grad_output, output=None, b=None, stride=1, padding=0, dilation=1, groups=1, act=None):
    """Gradients ``(dX, dW, db)`` of ``forward``; ``output`` (the forward's
    result) is needed only with an activation."""
    if not act or act == "none":
        return call("opgraph::conv2d_backward", grad_output, X, W, stride=stride, padding=padding,
                    dilation=dilation, groups=groups)
    return call("opgraph::conv2d_act_backward", grad_output, X, W, b, output, stride=stride, padding=padding,
                dilation=dilation, groups=groups, activation=act)
