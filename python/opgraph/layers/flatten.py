"""Flattens every dimension after the batch: (N, ...) -> (N, prod(...))."""

from .base import Layer


class Flatten(Layer):
    def call(self, x):
        return x.reshape(x.shape[0], -1)

    def backward(self, grad):
        return grad.reshape((grad.shape[0], *self.input_shape[1:]))
