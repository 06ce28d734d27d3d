"""High-level layers over opgraph.ops, for training small networks.

A layer builds its weights from the first input it sees (``build``), runs
forward with ``call`` (or by calling the layer) and, after a forward in
training mode, backward with ``backward(grad)``, which returns the gradient
of its input and keeps those of its parameters (``gradients()``).
``Sequential`` stacks layers and trains them with an optimizer.
"""

from . import initializers
from .activation import Activation, ReLU
from .base import Layer
from .conv2d import Conv2D
from .dense import Dense
from .dropout import Dropout
from .flatten import Flatten
from .optimizers import SGD, Adam, Optimizer
from .pool2d import AvgPool2D, MaxPool2D
from .sequential import History, Sequential
from .softmax_ce import SoftmaxCrossEntropy

__all__ = [
    "SGD",
    "Activation",
    "Adam",
    "AvgPool2D",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "History",
    "Layer",
    "MaxPool2D",
    "Optimizer",
    "ReLU",
    "Sequential",
    "SoftmaxCrossEntropy",
    "initializers",
]
