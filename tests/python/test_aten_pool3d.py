"""3-D and 1-D pooling (max_pool3d with and without indices, avg_pool3d, adaptive_avg_pool1d/3d) against the
reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
aten = torch.ops.aten


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(
    "name",
    [
        "max_pool3d",
        "max_pool3d_with_indices",
        "avg_pool3d",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool3d",
        "_adaptive_avg_pool3d",
    ],
)
def test_schemas_are_aten(name):
    assert_schema_is_aten(name)


CASES = [
    # input shape, kernel, stride, padding, ceil_mode
    ((1, 1, 4, 4, 4), 2, [], 0, False),
    ((2, 3, 5, 7, 6), 3, 2, 1, False),
    ((2, 3, 5, 7, 6), 3, 2, 1, True),
    ((1, 2, 3, 10, 11), (1, 2, 3), (1, 3, 2), (0, 1, 0), True),
    ((3, 5, 4, 4), 2, 1, 0, False),  # unbatched
    ((0, 2, 4, 4, 4), 2, 2, 0, False),
    ((1, 2, 1, 1, 1), 1, 1, 0, False),
    ((2, 40, 10, 9, 11), 2, 2, 0, False),  # crosses the threading threshold
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", CASES)
@pytest.mark.parametrize("dilation", [1, 2])
def test_max_pool3d(shape, kernel, stride, padding, ceil_mode, dilation, dtype):
    x = random(shape, dtype)
    if min(x.shape[-3:]) + 2 * np.min(padding) < dilation * (np.max(kernel) - 1) + 1:
        pytest.skip("the dilated window is wider than this input")
    x.reshape(-1)[3::97] = np.nan  # a NaN wins its windows
    x.reshape(-1)[5::89] = -np.inf
    attrs = dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode)
    check_op("aten::max_pool3d", lambda t: F.max_pool3d(t, **attrs), x, **attrs)
    check_op("aten::max_pool3d_with_indices", lambda t: aten.max_pool3d_with_indices(t, **attrs), x, **attrs)


def test_max_pool3d_with_indices_non_contiguous_and_infinities():
    x = random((4, 3, 6, 5, 7), np.float32).transpose(1, 0, 2, 4, 3)
    x[0, 0, 0] = -np.inf
    attrs = dict(kernel_size=2, stride=2, padding=1, dilation=1, ceil_mode=False)
    check_op("aten::max_pool3d_with_indices", lambda t: aten.max_pool3d_with_indices(t, **attrs), x, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, kernel, stride, padding, ceil_mode", CASES)
@pytest.mark.parametrize("count_include_pad, divisor_override", [(True, None), (False, None), (True, 5)])
def test_avg_pool3d(shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype):
    attrs = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor_override,
    )
    check_op("aten::avg_pool3d", lambda t: F.avg_pool3d(t, **attrs), random(shape, dtype), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, output_size",
    [
        ((2, 3, 5, 7, 9), [2, 3, 4]),
        ((3, 4, 4, 4), [4, 4, 4]),
        ((1, 2, 6, 6, 6), [1, 1, 1]),
        ((1, 2, 3, 8, 6), [5, 4, 3]),
        ((0, 2, 3, 3, 3), [2, 2, 2]),
        ((1, 1, 1, 1, 1), [2, 1, 3]),
    ],
)
def test_adaptive_avg_pool3d(shape, output_size, dtype):
    x = random(shape, dtype)
    for name in ["adaptive_avg_pool3d", "_adaptive_avg_pool3d"]:
        check_op(f"aten::{name}", lambda t: getattr(aten, name)(t, output_size), x, output_size=output_size)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, output_size",
    [((2, 3, 7), [3]), ((3, 10), [5]), ((1, 2, 13), [1]), ((1, 2, 4), [9]), ((4, 3, 1), [1]), ((0, 2, 5), [2])],
)
def test_adaptive_avg_pool1d(shape, output_size, dtype):
    x = random(shape, dtype)
    check_op(
        "aten::adaptive_avg_pool1d", lambda t: aten.adaptive_avg_pool1d(t, output_size), x, output_size=output_size
    )
    strided = random(shape[:-1] + (2 * shape[-1],), dtype)[..., ::2]
    check_op(
        "aten::adaptive_avg_pool1d",
        lambda t: aten.adaptive_avg_pool1d(t, output_size),
        strided,
        output_size=output_size,
    )


@pytest.mark.parametrize(
    "op, x, attrs, message",
    [
        (
            "aten::max_pool3d",
            random((1, 4, 4), np.float32),
            dict(kernel_size=2),
            r"self: expected rank 4 or 5 \(\(batch,\) channels, depth, height, width\), got float32\[1, 4, 4\]",
        ),
        (
            "aten::avg_pool3d",
            random((1, 1, 4, 4, 4), np.float32),
            dict(kernel_size=[2, 2]),
            r"kernel_size: expected 1 or 3 values, got \[2, 2\]",
        ),
        (
            "aten::max_pool3d_with_indices",
            random((1, 1, 2, 4, 4), np.float32),
            dict(kernel_size=3),
            r"self: input size 2 \(padded to 2\) is smaller than the kernel \(3\)",
        ),
        (
            "aten::adaptive_avg_pool3d",
            random((1, 1, 4, 4, 4), np.float32),
            dict(output_size=[2, 2]),
            r"output_size: expected 1 or 3 values, got \[2, 2\]",
        ),
        (
            "aten::adaptive_avg_pool1d",
            random((4,), np.float32),
            dict(output_size=[2]),
            r"self: expected rank 2 or 3 \(\(batch,\) channels, length\), got float32\[4\]",
        ),
        (
            "aten::adaptive_avg_pool1d",
            random((1, 4), np.float32),
            dict(output_size=[-1]),
            r"output_size: expected sizes of at least 0, got \[-1\]",
        ),
    ],
)
def test_bad_inputs(op, x, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, x, **attrs)
