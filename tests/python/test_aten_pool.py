"""2-D pooling against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


POOL_CASES = [
    # input shape, kernel, stride, padding, ceil_mode
    ((1, 1, 4, 4), 2, [], 0, False),
    ((2, 3, 9, 7), 3, 2, 1, False),
    ((2, 3, 9, 7), 3, 2, 1, True),
    ((1, 2, 10, 11), (2, 3), (3, 2), (1, 0), True),
    ((3, 8, 8), 2, 2, 0, False),  # unbatched
    ((0, 3, 8, 8), 2, 2, 0, False),
    ((1, 1001, 5, 5), 3, 1, 1, False),
    ((1, 4, 64, 64), 2, 2, 0, False),  # crosses the threading threshold
    # Output rows of 17, 15 and 1 elements: vector loops with remainders.
    ((2, 3, 7, 33), 3, 2, 1, False),
    ((1, 2, 16, 15), (3, 1), 1, (1, 0), False),
    ((1, 3, 5, 1), (2, 1), (2, 1), 0, True),
    ((1, 2, 8, 20), 3, 3, 1, True),  # a stride other than 1 or 2
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool2d(shape, kernel, stride, padding, ceil_mode, dilation, dtype):
    x = random(shape, dtype)
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    if x.shape[-1] + 2 * np.max(padding) < dilation * (np.max(kernel) - 1) + 1:
        pytest.skip("the dilated window is wider than this input")
    check_op("aten::max_pool2d", lambda t: F.max_pool2d(t, **attrs), x, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, kernel, stride, padding, ceil_mode",
    [
        ((1, 1, 4), 2, [], 0, False),
        ((2, 3, 9), 3, 2, 1, False),
        ((2, 3, 9), 3, 2, 1, True),
        ((3, 17), 4, 3, 2, True),
        ((0, 3, 8), 2, 2, 0, False),
        ((1, 5, 1001), 5, 1, 2, False),
    ],
)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool1d(shape, kernel, stride, padding, ceil_mode, count_include_pad, dtype):
    attrs = dict(
        kernel_size=kernel, stride=stride, padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad
    )
    check_op("aten::avg_pool1d", lambda t: F.avg_pool1d(t, **attrs), random(shape, dtype), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("count_include_pad, divisor_override", [(True, None), (False, None), (True, 3)])
def test_avg_pool2d(shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype):
    attrs = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )
    check_op("aten::avg_pool2d", lambda t: F.avg_pool2d(t, **attrs), random(shape, dtype), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, attrs",
    [
        ((2, 3, 7, 9), dict(kernel_size=2)),  # 2x2 fast path, odd sizes: the last row and column are dropped
        ((1, 5, 6, 34), dict(kernel_size=2, stride=2)),  # rows of 17 outputs: vector loop and remainder
        ((1, 2, 7, 9), dict(kernel_size=2, ceil_mode=True)),  # clipped last windows: not the fast path
        ((1, 2, 8, 8), dict(kernel_size=2, padding=1)),  # padded: not the fast path
        ((1, 2, 8, 8), dict(kernel_size=2, stride=1)),
    ],
)
def test_max_pool2d_2x2(shape, attrs, dtype):
    x = random(shape, dtype)
    x[0, 0, 0, 1] = np.nan
    x[0, 1, 2, 2] = -np.inf
    check_op("aten::max_pool2d", lambda t: F.max_pool2d(t, **attrs), x, **attrs)


def test_max_pool2d_propagates_nan():
    x = random((1, 1, 4, 4), np.float32)
    x[0, 0, 1, 1] = np.nan
    result = call("aten::max_pool2d", x, kernel_size=2)
    assert np.isnan(result[0, 0, 0, 0]) and not np.isnan(result[0, 0, 1, 1])


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d_infinities_and_nan(dtype, ceil_mode):
    x = random((2, 2, 9, 35), dtype)
    x[0, 0, :3] = -np.inf  # windows of -inf only, padding included
    x[0, 1, 4, 5] = np.inf
    x[1, 0, 6, 7] = np.nan
    x[1, 1, :, -1] = -np.inf  # the last column, which ceil_mode windows overhang
    attrs = dict(kernel_size=3, stride=2, padding=1, ceil_mode=ceil_mode)
    check_op("aten::max_pool2d", lambda t: F.max_pool2d(t, **attrs), x, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, output_size",
    [
        ((1, 3, 7, 7), (1, 1)),
        ((2, 4, 9, 13), (4, 5)),
        ((3, 5, 5), (5, 5)),
        ((1, 2, 4, 4), (7, 3)),
        ((1, 512, 7, 7), (1, 1)),
        ((2, 3, 8, 12), (4, 3)),
        ((1, 2, 9, 6), (3, 1)),
        ((1, 2, 9, 6), (3, 4)),
        ((0, 2, 4, 4), (1, 1)),
    ],
)
def test_adaptive_avg_pool2d(shape, output_size, dtype):
    check_op(
        "aten::adaptive_avg_pool2d",
        lambda t: F.adaptive_avg_pool2d(t, output_size),
        random(shape, dtype),
        output_size=output_size,
    )


@pytest.mark.parametrize(
    "op, x, attrs, message",
    [
        (
            "aten::max_pool2d",
            random((1, 1, 4, 4), np.float32),
            dict(kernel_size=2, padding=2),
            r"padding: \[2, 2\] must be at most half of kernel_size \[2, 2\]",
        ),
        (
            "aten::max_pool2d",
            random((1, 1, 2, 2), np.float32),
            dict(kernel_size=3),
            r"self: input size 2 \(padded to 2\) is smaller than the kernel \(3\)",
        ),
        (
            "aten::max_pool2d",
            random((4, 4), np.float32),
            dict(kernel_size=2),
            r"self: expected rank 3 or 4 \(\(batch,\) channels, height, width\), got float32\[4, 4\]",
        ),
        (
            "aten::max_pool2d",
            random((1, 1, 4, 4), np.float32).astype(np.int32),
            dict(kernel_size=2),
            r"self: expected float32 or float64, got int32",
        ),
        (
            "aten::avg_pool2d",
            random((1, 1, 4, 4), np.float32),
            dict(kernel_size=2, divisor_override=0),
            "divisor_override: must not be zero",
        ),
        (
            "aten::avg_pool2d",
            random((1, 1, 4, 4), np.float32),
            dict(kernel_size=0),
            "kernel_size, stride and dilation must be positive",
        ),
        (
            "aten::adaptive_avg_pool2d",
            random((1, 1, 4, 4), np.float32),
            dict(output_size=[2, 2, 2]),
            r"output_size: expected 1 or 2 values, got \[2, 2, 2\]",
        ),
    ],
)
def test_bad_inputs(op, x, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, x, **attrs)


def autograd_pool(torch_fn, x, dtype):
    """torch's input gradient of torch_fn at x for a random output gradient."""
    tx = torch.from_numpy(x).requires_grad_()
    y = torch_fn(tx)
    grad = torch.from_numpy(random(tuple(y.shape), dtype, 5))
    y.backward(grad)
    return grad.numpy(), tx.grad.numpy()


