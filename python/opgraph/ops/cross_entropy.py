"""Softmax cross-entropy of (N, C) logits against int64 class indices, fused:
the forward keeps the probabilities its backward needs."""

from .._arrays import as_array, namespace
from . import call


def _scalar_like(value, like):
    """``value`` as a 0-d array of ``like``'s kind, dtype and device (NumPy, CuPy or PyTorch)."""
    if hasattr(like, "new_tensor"):  # a PyTorch tensor
        return like.new_tensor(value)
    like = as_array(like)
    return namespace(like).asarray(value, dtype=like.dtype)


def forward(logits, target, ignore_index=-100, label_smoothing=0.0):
    """``(loss, probabilities)``: the mean loss over rows whose target is not
    ``ignore_index``, and softmax(logits)."""
    return call(
        "opgraph::softmax_cross_entropy", logits, target, ignore_index=ignore_index, label_smoothing=label_smoothing
    )


def backward(target, grad_output, probabilities, ignore_index=-100, label_smoothing=0.0):
    """Gradient with respect to the logits of ``forward(logits, target, ...)``
    with the same attributes, given the gradient of its loss (a scalar) and the
    probabilities it returned (the logits are not read)."""
    grad = _scalar_like(grad_output, probabilities)
    return call(
        "opgraph::softmax_cross_entropy_backward",
        grad,
        probabilities,
        target,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )
