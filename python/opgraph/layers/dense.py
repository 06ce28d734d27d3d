"""Fully connected layer on the fused gemm: ``act(x @ W + b)``."""

import numpy as np

from .._C import Error
from ..ops import gemm
from . import initializers
from .base import Layer


class Dense(Layer):
    weight_names = ("W", "b")

    def __init__(self, units, activation="relu", initializer="he", name=None, dtype=np.float32):
        super().__init__(name, dtype)
        if units < 1:
            raise Error(f"{self.name}: units: expected at least 1, got {units}")
        self.units = units
        self.activation = activation
        self.initializer = initializers.get(initializer)
        self._x = self._y = None

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise Error(
                f"{self.name}: expected input of rank 2 (batch, features), got shape {tuple(input_shape)}; "
                "put a Flatten before it"
            )
        super().build(input_shape)
        features = input_shape[1]
        self.W = self.weight(self.initializer((features, self.units), features, self.units, self.rng, self.dtype))
        self.b = self.xp.zeros(self.units, dtype=self.dtype)
        self.dW = self.xp.zeros_like(self.W)
        self.db = self.xp.zeros_like(self.b)

    def call(self, x):
        self.require_built()
        y = gemm.forward(x, self.W, self.b, act=self.activation)
        self._x, self._y = self.saved(x), self.saved(y)
        return y

    def backward(self, grad):
        x = self.require_saved(self._x)
        dx, self.dW, self.db = gemm.backward(x, self.W, self.b, grad, self._y, act=self.activation)
        return dx
