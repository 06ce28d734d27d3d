"""Matrix products against the reference and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64]
# Sums of up to ~1000 float32 products: oneDNN blocks them differently.
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-4)


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tolerance(dtype):
    return FLOAT32_SUMS if dtype == np.float32 else None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "m, k, n", [(1, 1, 1), (3, 5, 7), (1, 257, 129), (64, 31, 1), (0, 4, 3), (4, 0, 3), (17, 1001, 13)]
)
def test_mm(m, k, n, dtype):
    check_op("aten::mm", aten.mm, random((m, k), dtype), random((k, n), dtype, 1), tolerance=tolerance(dtype))


def test_mm_of_strided_views():
    transposed, every_other_column = random((12, 9), np.float32).T, random((12, 10), np.float32, 1)[:, ::2]
    check_op("aten::mm", aten.mm, transposed, every_other_column, tolerance=FLOAT32_SUMS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("b, m, k, n", [(1, 1, 1, 1), (3, 5, 7, 2), (0, 2, 2, 2), (5, 64, 33, 17)])
def test_bmm(b, m, k, n, dtype):
    check_op("aten::bmm", aten.bmm, random((b, m, k), dtype), random((b, k, n), dtype, 1), tolerance=tolerance(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("self_shape", [(7,), (1, 7), (5, 1), (5, 7), ()])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_addmm(self_shape, beta, alpha, dtype):
    check_op(
        "aten::addmm",
        lambda s, a, b: aten.addmm(s, a, b, beta=beta, alpha=alpha),
        random(self_shape, dtype, 2),
        random((5, 11), dtype),
        random((11, 7), dtype, 1),
        beta=beta,
        alpha=alpha,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape", [(11,), (4, 11), (2, 3, 11), (0, 11), (1, 11)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(input_shape, with_bias, dtype):
    weight, bias = random((6, 11), dtype, 1), random((6,), dtype, 2)
    inputs = [random(input_shape, dtype), weight] + ([bias] if with_bias else [])
    check_op("aten::linear", aten.linear, *inputs, tolerance=tolerance(dtype))


ACTIVATIONS = {
    "none": lambda z: z,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": torch.nn.functional.silu,
}


# opgraph::linear, what a Session fuses linear + activation into: one row
# (its own kernel), several (oneDNN's post-op), and float64 (the plain loop).
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape", [(1, 37), (5, 37), (2, 3, 37)])
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_linear_with_activation(input_shape, activation, dtype):
    inputs = random(input_shape, dtype), random((9, 37), dtype, 1), random((9,), dtype, 2)
    check_op(
        "opgraph::linear",
        lambda x, w, b: ACTIVATIONS[activation](aten.linear(x, w, b)),
        *inputs,
        activation=activation,
        tolerance=tolerance(dtype),
    )


# ... and the residual added before the activation and the gate multiplied after it.
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape", [(1, 37), (5, 37), (2, 3, 37)])
@pytest.mark.parametrize("activation", ["none", "silu"])
@pytest.mark.parametrize("with_residual", [False, True])
def test_linear_with_residual_and_multiplier(input_shape, activation, with_residual, dtype):
    out_shape = (*input_shape[:-1], 9)
    x, w, b = random(input_shape, dtype), random((9, 37), dtype, 1), random((9,), dtype, 2)
    residual = random(out_shape, dtype, 3) if with_residual else None
    multiplier = random(out_shape, dtype, 4)

    def expected(x, w, b, residual, multiplier):
        z = aten.linear(x, w, b) + (residual if residual is not None else 0)
        return ACTIVATIONS[activation](z) * multiplier

    check_op(
        "opgraph::linear",
        expected,
        x,
        w,
        b,
        residual,
        multiplier,
        activation=activation,
        tolerance=tolerance(dtype),
    )


def test_linear_with_an_unknown_activation_is_an_error():
    with pytest.raises(
        opgraph.Error, match=r'opgraph::linear: activation: expected one of "none", "relu", .*got "elu"'
    ):
        call("opgraph::linear", np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), activation="elu")


# One input row runs on dot products of 32 lanes, then 8, then one at a
# time, eight or four weight rows at once and then one: sizes that end in each part.
@pytest.mark.parametrize("k, n", [(787, 13), (32, 4), (40, 5), (7, 3), (45, 21)])
def test_linear_of_one_row(k, n):
    inputs = random((1, k), np.float32), random((n, k), np.float32, 1), random((n,), np.float32, 2)
    check_op("aten::linear", aten.linear, *inputs, tolerance=FLOAT32_SUMS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((5,), (5,)),
        ((3, 5), (5,)),
        ((5,), (5, 4)),
        ((3, 5), (5, 4)),
        ((2, 3, 5), (5, 4)),
        ((5,), (2, 5, 4)),
        ((2, 1, 3, 5), (4, 5, 2)),
        ((1, 3, 5), (6, 5, 2)),
        ((0, 3, 5), (5, 2)),
        # one weight for every batch: the batches' rows as one product
        ((1, 12, 1, 64), (64, 129)),
        ((3, 4, 2, 5), (1, 5, 7)),
    ],
)
def test_matmul(a_shape, b_shape, dtype):
    check_op("aten::matmul", aten.matmul, random(a_shape, dtype), random(b_shape, dtype, 1), tolerance=tolerance(dtype))


def test_large_linear_uses_threads():
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(2)
        x, w, b = random((64, 1024), np.float32), random((512, 1024), np.float32, 1), random((512,), np.float32, 2)
        check_op("aten::linear", aten.linear, x, w, b, tolerance=dict(rtol=1e-3, atol=1e-3))
    finally:
        opgraph.set_num_threads(previous)


@pytest.mark.parametrize(
    "op, inputs, message",
    [
        (
            "aten::mm",
            [np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)],
            r"cannot multiply float32\[2, 3\] by float32\[4, 5\]: inner dimensions 3 and 4 differ",
        ),
        (
            "aten::mm",
            [np.ones((2, 3), np.float32), np.ones((3, 5), np.float64)],
            r"mat2: expected float32 like self, got float64\[3, 5\]",
        ),
        ("aten::mm", [np.ones((2, 3), np.int32), np.ones((3, 5), np.int32)], r"self: expected float32 or float64"),
        ("aten::mm", [np.ones(3, np.float32), np.ones((3, 5), np.float32)], r"self: expected rank 2, got float32\[3\]"),
        ("aten::bmm", [np.ones((2, 2, 3), np.float32), np.ones((3, 3, 5), np.float32)], "mat2: expected batch 2"),
        (
            "aten::linear",
            [np.ones((2, 3), np.float32), np.ones((4, 3), np.float32), np.ones(5, np.float32)],
            r"bias: expected float32\[4\], got float32\[5\]",
        ),
        (
            "aten::matmul",
            [np.ones((2, 3, 4), np.float32), np.ones((5, 4, 2), np.float32)],
            r"batch dimensions \[2\] and \[5\] do not broadcast",
        ),
        (
            "aten::addmm",
            [np.ones((3, 3), np.float32), np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)],
            r"self: float32\[3, 3\] does not broadcast to the product's shape \[2, 4\]",
        ),
    ],
)
def test_bad_inputs(op, inputs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, *inputs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape", [(11,), (4, 11), (2, 3, 11), (0, 11), (1, 11)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_backward_matches_autograd(input_shape, with_bias, dtype):
    assert opgraph.op_backward("aten::linear") == "opgraph::linear_backward"
    x = torch.from_numpy(random(input_shape, dtype)).requires_grad_()
    w = torch.from_numpy(random((6, 11), dtype, 1)).requires_grad_()
    b = torch.from_numpy(random((6,), dtype, 2)).requires_grad_() if with_bias else None
    y = torch.nn.functional.linear(x, w, b)
    grad = torch.from_numpy(random(tuple(y.shape), dtype, 3))
    y.backward(grad)
    inputs = [grad, x.detach(), w.detach()] + ([b.detach()] if with_bias else [])
    fast = call("opgraph::linear_backward", *inputs)
    reference = opgraph.ops.call_reference("opgraph::linear_backward", *inputs)
    tol = tolerance(dtype) or dict(rtol=1e-12, atol=1e-12)
    expected = [x.grad, w.grad, b.grad if with_bias else torch.zeros(0, dtype=x.dtype)]
    for got, ref, want in zip(fast, reference, expected):
        np.testing.assert_allclose(ref, want.numpy(), **tol)
        np.testing.assert_allclose(got, ref, **tol)


def test_linear_backward_matches_finite_differences():
    x, w, b = random((3, 5), np.float64), random((4, 5), np.float64, 1), random((4,), np.float64, 2)
    grad = random((3, 4), np.float64, 3)
    grad_x, grad_w, grad_b = call("opgraph::linear_backward", grad, x, w, b)
    eps = 1e-6

    def numeric(wrt):
        result = np.zeros_like(wrt)
        for index in np.ndindex(wrt.shape):
            saved = wrt[index]
            wrt[index] = saved + eps
            plus = np.sum(grad * call("aten::linear", x, w, b))
            wrt[index] = saved - eps
            minus = np.sum(grad * call("aten::linear", x, w, b))
            wrt[index] = saved
            result[index] = (plus - minus) / (2 * eps)
        return result

    for analytic, wrt in [(grad_x, x), (grad_w, w), (grad_b, b)]:
        np.testing.assert_allclose(analytic, numeric(wrt), rtol=1e-6, atol=1e-8)


def test_linear_backward_checks_the_gradient_shape():
    with pytest.raises(
        opgraph.Error, match=r"grad_output: expected float32\[3, 4\] like linear's output, got float32\[3, 5\]"
    ):
        call(
            "opgraph::linear_backward",
            np.ones((3, 5), np.float32),
            np.ones((3, 2), np.float32),
            np.ones((4, 2), np.float32),
        )
