"""Convolutions with "same" or "valid" padding (aten conv1d.padding, conv2d.padding, conv3d.padding) against the
reference (plain loops) and PyTorch."""

import numpy as np
import pytest
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op, random
from oracle import sums_tolerance as tolerance

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]


def test_schemas_are_atens():
    for name, overload in [
        ("conv1d", "padding"),
        ("conv2d", "padding"),
        ("conv3d", "padding"),
    ]:
        assert_schema_is_aten(name, overload)


STR_PADDING_CASES = [
    # input shape, weight shape, dilation, groups
    ((2, 3, 17), (4, 3, 3), 1, 1),
    ((1, 4, 16), (4, 2, 4), 1, 2),  # even kernel: one more padding after the input than before
    ((2, 2, 19), (3, 2, 4), 3, 1),  # odd total padding, dilated
    ((3, 11), (2, 3, 5), 2, 1),  # unbatched
    ((1, 3, 9, 8), (4, 3, 3, 2), 1, 1),
    ((2, 4, 7, 10), (8, 1, 2, 5), (2, 1), 4),
    ((1, 2, 5, 5), (2, 2, 5, 5), 1, 1),
    ((3, 8, 8), (4, 3, 2, 2), 1, 1),  # unbatched
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 4), (1, 2, 1), 1),
]
STR_PADDING = {
    1: ("aten::conv1d.padding", F.conv1d),
    2: ("aten::conv2d.padding", F.conv2d),
    3: ("aten::conv3d.padding", F.conv3d),
}


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape, weight_shape, dilation, groups", STR_PADDING_CASES)
def test_str_padding(input_shape, weight_shape, dilation, groups, dtype, padding):
    x, w, b = (
        random(input_shape, dtype, layout="transposed"),
        random(weight_shape, dtype, 1),
        random((weight_shape[0],), dtype, 2),
    )
    name, torch_fn = STR_PADDING[len(weight_shape) - 2]
    attrs = dict(padding=padding, dilation=dilation, groups=groups)
    got = check_op(name, lambda x, w, b: torch_fn(x, w, b, **attrs), x, w, b, tolerance=tolerance(dtype), **attrs)
    if padding == "same":
        assert got.shape[-len(weight_shape) + 2 :] == input_shape[-len(weight_shape) + 2 :]


@pytest.mark.parametrize(
    "name, inputs, attrs, message",
    [
        (
            "aten::conv2d.padding",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(padding="same", stride=2),
            r"padding: \"same\" is not supported for strided convolutions \(stride \[2, 2\]\)",
        ),
        (
            "aten::conv1d.padding",
            [random((1, 3, 8), np.float32), random((4, 3, 3), np.float32)],
            dict(padding="full"),
            r"padding: expected \"valid\" or \"same\", got \"full\"",
        ),
    ],
)
def test_bad_inputs(name, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{name}: {message}"):
        call(name, *inputs, **attrs)
