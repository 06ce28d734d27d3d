"""The layer base class."""

import numpy as np

from .._arrays import as_array, device_of, namespace
from .._C import Error


class Layer:
    """A layer: ``build(input_shape)`` creates the weights named in
    ``weight_names``, ``call(x)`` runs forward (calling the layer builds it
    first from ``x.shape``), ``backward(grad)`` returns the input gradient and
    stores the parameter gradients as ``d<name>``.

    ``training`` selects training behaviour (dropout, keeping what backward
    needs); ``Sequential`` sets it.

    A layer computes where its first input is: on NumPy arrays on the CPU,
    on CuPy arrays (or PyTorch CUDA tensors, taken as CuPy) on the GPU.
    ``xp`` is that array namespace; ``build`` makes the weights in it.
    """

    weight_names = ()

    def __init__(self, name=None, dtype=np.float32):
        self.name = name or type(self).__name__.lower()
        self.dtype = np.dtype(dtype)
        self.built = False
        self.training = True
        self.input_shape = None
        self.rng = np.random.default_rng()
        self.xp = np

    def build(self, input_shape):
        self.input_shape = tuple(input_shape)
        self.built = True

    def call(self, x):
        raise NotImplementedError(f"{type(self).__name__}.call")

    def backward(self, grad):
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __call__(self, x):
        x = as_array(x)
        if not self.built:
            self.xp = namespace(x)
            self.build(x.shape)
            self.input_shape = tuple(x.shape)  # also where a subclass's build() does not call Layer.build
        elif x.ndim != len(self.input_shape) or x.shape[1:] != self.input_shape[1:]:
            expected = ", ".join(["N", *map(str, self.input_shape[1:])])
            raise Error(f"{self.name}: built for input shape ({expected}), got {tuple(x.shape)}")
        self.require_device(x)
        return self.call(x)

    def require_device(self, x):
        """Refuses input on another device than the layer's weights."""
        weights = self.parameters()
        if weights:
            here, there = device_of(next(iter(weights.values()))), device_of(x)
            if here != there:
                raise Error(f"{self.name}: the weights are on {here} but the input is on {there}")

    def weight(self, values):
        """``values`` (a NumPy array from an initializer) as a weight in the layer's namespace."""
        return self.xp.asarray(values, dtype=self.dtype)

    def parameters(self):
        """The weights by name (the arrays themselves, updated in place by optimizers)."""
        return {name: getattr(self, name) for name in self.weight_names}

    def gradients(self):
        """The parameter gradients of the last backward, by the same names as parameters()."""
        return {name: getattr(self, "d" + name) for name in self.weight_names}

    def require_built(self):
        if not self.built:
            raise Error(f"{self.name}: call() before build(); call the layer on a batch or build(input_shape) first")

    def saved(self, value):
        """Keeps ``value`` for backward in training mode only."""
        return value if self.training else None

    def require_saved(self, value):
        if value is None:
            raise Error(f"{self.name}: backward() needs a forward call in training mode first")
        return value

    def __repr__(self):
        return f"{type(self).__name__}(name={self.name!r})"
