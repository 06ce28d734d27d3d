"""Transposed convolutions (aten conv_transpose1d, conv_transpose2d.input, conv_transpose3d.input, and
convolution with transposed=True) against the reference (plain loops) and PyTorch, and exported models with them."""

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
    for name, overload in [
        ("conv_transpose1d", "default"),
        ("conv_transpose2d", "input"),
        ("conv_transpose3d", "input"),
        ("convolution", "default"),
    ]:
        assert_schema_is_aten(name, overload)


TRANSPOSED_CASES = [
    # input shape, weight shape (in, out/groups, k...), stride, padding, output_padding, dilation, groups
    ((1, 3, 7), (3, 4, 3), 1, 0, 0, 1, 1),
    ((2, 4, 11), (4, 3, 5), 3, 2, 1, 1, 2),
    ((2, 6, 5), (6, 1, 3), 2, 1, 1, 2, 6),
    ((3, 13), (3, 2, 4), 2, 1, 1, 1, 1),  # unbatched
    ((1, 3, 8, 8), (3, 4, 3, 3), 1, 0, 0, 1, 1),
    ((2, 4, 5, 7), (4, 3, 3, 2), (2, 3), (1, 0), (1, 2), 1, 2),
    ((1, 6, 7, 5), (6, 1, 3, 3), 2, 1, 0, 2, 6),
    ((2, 3, 5, 3), (3, 5, 1, 1), 3, 0, 2, 1, 1),
    ((1, 2, 4, 4), (2, 3, 3, 3), 1, 2, 1, 2, 1),  # output_padding below the dilation, not the stride
    ((1, 32, 9, 9), (32, 16, 4, 4), 2, 1, 0, 1, 1),
    ((2, 32, 16, 16), (32, 16, 4, 4), 2, 1, 0, 1, 1),  # enough work for threads
    ((0, 3, 4, 4), (3, 2, 3, 3), 2, 1, 1, 1, 1),
    ((3, 5, 6), (3, 4, 2, 3), 2, 0, 1, 1, 1),  # unbatched
    ((1, 3, 4, 5, 3), (3, 2, 3, 3, 3), 1, 0, 0, 1, 1),
    ((2, 4, 3, 4, 5), (4, 3, 2, 3, 2), (2, 1, 3), (0, 1, 1), (1, 0, 2), (1, 2, 1), 2),
    ((3, 4, 5, 2), (3, 2, 3, 2, 2), 2, 1, 1, 1, 1),  # unbatched
]
TRANSPOSED = {
    1: ("aten::conv_transpose1d", F.conv_transpose1d),
    2: ("aten::conv_transpose2d.input", F.conv_transpose2d),
    3: ("aten::conv_transpose3d.input", F.conv_transpose3d),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, output_padding, dilation, groups", TRANSPOSED_CASES
)
def test_conv_transpose(
    input_shape, weight_shape, stride, padding, output_padding, dilation, groups, dtype, with_bias, layout
):
    x, w = random(input_shape, dtype, layout=layout), random(weight_shape, dtype, 1, layout)
    b = random((weight_shape[1] * groups,), dtype, 2) if with_bias else None
    attrs = dict(stride=stride, padding=padding, output_padding=output_padding, dilation=dilation, groups=groups)
    name, torch_fn = TRANSPOSED[len(weight_shape) - 2]
    check_op(name, lambda x, w, b: torch_fn(x, w, b, **attrs), x, w, b, tolerance=tolerance(dtype), **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, output_padding, dilation, groups",
    [c for c in TRANSPOSED_CASES if len(c[0]) == len(c[1])],
)
def test_convolution_transposed(input_shape, weight_shape, stride, padding, output_padding, dilation, groups, dtype):
    spatial = len(weight_shape) - 2
    x, w = random(input_shape, dtype), random(weight_shape, dtype, 1)
    b = random((weight_shape[1] * groups,), dtype, 2)
    attrs = dict(
        stride=listed(stride, spatial),
        padding=listed(padding, spatial),
        dilation=listed(dilation, spatial),
        transposed=True,
        output_padding=listed(output_padding, spatial),
        groups=groups,
    )
    check_op(
        "aten::convolution",
        lambda x, w, b: aten.convolution(x, w, b, **attrs),
        x,
        w,
        b,
        tolerance=tolerance(dtype),
        **attrs,
    )


@pytest.mark.parametrize(
    "name, inputs, attrs, message",
    [
        (
            "aten::conv_transpose2d.input",
            [random((1, 3, 4, 4), np.float32), random((4, 2, 3, 3), np.float32)],
            {},
            r"weight: expected 3 input channels \(input float32\[1, 3, 4, 4\]\) in a transposed convolution's weight, "
            r"got float32\[4, 2, 3, 3\]",
        ),
        (
            "aten::conv_transpose2d.input",
            [random((1, 3, 4, 4), np.float32), random((3, 2, 3, 3), np.float32)],
            dict(stride=2, output_padding=2),
            r"output_padding: expected values smaller than the stride or the dilation in each dim, got \[2, 2\] "
            r"\(stride \[2, 2\], dilation \[1, 1\]\)",
        ),
        (
            "aten::conv_transpose1d",
            [random((1, 3, 4), np.float32), random((3, 2, 3), np.float32)],
            dict(output_padding=1),
            r"output_padding: expected values smaller than the stride or the dilation",
        ),
        (
            "aten::conv_transpose1d",
            [random((1, 3, 2), np.float32), random((3, 2, 3), np.float32)],
            dict(padding=3),
            r"input: spatial size 2 gives an output of size -2 \(stride 1, padding 3, dilated kernel 3\); expected at "
            r"least 1",
        ),
        (
            "aten::conv_transpose2d.input",
            [random((1, 4, 4, 4), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(groups=3),
            r"groups: 3 must divide the input channels \(4\) and output channels \(9\)",
        ),
    ],
)
def test_bad_inputs(name, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{name}: {message}"):
        call(name, *inputs, **attrs)


# ---- exported models ---------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")
def test_exported_model_runs():
    """An audio-style stack as torch.export writes it: conv1d.padding ("same", even kernel) and conv_transpose1d;
    and a 3-D one: conv3d and conv_transpose3d.input."""
    from torch import nn

    from opgraph.ir import extract_ir

    torch.manual_seed(0)
    for model, x, ops in [
        (
            nn.Sequential(nn.Conv1d(3, 4, 4, padding="same"), nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1)),
            torch.randn(2, 3, 9),
            ["aten::conv1d.padding", "aten::conv_transpose1d"],
        ),
        (
            nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)),
            torch.randn(1, 2, 3, 4, 5),
            ["aten::conv3d", "aten::conv_transpose3d.input"],
        ),
    ]:
        ir = extract_ir(model.eval(), (x,))
        assert [node.op_type for node in ir.nodes] == ops
        (got,) = ir.to_session().run(x.numpy())
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