def check_gradient(op, grad, x, expected, **attrs):
    fast = call(op, grad, x, **attrs)
    reference = opgraph.ops.call_reference(op, grad, x, **attrs)
    tol = dict(rtol=1e-5, atol=1e-5) if x.dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference, expected, **tol)
    np.testing.assert_allclose(fast, reference, **tol)


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (4, 16, 8, 8)])
def test_max_pool2d_backward_2x2_ties_and_nan(shape):
    """2x2 windows have a kernel of their own: ties go to the window's first
    maximum and a NaN takes the gradient, as in torch; odd last rows and
    columns get none."""
    x = np.random.default_rng(3).integers(0, 3, shape).astype(np.float32)
    x[0, 0, 1, 1] = x[1, 2, 2, 3] = np.nan
    attrs = dict(kernel_size=2, stride=2)
    grad, expected = autograd_pool(lambda t: F.max_pool2d(t, **attrs), x, np.float32)
    check_gradient("opgraph::max_pool2d_backward", grad, x, expected, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool2d_backward_matches_autograd(shape, kernel, stride, padding, ceil_mode, dilation, dtype):
    assert opgraph.op_backward("aten::max_pool2d") == "opgraph::max_pool2d_backward"
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    x = random(shape, dtype)
    grad, expected = autograd_pool(lambda t: F.max_pool2d(t, **attrs), x, dtype)
    check_gradient("opgraph::max_pool2d_backward", grad, x, expected, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("count_include_pad, divisor_override", [(True, None), (False, None), (True, 3)])
def test_avg_pool2d_backward_matches_autograd(
    shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype
):
    assert opgraph.op_backward("aten::avg_pool2d") == "aten::avg_pool2d_backward"
    attrs = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )
    x = random(shape, dtype)
    grad, expected = autograd_pool(lambda t: F.avg_pool2d(t, **attrs), x, dtype)
    check_gradient("aten::avg_pool2d_backward", grad, x, expected, **attrs)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("max_pool2d", dict(kernel_size=3, stride=2, padding=1)),
        (
            "avg_pool2d",
            dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False, divisor_override=None),
        ),
    ],
)
def test_pool_backward_matches_finite_differences(op, attrs):
    x = random((1, 2, 7, 6), np.float64)
    y = call(f"aten::{op}", x, **attrs)
    grad = random(y.shape, np.float64, 3)
    backward = opgraph.op_backward(f"aten::{op}")
    analytic = call(backward, grad, x, **attrs)
    numeric, eps = np.zeros_like(x), 1e-6
    for index in np.ndindex(x.shape):
        saved = x[index]
        x[index] = saved + eps
        plus = np.sum(grad * call(f"aten::{op}", x, **attrs))
        x[index] = saved - eps
        minus = np.sum(grad * call(f"aten::{op}", x, **attrs))
        x[index] = saved
        numeric[index] = (plus - minus) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


