"""aten softmax / log_softmax and their gradients against PyTorch."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
# Rows and column tiles of lengths around the vector widths (1, 7, 15, 17,
# 1001), one past the threading threshold.
SHAPES = [(0, 5), (1, 1), (7,), (15, 17), (3, 1001), (2, 3, 5, 7), (2, 70001)]
CASES = [(shape, dim) for shape in SHAPES for dim in range(-len(shape), len(shape))]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def make(shape, dtype, layout="contiguous", seed=0, scale=3.0):
    """Random values of `shape`, laid out as asked (views share a larger base)."""
    rng = np.random.default_rng(seed)
    if layout == "transposed":
        return (rng.standard_normal(shape[::-1]) * scale).astype(dtype).T
    if layout == "sliced":
        return (rng.standard_normal((*shape[:-1], 2 * shape[-1])) * scale).astype(dtype)[..., ::2]
    return (rng.standard_normal(shape) * scale).astype(dtype)


def softmax_case(op, torch_fn, element_type, shape, dim, layout, **attrs):
    x = make(shape, element_type, layout)
    check_op(op, lambda t: torch_fn(t, dim), x, dim=dim, **attrs)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_int(dtype, shape, dim, layout):
    softmax_case("aten::softmax.int", torch.softmax, dtype, shape, dim, layout)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_log_softmax_int(dtype, shape, dim, layout):
    softmax_case("aten::log_softmax.int", torch.log_softmax, dtype, shape, dim, layout, dtype=None)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_underscore_softmax(dtype, shape, dim, layout):
    softmax_case(
        "aten::_softmax",
        lambda t, d: torch.ops.aten._softmax(t, d, False),
        dtype,
        shape,
        dim,
        layout,
        half_to_float=False,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_underscore_log_softmax(dtype, shape, dim, layout):
    softmax_case(
        "aten::_log_softmax",
        lambda t, d: torch.ops.aten._log_softmax(t, d, False),
        dtype,
        shape,
        dim,
        layout,
        half_to_float=False,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_explicit_dtype_equal_to_the_input_is_accepted(dtype):
    x = make((4, 9), dtype)
    check_op("aten::softmax.int", lambda t: torch.softmax(t, 1), x, dim=1, dtype=torch.from_numpy(x).dtype)
    check_op("aten::log_softmax.int", lambda t: torch.log_softmax(t, 0), x, dim=0, dtype=np.dtype(dtype))


@pytest.mark.parametrize("op", ["aten::softmax.int", "aten::log_softmax.int"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_logits_stay_finite(op, dtype):
    x = np.array([[1000.0, 999.0, -1000.0], [-1e4, -1e4, -1e4]], dtype)
    torch_fn = torch.softmax if op == "aten::softmax.int" else torch.log_softmax
    result = check_op(op, lambda t: torch_fn(t, -1), x, dim=-1)
    assert np.isfinite(result).all()


@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("op", ["aten::softmax.int", "aten::log_softmax.int"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_logits(dtype, op, dim):
    # Rows of +-100 (exp's range ends), rows with -inf entries (exp gives 0),
    # a row of -inf only and one holding +inf (both NaN, as in PyTorch).
    x = make((6, 17), dtype)
    x[0] = np.where(np.arange(17) % 2, 100, -100)
    x[1, ::3] = -np.inf
    x[2] = -np.inf
    x[3, 5] = np.inf
    x[4] = np.linspace(-100, 100, 17)
    torch_fn = torch.softmax if op == "aten::softmax.int" else torch.log_softmax
    x = x if dim == -1 else np.ascontiguousarray(x.T)
    result = check_op(op, lambda t: torch_fn(t, dim), x, dim=dim)
    rows = result if dim == -1 else result.T
    assert np.isnan(rows[2]).all() and np.isnan(rows[3]).all()
    assert not np.isnan(np.delete(rows, [2, 3], axis=0)).any()


BACKWARD = {
    "aten::_softmax_backward_data": torch.softmax,
    "aten::_log_softmax_backward_data": torch.log_softmax,
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BACKWARD)
def test_backward_data(op, dtype, shape, dim, layout):
    output = BACKWARD[op](torch.from_numpy(make(shape, dtype, layout)), dim).numpy()
    grad_output = make(shape, dtype, layout, seed=1, scale=1.0)
    aten = getattr(torch.ops.aten, op.split("::")[1])
    # torch sums a row's gradients in float32, in an order set by the CPU's vector width: over a row of 70,001 on
    # an AVX2 CPU, its sums part from the reference's (in float64) enough to move outputs near 1.5 by 7e-5.
    long_row = dtype == np.float32 and shape[dim] > 10_000
    tolerance = dict(rtol=1e-5, atol=1e-4) if long_row else None
    check_op(
        op, lambda g, y: aten(g, y, dim, y.dtype), grad_output, output, tolerance=tolerance, dim=dim, input_dtype=dtype
    )


@pytest.mark.parametrize("shape, dim", [((3, 1001), 1), ((2, 3, 5, 7), 1), ((2, 3, 5, 7), -1), ((7,), 0)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BACKWARD)
def test_backward_matches_autograd(op, dtype, shape, dim):
    x = torch.from_numpy(make(shape, dtype)).requires_grad_()
    grad_output = torch.from_numpy(make(shape, dtype, seed=1, scale=1.0))
    output = BACKWARD[op](x, dim)
    output.backward(grad_output)
    got = call(op, grad_output, output.detach(), dim=dim, input_dtype=dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, x.grad.numpy(), **tol)


@pytest.mark.parametrize("shape, dim", [((3, 4), 1), ((3, 4), 0), ((2, 3, 2), -2)])
@pytest.mark.parametrize(
    "forward, backward",
    [
        ("aten::softmax.int", "aten::_softmax_backward_data"),
        ("aten::log_softmax.int", "aten::_log_softmax_backward_data"),
    ],
)
def test_backward_matches_finite_differences(forward, backward, shape, dim):
    x = make(shape, np.float64, scale=1.0)
    grad_output = make(shape, np.float64, seed=1, scale=1.0)
    objective = lambda v: float(np.sum(grad_output * call(forward, v, dim=dim)))  # noqa: E731
    step = 1e-6
    numeric = np.zeros_like(x)
    for index in np.ndindex(*shape):
        bump = np.zeros_like(x)
        bump[index] = step
        numeric[index] = (objective(x + bump) - objective(x - bump)) / (2 * step)
    got = call(backward, grad_output, call(forward, x, dim=dim), dim=dim, input_dtype=np.float64)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(opgraph.Error, match=r"aten::_softmax: half_to_float: expected False"):
        call("aten::_softmax", x, dim=1, half_to_float=True)
    with pytest.raises(opgraph.Error, match=r"aten::_log_softmax: half_to_float: expected False"):
        call("aten::_log_softmax", x, dim=1, half_to_float=True)
    with pytest.raises(opgraph.Error, match=r"aten::softmax.int: dtype: expected None or float32.*got float64"):
        call("aten::softmax.int", x, dim=1, dtype=torch.float64)
    with pytest.raises(opgraph.Error, match=r"log_softmax.int: dtype: expected None or float32.*got int64"):
        call("aten::log_softmax.int", x, dim=1, dtype="int64")
    with pytest.raises(opgraph.Error, match=r"dim: expected a dim in \[-2, 1\] for a tensor of rank 2, got 2"):
        call("aten::softmax.int", x, dim=2)
    with pytest.raises(opgraph.Error, match=r"dim: expected a dim in \[-2, 1\].*got -3"):
        call("aten::_softmax", x, dim=-3, half_to_float=False)
    with pytest.raises(opgraph.Error, match=r"self: expected float32 or float64, got int64\[2, 3\]"):
        call("aten::softmax.int", np.ones((2, 3), np.int64), dim=1)
    with pytest.raises(opgraph.Error, match=r"_softmax_backward_data: input_dtype: expected float32"):
        call("aten::_softmax_backward_data", x, x, dim=1, input_dtype=np.float64)
    with pytest.raises(opgraph.Error, match=r"grad_output: expected float32\[2, 3\] like output"):
        call("aten::_log_softmax_backward_data", x[:1], x, dim=1, input_dtype=np.float32)
