"""Inverted dropout: in training, zeroes each element with probability
``rate`` and scales the rest by 1 / (1 - rate); the identity in inference."""

from .._arrays import namespace
from .._C import Error
from .base import Layer


class Dropout(Layer):
    def __init__(self, rate, name=None):
        super().__init__(name)
        if not 0.0 <= rate < 1.0:
            raise Error(f"{self.name}: rate: expected a value in [0, 1), got {rate}")
        self.rate = rate
        self._mask = None

    def call(self, x):
        if not self.training or self.rate == 0.0:
            self._mask = None
            return x
        # Drawn from the layer's NumPy stream on either device, so that a seed
        # gives the same masks on the CPU and the GPU.
        keep = namespace(x).asarray(self.rng.random(x.shape) >= self.rate)
        self._mask = keep.astype(x.dtype) / x.dtype.type(1.0 - self.rate)
        return x * self._mask

    def backward(self, grad):
        return grad if self._mask is None else grad * self._mask