def test_pool_backward_checks_the_gradient_shape():
    with pytest.raises(opgraph.Error, match=r"grad_output: expected float32\[1, 1, 2, 2\] like the pooled output"):
        call(
            "opgraph::max_pool2d_backward",
            np.ones((1, 1, 3, 3), np.float32),
            np.ones((1, 1, 4, 4), np.float32),
            kernel_size=2,
        )


@pytest.mark.parametrize(
    "name",
    [
        "avg_pool1d",
        "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward",
        "_adaptive_avg_pool2d",
        "_adaptive_avg_pool2d_backward",
    ],
)
def test_schemas_are_aten(name):
    assert_schema_is_aten(name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", POOL_CASES)
@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool2d_with_indices(shape, kernel, stride, padding, ceil_mode, dilation, dtype):
    x = random(shape, dtype)
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    if x.shape[-1] + 2 * np.max(padding) < dilation * (np.max(kernel) - 1) + 1:
        pytest.skip("the dilated window is wider than this input")
    values, indices = check_op(
        "aten::max_pool2d_with_indices", lambda t: torch.ops.aten.max_pool2d_with_indices(t, **attrs), x, **attrs
    )
    grad = random(values.shape, dtype, 7)
    expected = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.from_numpy(grad),
        torch.from_numpy(x),
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        ceil_mode=ceil_mode,
        indices=torch.from_numpy(indices),
    )
    op = "aten::max_pool2d_with_indices_backward"
    np.testing.assert_allclose(opgraph.ops.call_reference(op, grad, x, indices, **attrs), expected.numpy())
    np.testing.assert_allclose(call(op, grad, x, indices, **attrs), expected.numpy())


