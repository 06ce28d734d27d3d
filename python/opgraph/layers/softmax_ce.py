"""Softmax followed by cross-entropy, as one loss layer on the fused kernel."""

import numpy as np

from .._arrays import as_array
from .._C import Error
from ..ops import cross_entropy


class SoftmaxCrossEntropy:
    """``loss = layer(logits, target)``: the mean cross-entropy of (N, C)
    logits against integer class indices; ``backward()`` returns the logits'
    gradient."""

    def __init__(self, ignore_index=-100, label_smoothing=0.0, name="softmax_cross_entropy"):
        self.name = name
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self._probabilities = self._target = None

    def __call__(self, logits, target):
        target = as_array(target)
        if target.dtype.kind not in "iu":
            raise Error(f"{self.name}: target: expected integer class indices, got dtype {target.dtype}")
        self._target = target.astype(np.int64, copy=False)
        loss, self._probabilities = cross_entropy.forward(
            as_array(logits), self._target, self.ignore_index, self.label_smoothing
        )
        return float(loss)

    @property
    def probabilities(self):
        return self._probabilities

    def backward(self, grad=1.0):
        if self._probabilities is None:
            raise Error(f"{self.name}: backward() before a forward call")
        return cross_entropy.backward(self._target, grad, self._probabilities, self.ignore_index, self.label_smoothing)
