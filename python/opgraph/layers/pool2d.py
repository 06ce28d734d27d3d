"""Max and average pooling layers (NCHW)."""

from .._C import Error
from ..ops import pool2d
from .base import Layer


class _Pool2D(Layer):
    kind = None

    def __init__(self, pool_size=2, stride=None, padding=0, name=None):
        super().__init__(name)
        self.pool_size = pool_size
        self.stride = stride or pool_size
        self.padding = padding
        self._x = None

    def build(self, input_shape):
        if len(input_shape) != 4:
            raise Error(
                f"{self.name}: expected input of rank 4 (batch, channels, height, width), got shape "
                f"{tuple(input_shape)}"
            )
        super().build(input_shape)

    def call(self, x):
        self._x = self.saved(x)
        return pool2d.forward(x, self.kind, self.pool_size, self.stride, self.padding)

    def backward(self, grad):
        x = self.require_saved(self._x)
        return pool2d.backward(x, grad, self.kind, self.pool_size, self.stride, self.padding)


class MaxPool2D(_Pool2D):
    kind = "max"


class AvgPool2D(_Pool2D):
    kind = "avg"
