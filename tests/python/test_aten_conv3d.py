"""3-D convolutions (aten conv3d, and convolution with a 3-D weight) against the reference (plain loops) and
PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op, listed, random
from oracle import sums_tolerance as tolerance

import opgraph
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64]


def test_schemas_are_atens():
    assert_schema_is_aten("conv3d", "default")


CONV3D_CASES = [
    # input shape, weight shape, stride, padding, dilation, groups
    ((1, 3, 5, 6, 7), (4, 3, 3, 3, 3), 1, 0, 1, 1),
    ((2, 4, 7, 5, 6), (6, 2, 3, 2, 1), (2, 1, 3), (1, 0, 2), 1, 2),
    ((1, 6, 7, 7, 7), (6, 1, 3, 3, 3), 1, 1, 2, 6),
    ((2, 2, 3, 11, 5), (5, 2, 1, 1, 1), 2, 0, 1, 1),
    ((1, 16, 5, 8, 8), (32, 16, 3, 3, 3), 1, 1, 1, 1),
    ((0, 3, 4, 4, 4), (4, 3, 3, 3, 3), 1, 1, 1, 1),
    ((3, 5, 6, 7), (4, 3, 2, 2, 2), 1, 1, 1, 1),  # unbatched
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape, weight_shape, stride, padding, dilation, groups", CONV3D_CASES)
def test_conv3d(input_shape, weight_shape, stride, padding, dilation, groups, dtype, with_bias, layout):
    x, w = random(input_shape, dtype, layout=layout), random(weight_shape, dtype, 1)
    b = random((weight_shape[0],), dtype, 2) if with_bias else None
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    check_op("aten::conv3d", lambda x, w, b: F.conv3d(x, w, b, **attrs), x, w, b, tolerance=tolerance(dtype), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, dilation, groups", [c for c in CONV3D_CASES if len(c[0]) == 5]
)
def test_convolution_3d(input_shape, weight_shape, stride, padding, dilation, groups, dtype):
    x, w = random(input_shape, dtype), random(weight_shape, dtype, 1)
    attrs = dict(
        stride=listed(stride, 3),
        padding=listed(padding, 3),
        dilation=listed(dilation, 3),
        transposed=False,
        output_padding=[0, 0, 0],
        groups=groups,
    )
    check_op(
        "aten::convolution",
        lambda x, w, b: aten.convolution(x, w, b, **attrs),
        x,
        w,
        None,
        tolerance=tolerance(dtype),
        **attrs,
    )


@pytest.mark.parametrize(
    "name, inputs, attrs, message",
    [
        (
            "aten::conv3d",
            [random((1, 3, 4, 4, 4), np.float32), random((4, 2, 3, 3, 3), np.float32)],
            {},
            r"weight: expected 3 input channels per group",
        ),
        (
            "aten::conv3d",
            [random((3, 4, 4), np.float32), random((4, 3, 3, 3, 3), np.float32)],
            {},
            r"input: expected rank 5 \(batch, channels, spatial...\), got float32\[3, 4, 4\]",
        ),
    ],
)
def test_bad_inputs(name, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{name}: {message}"):
        call(name, *inputs, **attrs)
