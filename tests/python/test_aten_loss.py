"""aten nll_loss, nll_loss_forward / nll_loss_backward and cross_entropy_loss against PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import check_op

import opgraph
from opgraph.ops import call, call_reference

DTYPES = [np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed"]
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
IGNORE = -100
# self shapes: (C), (N, C) and, for nll_loss and cross_entropy_loss, (N, C, d1, ...).
SHAPES_2D = [(0, 5), (1, 1), (7,), (3, 1001), (70001, 3), (5, 4)]
SHAPES_ND = SHAPES_2D + [(2, 3, 5, 7), (2, 4, 9)]


def make_self(shape, dtype, layout, log_probs):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape[::-1]).T if layout == "transposed" else rng.standard_normal(shape)
    if log_probs:
        values = torch.log_softmax(torch.from_numpy(np.ascontiguousarray(values)), dim=0 if len(shape) == 1 else 1)
        values = values.numpy() if layout == "contiguous" else np.ascontiguousarray(values.numpy().T).T
    return values.astype(dtype)


def make_target(shape, with_ignored, seed=1):
    """Class indices for self of `shape`; every third one ignored if asked."""
    classes = shape[0] if len(shape) == 1 else shape[1]
    target_shape = () if len(shape) == 1 else (shape[0], *shape[2:])
    target = np.random.default_rng(seed).integers(0, classes, size=target_shape, dtype=np.int64)
    if with_ignored and target.size > 1:
        target.reshape(-1)[::3] = IGNORE
    return np.asarray(target)


def make_weight(shape, dtype, weighted):
    classes = shape[0] if len(shape) == 1 else shape[1]
    return (np.random.default_rng(2).random(classes) + 0.5).astype(dtype) if weighted else None


def loss_inputs(shape, dtype, layout, weighted, with_ignored, log_probs=True):
    return (
        make_self(shape, dtype, layout, log_probs),
        make_target(shape, with_ignored),
        make_weight(shape, dtype, weighted),
    )


CASE_PARAMS = [
    pytest.mark.parametrize("with_ignored", [False, True]),
    pytest.mark.parametrize("weighted", [False, True]),
    pytest.mark.parametrize("reduction", REDUCTIONS),
    pytest.mark.parametrize("layout", LAYOUTS),
    pytest.mark.parametrize("dtype", DTYPES),
]


def cases(shapes):
    def decorate(test):
        for mark in CASE_PARAMS:
            test = mark(test)
        return pytest.mark.parametrize("shape", shapes)(test)

    return decorate


@cases(SHAPES_ND)
def test_nll_loss(shape, dtype, layout, reduction, weighted, with_ignored):
    inputs = loss_inputs(shape, dtype, layout, weighted, with_ignored)
    check_op(
        "aten::nll_loss",
        lambda x, t, w: F.nll_loss(x, t, w, ignore_index=IGNORE, reduction=REDUCTIONS[reduction]),
        *inputs,
        reduction=reduction,
        ignore_index=IGNORE,
    )


@cases(SHAPES_2D)
def test_nll_loss_forward(shape, dtype, layout, reduction, weighted, with_ignored):
    inputs = loss_inputs(shape, dtype, layout, weighted, with_ignored)
    check_op(
        "aten::nll_loss_forward",
        lambda x, t, w: torch.ops.aten.nll_loss_forward(x, t, w, reduction, IGNORE),
        *inputs,
        reduction=reduction,
        ignore_index=IGNORE,
    )


@cases(SHAPES_ND)
def test_cross_entropy_loss(shape, dtype, layout, reduction, weighted, with_ignored):
    inputs = loss_inputs(shape, dtype, layout, weighted, with_ignored, log_probs=False)
    check_op(
        "aten::cross_entropy_loss",
        lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=IGNORE, reduction=REDUCTIONS[reduction]),
        *inputs,
        reduction=reduction,
        ignore_index=IGNORE,
    )


def backward_inputs(shape, dtype, layout, reduction, weighted, with_ignored):
    x, target, weight = loss_inputs(shape, dtype, layout, weighted, with_ignored)
    as_t = lambda v: None if v is None else torch.from_numpy(v)  # noqa: E731
    _, total_weight = torch.ops.aten.nll_loss_forward(as_t(x), as_t(target), as_t(weight), reduction, IGNORE)
    grad_shape = target.shape if reduction == 0 else ()
    grad_output = np.asarray(np.random.default_rng(3).standard_normal(grad_shape).astype(dtype))
    return grad_output, x, target, weight, total_weight.numpy()


@cases(SHAPES_2D)
def test_nll_loss_backward(shape, dtype, layout, reduction, weighted, with_ignored):
    inputs = backward_inputs(shape, dtype, layout, reduction, weighted, with_ignored)
    check_op(
        "aten::nll_loss_backward",
        lambda g, x, t, w, tw: torch.ops.aten.nll_loss_backward(g, x, t, w, reduction, IGNORE, tw),
        *inputs,
        reduction=reduction,
        ignore_index=IGNORE,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 4), (7,), (3, 1001)])
def test_nll_loss_backward_matches_autograd(shape, dtype, reduction):
    grad_output, x, target, weight, total_weight = backward_inputs(shape, dtype, "contiguous", reduction, True, True)
    x_t = torch.from_numpy(x).requires_grad_()
    loss = F.nll_loss(
        x_t, torch.from_numpy(target), torch.from_numpy(weight), ignore_index=IGNORE, reduction=REDUCTIONS[reduction]
    )
    loss.backward(torch.from_numpy(grad_output))
    got = call(
        "aten::nll_loss_backward",
        grad_output,
        x,
        target,
        weight,
        total_weight,
        reduction=reduction,
        ignore_index=IGNORE,
    )
    np.testing.assert_allclose(got, x_t.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(4, 3), (5,)])
def test_nll_loss_backward_matches_finite_differences(shape, reduction):
    grad_output, x, target, weight, total_weight = backward_inputs(
        shape, np.float64, "contiguous", reduction, True, True
    )

    def forward(v):
        return call(
            "aten::nll_loss_forward",
            v,
            target,
            weight,
            reduction=reduction,  # noqa: E731
            ignore_index=IGNORE,
        )[0]

    objective = lambda v: float(np.sum(grad_output * forward(v)))  # noqa: E731
    step = 1e-6
    numeric = np.zeros_like(x)
    for index in np.ndindex(*x.shape):
        bump = np.zeros_like(x)
        bump[index] = step
        numeric[index] = (objective(x + bump) - objective(x - bump)) / (2 * step)
    got = call(
        "aten::nll_loss_backward",
        grad_output,
        x,
        target,
        weight,
        total_weight,
        reduction=reduction,
        ignore_index=IGNORE,
    )
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("op", ["aten::nll_loss", "aten::nll_loss_forward", "aten::cross_entropy_loss"])
def test_target_out_of_range(op):
    x = np.zeros((4, 3), np.float32)
    attrs = dict(reduction=1, ignore_index=IGNORE)
    for bad in (3, -1):
        target = np.array([0, 2, bad, 1], np.int64)
        with pytest.raises(
            opgraph.Error,
            match=rf"{op}: target: class index {bad} \(at flat position 2\) is out of "
            r"range for 3 classes",
        ):
            call(op, x, target, None, **attrs)
        with pytest.raises(opgraph.Error, match=rf"class index {bad} "):
            call_reference(op, x, target, None, **attrs)


def test_nll_loss_backward_target_out_of_range():
    x = np.zeros((2, 3), np.float64)
    with pytest.raises(opgraph.Error, match=r"aten::nll_loss_backward: target: class index 7 \(at flat position 1\)"):
        call(
            "aten::nll_loss_backward",
            np.array(1.0),
            x,
            np.array([0, 7]),
            None,
            np.array(2.0),
            reduction=1,
            ignore_index=IGNORE,
        )


def test_errors():
    x = np.zeros((4, 3), np.float32)
    target = np.array([0, 1, 2, 0], np.int64)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::cross_entropy_loss: label_smoothing: expected 0.0 \(label "
        r"smoothing is not supported\), got 0.1",
    ):
        call("aten::cross_entropy_loss", x, target, label_smoothing=0.1)
    with pytest.raises(
        opgraph.Error,
        match=r"target: expected int64 class indices of shape \[4\] for self "
        r"float32\[4, 3\], got float32\[4, 3\]",
    ):
        call("aten::cross_entropy_loss", x, np.full((4, 3), 1 / 3, np.float32))
    with pytest.raises(opgraph.Error, match=r"target: expected int64 class indices of shape \[4\].*got int32\[4\]"):
        call("aten::nll_loss", x, target.astype(np.int32))
    with pytest.raises(opgraph.Error, match=r"reduction: expected 0 \(none\), 1 \(mean\) or 2 \(sum\), got 3"):
        call("aten::nll_loss", x, target, reduction=3)
    with pytest.raises(opgraph.Error, match=r"weight: expected None or float32\[3\], got float32\[4\]"):
        call("aten::nll_loss", x, target, np.ones(4, np.float32))
    with pytest.raises(opgraph.Error, match=r"aten::nll_loss_forward: self: expected rank 1 to 2"):
        call(
            "aten::nll_loss_forward",
            np.zeros((2, 3, 4), np.float32),
            np.zeros((2, 4), np.int64),
            None,
            reduction=1,
            ignore_index=IGNORE,
        )
    with pytest.raises(
        opgraph.Error,
        match=r"aten::nll_loss_backward: grad_output: expected float32\[\] like the "
        r"loss, got float32\[4\]",
    ):
        call(
            "aten::nll_loss_backward",
            np.ones(4, np.float32),
            x,
            target,
            None,
            np.array(4.0, np.float32),
            reduction=1,
            ignore_index=IGNORE,
        )