@pytest.mark.parametrize("seed", range(20))
def test_max_pool2d_with_indices_ties_nan_and_infinities(seed):
    """Of equal maxima the first in row-major order wins, of NaNs the last, as ATen's scan keeps them."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, (2, 3, int(rng.integers(3, 12)), int(rng.integers(3, 12)))).astype(np.float32)
    x[(x == 2) & (rng.random(x.shape) < 0.2)] = np.nan
    x[(x == 1) & (rng.random(x.shape) < 0.2)] = -np.inf
    kernel = int(rng.integers(1, 4))
    attrs = dict(
        kernel_size=kernel,
        stride=int(rng.integers(1, 3)),
        padding=int(rng.integers(0, kernel // 2 + 1)),
        dilation=1,
        ceil_mode=bool(rng.integers(0, 2)),
    )
    check_op("aten::max_pool2d_with_indices", lambda t: torch.ops.aten.max_pool2d_with_indices(t, **attrs), x, **attrs)


def test_max_pool2d_with_indices_ties_and_non_contiguous():
    x = np.random.default_rng(4).integers(0, 3, (5, 2, 9, 8)).astype(np.float32).transpose(1, 0, 3, 2)
    x[0, 0, 1, 1] = np.nan
    attrs = dict(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)
    check_op("aten::max_pool2d_with_indices", lambda t: torch.ops.aten.max_pool2d_with_indices(t, **attrs), x, **attrs)


def test_max_pool2d_with_indices_backward_checks_indices():
    x = random((1, 1, 4, 4), np.float32)
    attrs = dict(kernel_size=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False)
    grad = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(opgraph.Error, match=r"indices: expected positions in \[0, 16\) of a plane, got 16"):
        call("aten::max_pool2d_with_indices_backward", grad, x, np.full((1, 1, 2, 2), 16), **attrs)
    with pytest.raises(opgraph.Error, match=r"indices: expected int64\[1, 1, 2, 2\] like grad_output"):
        call("aten::max_pool2d_with_indices_backward", grad, x, np.zeros((1, 1, 2, 2), np.int32), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, output_size",
    [
        ((2, 3, 7, 9), [3, 4]),
        ((3, 5, 5), [5, 5]),
        ((1, 2, 13, 6), [1, 1]),
        ((1, 2, 8, 6), [4, 3]),
        ((2, 1, 5, 3), [7, 2]),
        ((0, 2, 4, 4), [2, 2]),
    ],
)
def test_adaptive_avg_pool2d_and_gradient(shape, output_size, dtype):
    x = random(shape, dtype)
    y = check_op(
        "aten::_adaptive_avg_pool2d",
        lambda t: torch.ops.aten._adaptive_avg_pool2d(t, output_size),
        x,
        output_size=output_size,
    )
    assert opgraph.op_backward("aten::_adaptive_avg_pool2d") == "aten::_adaptive_avg_pool2d_backward"
    grad = random(y.shape, dtype, 3)
    check_op("aten::_adaptive_avg_pool2d_backward", torch.ops.aten._adaptive_avg_pool2d_backward, grad, x)


def test_adaptive_avg_pool2d_backward_checks_the_gradient_rank():
    with pytest.raises(opgraph.Error, match=r"grad_output: expected rank 4 like self"):
        call("aten::_adaptive_avg_pool2d_backward", np.ones((2, 2), np.float32), np.ones((1, 1, 4, 4), np.float32))


def test_max_pool_picks_the_last_nan_of_a_window():
    """As ATen: a NaN beats any number and a later NaN beats an earlier one."""
    x = random((1, 2, 4, 6), np.float32)
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = x[0, 1, 2, 2] = x[0, 1, 3, 3] = x[0, 1, 3, 4] = np.nan
    attrs = dict(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
    check_op("aten::max_pool2d_with_indices", lambda t: torch.ops.aten.max_pool2d_with_indices(t, **attrs), x, **attrs)
    grad, expected = autograd_pool(lambda t: F.max_pool2d(t, 2), x, np.float32)
    check_gradient("opgraph::max_pool2d_backward", grad, x, expected, kernel_size=2)
