"""Convolutions against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import check_op, convolution_attrs

import opgraph
from opgraph.ops import call

aten = torch.ops.aten
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-4)


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tolerance(dtype):
    return FLOAT32_SUMS if dtype == np.float32 else None


CONV2D_CASES = [
    # input shape, weight shape, stride, padding, dilation, groups
    ((1, 3, 8, 8), (4, 3, 3, 3), 1, 0, 1, 1),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2),
    ((1, 6, 11, 11), (6, 1, 3, 3), 1, 1, 2, 6),
    ((1, 1, 5, 5), (1, 1, 5, 5), 1, 0, 1, 1),
    ((3, 2, 13, 17), (5, 2, 1, 1), 3, 0, 1, 1),
    ((0, 3, 8, 8), (4, 3, 3, 3), 1, 1, 1, 1),
    ((3, 8, 8), (4, 3, 3, 3), 1, 1, 1, 1),  # unbatched
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("input_shape, weight_shape, stride, padding, dilation, groups", CONV2D_CASES)
def test_conv2d(input_shape, weight_shape, stride, padding, dilation, groups, with_bias, dtype):
    x, w = random(input_shape, dtype), random(weight_shape, dtype, 1)
    b = random((weight_shape[0],), dtype, 2) if with_bias else None
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_op(
        "aten::conv2d",
        lambda x, w, b=None: F.conv2d(x, w, b, **attrs),
        x,
        w,
        *([b] if with_bias else []),
        tolerance=tolerance(dtype),
        **attrs,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, dilation, groups",
    [((2, 3, 17), (4, 3, 5), 1, 2, 1, 1), ((1, 4, 31), (4, 2, 3), 2, 0, 3, 2), ((3, 9), (2, 3, 4), 1, 0, 1, 1)],
)
def test_conv1d(input_shape, weight_shape, stride, padding, dilation, groups, dtype):
    x, w, b = random(input_shape, dtype), random(weight_shape, dtype, 1), random((weight_shape[0],), dtype, 2)
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_op("aten::conv1d", lambda x, w, b: F.conv1d(x, w, b, **attrs), x, w, b, tolerance=tolerance(dtype), **attrs)


@pytest.mark.parametrize("weight_shape", [(4, 3, 3, 3), (4, 3, 3)])
def test_convolution(weight_shape):
    spatial = len(weight_shape) - 2
    x, w = random((2, 3) + (10,) * spatial, np.float32), random(weight_shape, np.float32, 1)
    attrs = dict(
        stride=[2] * spatial,
        padding=[1] * spatial,
        dilation=[1] * spatial,
        transposed=False,
        output_padding=[0] * spatial,
        groups=1,
    )
    check_op(
        "aten::convolution",
        lambda x, w, b: aten.convolution(x, w, b, **attrs),
        x,
        w,
        None,
        tolerance=FLOAT32_SUMS,
        **attrs,
    )


def test_resnet_layer_shape_uses_threads():
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(2)
        x, w = random((1, 64, 56, 56), np.float32), random((64, 64, 3, 3), np.float32, 1) * 0.1
        check_op(
            "aten::conv2d",
            lambda x, w: F.conv2d(x, w, padding=1),
            x,
            w,
            padding=1,
            tolerance=dict(rtol=1e-3, atol=1e-3),
        )
    finally:
        opgraph.set_num_threads(previous)


@pytest.mark.parametrize("weight_shape", [(32, 16, 3, 3), (16, 1, 3, 3)])
def test_conv2d_sees_weights_changed_in_place(weight_shape):
    """Converted weights are kept from call to call: a change to the values
    in the same buffer (a training step) must reach the next call."""
    x, w = random((1, weight_shape[1], 14, 14), np.float32), random(weight_shape, np.float32, 1)
    for step in range(3):
        np.testing.assert_allclose(
            call("aten::conv2d", x, w, padding=1),
            F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy(),
            **FLOAT32_SUMS,
            err_msg=f"step {step}",
        )
        w[step, 0, 1, 1] += 1.0
        w *= 0.5


def test_conv2d_with_more_scratch_than_a_thread_keeps():
    """The input and output converted for oneDNN take 6.5 MiB, more than a thread keeps: the call has its own."""
    x, w = random((2, 16, 160, 160), np.float32), random((16, 16, 3, 3), np.float32, 1) * 0.1
    np.testing.assert_allclose(
        call("aten::conv2d", x, w, padding=1),
        F.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1).numpy(),
        **FLOAT32_SUMS,
    )


@pytest.mark.parametrize(
    "name, inputs, attrs, message",
    [
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 2, 3, 3), np.float32)],
            {},
            r"weight: expected 3 input channels per group",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(groups=2),
            r"groups: 2 must divide the input channels \(3\)",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 2, 2), np.float32), random((4, 3, 3, 3), np.float32)],
            {},
            r"input: spatial size 2 \(padded to 2\) is smaller than the dilated kernel \(3\)",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float64)],
            {},
            r"weight: expected float32 like input, got float64",
        ),
        (
            "aten::conv2d",
            [random((8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            {},
            r"input: expected rank 4 \(batch, channels, spatial...\), got float32\[8, 8\]",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32), random((5,), np.float32)],
            {},
            r"bias: expected float32\[4\], got float32\[5\]",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(stride=0),
            r"stride: expected values of at least 1",
        ),
        (
            "aten::conv2d",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(padding=[1, 1, 1]),
            r"padding: expected 1 or 2 values, got \[1, 1, 1\]",
        ),
        (
            "aten::convolution",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3), np.float32), None],
            convolution_attrs(1),
            r"input: expected rank 3 \(batch, channels, spatial...\)",
        ),
        (
            "aten::convolution",
            [random((1, 3, 8), np.float32), random((4, 3), np.float32), None],
            convolution_attrs(1),
            r"weight: expected rank 3, 4 or 5 \(a 1-D, 2-D or 3-D convolution\), got float32\[4, 3\]",
        ),
    ],
)
def test_bad_inputs(name, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{name}: {message}"):
        call(name, *inputs, **attrs)
