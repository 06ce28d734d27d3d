"""_cdist_forward, cdist, _pdist_forward, pdist, im2col and col2im against the reference and PyTorch."""

import math

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
PS = [0.0, 1.0, 2.0, math.inf, 0.5, 3.0]
aten = torch.ops.aten


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tolerance(dtype, p):
    if dtype == np.float64:
        return dict(rtol=1e-11, atol=1e-11)
    return dict(rtol=1e-4 if p not in (0.0, 1.0, math.inf) else 1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["_cdist_forward", "cdist", "_pdist_forward", "pdist", "col2im", "im2col"])
def test_schemas_are_aten(name):
    assert_schema_is_aten(name)


# x1 shape, x2 shape: batch dims broadcast
CDIST_SHAPES = [
    ((4, 3), (5, 3)),
    ((2, 7, 5), (2, 3, 5)),
    ((1, 1), (1, 1)),
    ((3, 1, 4, 6), (2, 5, 6)),
    ((2, 0, 3), (2, 4, 3)),
    ((3, 2), (0, 2)),
    ((3, 0), (2, 0)),
    ((40, 37), (31, 37)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("x1_shape, x2_shape", CDIST_SHAPES)
def test_cdist(x1_shape, x2_shape, p, dtype):
    x1, x2 = random(x1_shape, dtype), random(x2_shape, dtype, 1)
    shared = min(x1.size, x2.size) // 3
    x2.reshape(-1)[:shared] = x1.reshape(-1)[:shared]  # some equal elements: p = 0 counts them
    check_op(
        "aten::_cdist_forward",
        lambda a, b: aten._cdist_forward(a, b, p, 2),
        x1,
        x2,
        tolerance=tolerance(dtype, p),
        p=p,
        compute_mode=2,
    )


@pytest.mark.parametrize("compute_mode", [None, 0, 1])
def test_cdist_compute_modes(compute_mode):
    """ATen may take p = 2 through a matrix product; opgraph always measures directly, as precisely or more."""
    x1, x2 = random((30, 8), np.float64), random((27, 8), np.float64, 1)
    check_op(
        "aten::_cdist_forward",
        lambda a, b: aten._cdist_forward(a, b, 2.0, compute_mode),
        x1,
        x2,
        tolerance=dict(rtol=1e-9, atol=1e-9),
        p=2.0,
        compute_mode=compute_mode,
    )


def test_cdist_and_pdist_are_their_forward_ops():
    x1, x2 = random((2, 6, 4), np.float32), random((5, 4), np.float32, 1)
    check_op(
        "aten::cdist",
        lambda a, b: torch.cdist(a, b, 1.5),
        x1,
        x2,
        tolerance=tolerance(np.float32, 1.5),
        p=1.5,
        compute_mode=None,
    )
    check_op("aten::pdist", lambda t: torch.pdist(t, 3.0), x2, tolerance=tolerance(np.float32, 3.0), p=3.0)


def test_cdist_non_contiguous():
    x1 = random((6, 4, 3), np.float32).transpose(1, 0, 2)[:, ::2]
    x2 = random((3, 10), np.float32, 1).T[::2]
    check_op(
        "aten::_cdist_forward", lambda a, b: aten._cdist_forward(a, b, 1.0, None), x1, x2, p=1.0, compute_mode=None
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("shape", [(5, 3), (1, 4), (0, 2), (2, 0), (13, 1), (61, 19)])
def test_pdist(shape, p, dtype):
    x = random(shape, dtype)
    if shape[0] > 2:
        x[2] = x[0]  # a zero distance
    check_op("aten::_pdist_forward", lambda t: aten._pdist_forward(t, p), x, tolerance=tolerance(dtype, p), p=p)


def test_pdist_default_p_and_non_contiguous():
    x = random((7, 5), np.float64).T
    check_op("aten::_pdist_forward", lambda t: aten._pdist_forward(t.contiguous()), x)


# input shape (without the C * kh * kw dim), channels, output_size, kernel, dilation, padding, stride
COL2IM_CASES = [
    ((2,), 3, [5, 7], [2, 3], [1, 1], [0, 0], [1, 1]),
    ((), 2, [6, 5], [3, 2], [2, 1], [1, 2], [2, 3]),  # unbatched
    ((1,), 1, [1, 1], [1, 1], [1, 1], [0, 0], [1, 1]),
    ((3,), 4, [11, 13], [3, 3], [1, 2], [1, 1], [2, 2]),
    ((1,), 5, [8, 8], [2, 2], [1, 1], [0, 0], [2, 2]),  # non-overlapping blocks
    ((2,), 2, [7, 4], [4, 1], [1, 1], [3, 0], [1, 1]),  # padding wider than half the kernel
    ((0,), 2, [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]),
    ((4,), 16, [20, 19], [3, 3], [1, 1], [1, 1], [1, 1]),  # crosses the threading threshold
]


def blocks(size, kernel, dilation, padding, stride):
    return math.prod(
        (s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, d, p, st in zip(size, kernel, dilation, padding, stride)
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, channels, size, kernel, dilation, padding, stride", COL2IM_CASES)
def test_col2im(batch, channels, size, kernel, dilation, padding, stride, dtype):
    shape = batch + (channels * kernel[0] * kernel[1], blocks(size, kernel, dilation, padding, stride))
    x = random(shape, dtype)
    attrs = dict(output_size=size, kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)
    check_op("aten::col2im", lambda t: aten.col2im(t, **attrs), x, **attrs)


def test_col2im_non_contiguous():
    x = random((9, 2 * 4), np.float32).T  # (8, 9): 2 channels, 2x2 kernel, 3x3 blocks
    attrs = dict(output_size=[4, 4], kernel_size=[2, 2], dilation=[1, 1], padding=[0, 0], stride=[1, 1])
    check_op("aten::col2im", lambda t: aten.col2im(t, **attrs), x, **attrs)


def test_col2im_inverts_unfold_counts():
    """Folding unfolded ones counts how many blocks cover each pixel."""
    x = torch.ones(1, 2, 6, 7, dtype=torch.float64)
    cols = torch.nn.functional.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)).numpy()
    got = call(
        "aten::col2im", cols, output_size=[6, 7], kernel_size=[3, 2], dilation=[1, 2], padding=[1, 1], stride=[2, 1]
    )
    expected = torch.nn.functional.fold(
        torch.from_numpy(cols), (6, 7), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1)
    )
    np.testing.assert_array_equal(got, expected.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch, channels, size, kernel, dilation, padding, stride", COL2IM_CASES)
def test_im2col(batch, channels, size, kernel, dilation, padding, stride, dtype):
    x = random(batch + (channels,) + tuple(size), dtype)
    attrs = dict(kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)
    cols = check_op("aten::im2col", lambda t: aten.im2col(t, **attrs), x, **attrs)
    check_op("aten::col2im", lambda t: aten.col2im(t, size, **attrs), cols, output_size=size, **attrs)


def test_im2col_non_contiguous():
    x = random((5, 2, 6, 7), np.float64).transpose(1, 0, 3, 2)
    attrs = dict(kernel_size=[2, 3], dilation=[1, 1], padding=[1, 0], stride=[1, 2])
    check_op("aten::im2col", lambda t: aten.im2col(t, **attrs), x, **attrs)


COL2IM_ATTRS = dict(output_size=[4, 4], kernel_size=[2, 2], dilation=[1, 1], padding=[0, 0], stride=[1, 1])


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        (
            "aten::_cdist_forward",
            [random((3, 4), np.float32), random((2, 5), np.float32)],
            dict(p=2.0, compute_mode=None),
            r"x1 and x2: expected rows of the same size",
        ),
        (
            "aten::_cdist_forward",
            [random((3,), np.float32), random((2, 3), np.float32)],
            dict(p=2.0, compute_mode=None),
            r"x1 and x2: expected rank 2 or more",
        ),
        (
            "aten::_cdist_forward",
            [random((3, 4), np.float32), random((2, 4), np.float32)],
            dict(p=-1.0, compute_mode=None),
            r"p: expected a non-negative value, got -1",
        ),
        (
            "aten::_cdist_forward",
            [random((3, 4), np.float32), random((2, 4), np.float32)],
            dict(p=2.0, compute_mode=3),
            r"compute_mode: expected None, 0, 1 or 2, got 3",
        ),
        (
            "aten::_cdist_forward",
            [random((2, 3, 4), np.float32), random((3, 2, 4), np.float32)],
            dict(p=2.0, compute_mode=None),
            r".*cannot be broadcast",
        ),
        (
            "aten::_pdist_forward",
            [random((2, 3, 4), np.float32)],
            dict(p=2.0),
            r"self: expected a matrix \(rows, features\), got float32\[2, 3, 4\]",
        ),
        (
            "aten::_pdist_forward",
            [random((3, 4), np.float32).astype(np.int64)],
            dict(p=2.0),
            r"self: expected float32 or float64, got int64",
        ),
        (
            "aten::col2im",
            [random((1, 8, 8), np.float32)],
            COL2IM_ATTRS,
            r"self: expected 3 x 3 sliding blocks in its last dim",
        ),
        (
            "aten::col2im",
            [random((1, 7, 9), np.float32)],
            COL2IM_ATTRS,
            r"self: expected dim 1 to be divisible by the kernel's size 4",
        ),
        ("aten::col2im", [random((1, 1, 8, 9), np.float32)], COL2IM_ATTRS, r"self: expected rank 2 or 3"),
        (
            "aten::col2im",
            [random((1, 8, 9), np.float32)],
            dict(COL2IM_ATTRS, stride=[0, 1]),
            r"expected positive kernel_size, dilation and stride and non-negative padding, got kernel_size \[2, 2\]",
        ),
        (
            "aten::col2im",
            [random((1, 8, 9), np.float32)],
            dict(COL2IM_ATTRS, output_size=[0, 4]),
            r"output_size: expected positive sizes, got \[0, 4\]",
        ),
        (
            "aten::im2col",
            [random((1, 2, 3), np.float32)],
            dict(kernel_size=[4, 4], dilation=[1, 1], padding=[0, 0], stride=[1, 1]),
            r"self: no sliding block fits in float32\[1, 2, 3\] for kernel_size \[4, 4\]",
        ),
        (
            "aten::im2col",
            [random((2, 0, 3, 3), np.float32)],
            dict(kernel_size=[1, 1], dilation=[1, 1], padding=[0, 0], stride=[1, 1]),
            r"self: expected rank 3 or 4 \(\(batch,\) channels, height, width\) with non-empty planes",
        ),
    ],
)
def test_bad_inputs(op, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, *inputs, **attrs)
