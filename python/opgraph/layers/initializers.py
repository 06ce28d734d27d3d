"""Weight initializers: ``he`` (normal, std sqrt(2 / fan_in), for ReLU
networks), ``xavier`` (uniform, limit sqrt(6 / (fan_in + fan_out))) and
``zeros``. Each is ``fn(shape, fan_in, fan_out, rng, dtype)``."""

import math

import numpy as np

from .._C import Error


def he(shape, fan_in, fan_out, rng, dtype=np.float32):
    return rng.normal(0.0, math.sqrt(2.0 / fan_in), size=shape).astype(dtype)


def xavier(shape, fan_in, fan_out, rng, dtype=np.float32):
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(dtype)


def zeros(shape, fan_in, fan_out, rng, dtype=np.float32):
    return np.zeros(shape, dtype=dtype)


_BY_NAME = {"he": he, "xavier": xavier, "zeros": zeros}


def get(initializer):
    """The initializer called ``initializer``, or ``initializer`` itself if it is callable."""
    if callable(initializer):
        return initializer
    if initializer not in _BY_NAME:
        raise Error(f"unknown initializer {initializer!r}; expected one of {', '.join(_BY_NAME)} or a callable")
    return _BY_NAME[initializer]
