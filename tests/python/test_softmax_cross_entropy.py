"""opgraph::softmax_cross_entropy and its backward against the reference,
PyTorch's cross_entropy / softmax and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import check_op

import opgraph
from opgraph.ops import call, call_reference

DTYPES = [np.float32, np.float64]
IGNORE = -100
# (N, C): one row, one class, primes, C=1001, no rows, more rows than a thread's share.
SHAPES = [(1, 1), (1, 7), (5, 4), (3, 1001), (0, 5), (70001, 3)]
SMOOTHING = [0.0, 0.1, 1.0]
# The loss sums N row losses in double; torch sums them in float32.
FLOAT32_LOSS = dict(rtol=2e-5, atol=1e-5)


def make_logits(shape, dtype, layout="contiguous", scale=3.0):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape[::-1]).T if layout == "transposed" else rng.standard_normal(shape)
    return (scale * values).astype(dtype)


def make_target(shape, ignored):
    """Class indices; every third row ignored, all of them, or none."""
    target = np.random.default_rng(1).integers(0, shape[1], size=shape[0], dtype=np.int64)
    if ignored == "some":
        target[::3] = IGNORE
    elif ignored == "all":
        target[:] = IGNORE
    return target


def torch_forward(label_smoothing):
    def forward(logits, target):
        loss = F.cross_entropy(logits, target, ignore_index=IGNORE, label_smoothing=label_smoothing)
        return loss, torch.softmax(logits, dim=1)

    return forward


def tolerance(dtype):
    return FLOAT32_LOSS if dtype == np.float32 else None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_smoothing", SMOOTHING)
@pytest.mark.parametrize("ignored", ["none", "some", "all"])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward(shape, ignored, label_smoothing, dtype):
    logits, target = make_logits(shape, dtype), make_target(shape, ignored)
    check_op(
        "opgraph::softmax_cross_entropy",
        torch_forward(label_smoothing),
        logits,
        target,
        ignore_index=IGNORE,
        label_smoothing=label_smoothing,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_of_transposed_logits(dtype):
    logits, target = make_logits((6, 11), dtype, "transposed"), make_target((6, 11), "some")
    check_op(
        "opgraph::softmax_cross_entropy",
        torch_forward(0.1),
        logits,
        target,
        ignore_index=IGNORE,
        label_smoothing=0.1,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_forward_of_extreme_logits(dtype):
    """Probabilities that underflow to 0 still give the right (finite) loss."""
    logits = np.array([[100.0, -100.0, 0.0], [-100.0, -100.0, 100.0], [1e4, -1e4, 0.0]], dtype)
    target = np.array([1, 0, 1])
    loss, _ = check_op(
        "opgraph::softmax_cross_entropy",
        torch_forward(0.2),
        logits,
        target,
        ignore_index=IGNORE,
        label_smoothing=0.2,
        tolerance=tolerance(dtype),
    )
    assert np.isfinite(loss)


def test_other_ignore_index():
    logits, target = make_logits((7, 4), np.float64), np.array([0, 3, 3, 1, 2, 3, 0])
    check_op(
        "opgraph::softmax_cross_entropy",
        lambda x, t: (F.cross_entropy(x, t, ignore_index=3), torch.softmax(x, 1)),
        logits,
        target,
        ignore_index=3,
    )


def backward_inputs(shape, dtype, ignored, label_smoothing):
    logits, target = make_logits(shape, dtype), make_target(shape, ignored)
    _, probabilities = call(
        "opgraph::softmax_cross_entropy", logits, target, ignore_index=IGNORE, label_smoothing=label_smoothing
    )
    return logits, np.asarray(dtype(1.7)), probabilities, target


def test_backward_is_registered():
    assert opgraph.op_backward("opgraph::softmax_cross_entropy") == "opgraph::softmax_cross_entropy_backward"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_smoothing", SMOOTHING)
@pytest.mark.parametrize("ignored", ["none", "some", "all"])
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_matches_autograd(shape, ignored, label_smoothing, dtype):
    logits, grad_loss, probabilities, target = backward_inputs(shape, dtype, ignored, label_smoothing)
    x = torch.from_numpy(logits).requires_grad_()
    loss = F.cross_entropy(x, torch.from_numpy(target), ignore_index=IGNORE, label_smoothing=label_smoothing)
    loss.backward(torch.from_numpy(grad_loss))
    check_op(
        "opgraph::softmax_cross_entropy_backward",
        lambda *_: x.grad,
        grad_loss,
        probabilities,
        target,
        ignore_index=IGNORE,
        label_smoothing=label_smoothing,
        tolerance=dict(rtol=1e-5, atol=1e-7) if dtype == np.float32 else None,
    )


@pytest.mark.parametrize("label_smoothing", SMOOTHING)
def test_backward_matches_finite_differences(label_smoothing):
    logits, grad_loss, probabilities, target = backward_inputs((4, 5), np.float64, "some", label_smoothing)

    def loss(x):
        return call(
            "opgraph::softmax_cross_entropy",
            x,
            target,
            ignore_index=IGNORE,  # noqa: E731
            label_smoothing=label_smoothing,
        )[0]

    step = 1e-6
    numeric = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape):
        bump = np.zeros_like(logits)
        bump[index] = step
        numeric[index] = grad_loss * (loss(logits + bump) - loss(logits - bump)) / (2 * step)
    got = call(
        "opgraph::softmax_cross_entropy_backward",
        grad_loss,
        probabilities,
        target,
        ignore_index=IGNORE,
        label_smoothing=label_smoothing,
    )
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("op", ["opgraph::softmax_cross_entropy", "opgraph::softmax_cross_entropy_backward"])
@pytest.mark.parametrize("bad", [4, -1, -100])
def test_target_out_of_range(op, bad):
    x = np.full((3, 4), 0.25, np.float32)
    inputs = [x] if op.endswith("entropy") else [np.array(1.0, np.float32), x]
    target = np.array([0, bad, 3])
    message = (
        rf"^{op}: target: row 1 has class index {bad}, out of range for 4 classes \(expected 0 to 3 or "
        r"ignore_index=7\)"
    )
    for run in (call, call_reference):
        with pytest.raises(opgraph.Error, match=message):
            run(op, *inputs, target, ignore_index=7)


@pytest.mark.parametrize(
    "inputs, attrs, message",
    [
        ([np.zeros(4, np.float32), np.zeros(4, np.int64)], {}, r"logits: expected rank 2 \(N, C\), got float32\[4\]"),
        (
            [np.zeros((4, 0), np.float32), np.zeros(4, np.int64)],
            {},
            r"logits: expected at least one class, got float32\[4, 0\]",
        ),
        ([np.zeros((4, 3), np.int64), np.zeros(4, np.int64)], {}, r"logits: expected float32 or float64, got int64"),
        (
            [np.zeros((4, 3), np.float32), np.zeros(4, np.int32)],
            {},
            r"target: expected int64\[4\] \(a class index per row of logits float32\[4, 3\]\), got int32\[4\]",
        ),
        ([np.zeros((4, 3), np.float32), np.zeros(5, np.int64)], {}, r"target: expected int64\[4\] .* got int64\[5\]"),
        (
            [np.zeros((4, 3), np.float32), np.zeros((4, 3), np.int64)],
            {},
            r"target: expected int64\[4\] .* got int64\[4, 3\]",
        ),
        (
            [np.zeros((4, 3), np.float32), np.zeros(4, np.int64)],
            dict(label_smoothing=1.5),
            r"label_smoothing: expected a value in \[0, 1\], got 1.5",
        ),
    ],
)
def test_bad_inputs(inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^opgraph::softmax_cross_entropy: {message}"):
        call("opgraph::softmax_cross_entropy", *inputs, **attrs)


def test_backward_bad_inputs():
    p, target = np.full((4, 3), 1 / 3, np.float32), np.zeros(4, np.int64)
    with pytest.raises(
        opgraph.Error,
        match=r"^opgraph::softmax_cross_entropy_backward: grad_loss: expected "
        r"float32\[\] like the loss, got float32\[4\]",
    ):
        call("opgraph::softmax_cross_entropy_backward", np.ones(4, np.float32), p, target)
    with pytest.raises(
        opgraph.Error,
        match=r"^opgraph::softmax_cross_entropy_backward: grad_loss: expected "
        r"float32\[\] like the loss, got float64\[\]",
    ):
        call("opgraph::softmax_cross_entropy_backward", np.array(1.0), p, target)
    with pytest.raises(
        opgraph.Error,
        match=r"^opgraph::softmax_cross_entropy_backward: probabilities: expected "
        r"rank 2 \(N, C\), got float32\[12\]",
    ):
        call("opgraph::softmax_cross_entropy_backward", np.array(1.0, np.float32), p.reshape(-1), target)
