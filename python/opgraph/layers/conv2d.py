"""2-D convolution layer (NCHW) with fused bias and activation."""

import numpy as np

from .._C import Error
from ..ops import conv2d
from . import initializers
from .base import Layer


def _pair(value, what):
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2:
        raise Error(f"Conv2D: {what}: expected an int or a pair, got {value!r}")
    return pair


class Conv2D(Layer):
    """``padding`` is an int, a pair, ``"valid"`` (0) or ``"same"`` (output
    as large as the input; stride 1 and odd kernels only)."""

    weight_names = ("W", "b")

    def __init__(
        self,
        filters,
        kernel_size,
        stride=1,
        padding=0,
        activation=None,
        initializer="he",
        dilation=1,
        groups=1,
        name=None,
        dtype=np.float32,
    ):
        super().__init__(name, dtype)
        self.filters = filters
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        self.groups = groups
        self.padding = self._padding(padding)
        self.activation = activation
        self.initializer = initializers.get(initializer)
        self._x = self._y = None

    def _padding(self, padding):
        if padding == "valid":
            return (0, 0)
        if padding == "same":
            if self.stride != (1, 1) or any(k % 2 == 0 for k in self.kernel_size):
                raise Error(
                    f"{self.name}: padding='same' needs stride 1 and odd kernel sizes, got stride "
                    f"{self.stride} and kernel {self.kernel_size}"
                )
            return tuple(d * (k - 1) // 2 for k, d in zip(self.kernel_size, self.dilation))
        return _pair(padding, "padding")

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise Error(
                f"{self.name}: expected input of rank 4 (batch, channels, height, width), got shape "
                f"{tuple(input_shape)}"
            )
        channels = input_shape[1]
        if channels % self.groups or self.filters % self.groups:
            raise Error(
                f"{self.name}: groups={self.groups} must divide the input channels ({channels}) and "
                f"filters ({self.filters})"
            )
        super().build(input_shape)
        kh, kw = self.kernel_size
        shape = (self.filters, channels // self.groups, kh, kw)
        fan_in = shape[1] * kh * kw
        self.W = self.weight(
            self.initializer(shape, fan_in, self.filters // self.groups * kh * kw, self.rng, self.dtype)
        )
        self.b = self.xp.zeros(self.filters, dtype=self.dtype)
        self.dW = self.xp.zeros_like(self.W)
        self.db = self.xp.zeros_like(self.b)

    def _geometry(self):
        return dict(stride=self.stride, padding=self.padding, dilation=self.dilation, groups=self.groups)

    def call(self, x):
        self.require_built()
        y = conv2d.forward(x, self.W, self.b, act=self.activation, **self._geometry())
        self._x, self._y = self.saved(x), self.saved(y)
        return y

    def backward(self, grad):
        x = self.require_saved(self._x)
        dx, self.dW, self.db = conv2d.backward(
            x, self.W, self.b, grad, self._y, act=self.activation, **self._geometry()
        )
        return dx
