"""Elementwise activation layers."""

from ..ops import activation
from .base import Layer


class Activation(Layer):
    """``act`` is one of opgraph.ops.activation's names (relu, gelu, sigmoid, tanh, silu)."""

    def __init__(self, act, name=None):
        super().__init__(name or act)
        activation._ops(act)  # rejects an unknown name now rather than at the first call
        self.act = act
        self._x = self._y = None

    def call(self, x):
        y = activation.forward(x, self.act)
        self._x, self._y = self.saved(x), self.saved(y)
        return y

    def backward(self, grad):
        return activation.backward(self.require_saved(self._x), grad, self._y, self.act)


class ReLU(Activation):
    def __init__(self, name=None):
        super().__init__("relu", name)
