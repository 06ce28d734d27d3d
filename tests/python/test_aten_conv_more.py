"""3-D and transposed convolutions, "same"/"valid" padding, and convolution_backward, against the reference
(plain loops) and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call, call_reference

aten = torch.ops.aten
DTYPES = [np.float32, np.float64]


def random(shape, dtype, seed=0, layout="contiguous"):
    rng = np.random.default_rng(seed)
    if layout == "transposed":  # the same values, laid out with the dims reversed
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    return rng.standard_normal(shape).astype(dtype)


def tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else None


def test_schemas_are_atens():
    for name, overload in [
        ("conv3d", "default"),
        ("conv1d", "padding"),
        ("conv2d", "padding"),
        ("conv3d", "padding"),
        ("conv_transpose1d", "default"),
        ("conv_transpose2d", "input"),
        ("conv_transpose3d", "input"),
        ("convolution", "default"),
        ("convolution_backward", "default"),
    ]:
        assert_schema_is_aten(name, overload)


# ---- 3-D ------------------------------------------------------------------------

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


# ---- transposed ---------------------------------------------------------------------

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


def listed(value, spatial):
    return list(value) if isinstance(value, tuple) else [value] * spatial


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


# ---- "same" and "valid" ------------------------------------------------------------

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


# ---- convolution_backward ----------------------------------------------------------

BACKWARD_CASES = [
    # input shape, weight shape, stride, padding, dilation, transposed, output_padding, groups
    ((2, 3, 11), (4, 3, 3), [2], [1], [1], False, [0], 1),
    ((1, 4, 9, 7), (6, 2, 3, 2), [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
    ((2, 3, 5, 6, 4), (4, 3, 3, 2, 3), [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 1),
    ((2, 64, 14, 14), (32, 64, 3, 3), [2, 2], [1, 1], [1, 1], False, [0, 0], 1),
    ((2, 4, 11), (4, 3, 5), [3], [2], [1], True, [1], 2),
    ((1, 6, 7, 5), (6, 1, 3, 3), [2, 2], [1, 1], [2, 2], True, [0, 1], 6),
    ((2, 4, 3, 4, 5), (4, 3, 2, 3, 2), [2, 1, 3], [0, 1, 1], [1, 2, 1], True, [1, 0, 2], 2),
    ((1, 32, 9, 9), (32, 16, 4, 4), [2, 2], [1, 1], [1, 1], True, [0, 0], 1),
    ((0, 3, 6, 6), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
]
BACKWARD_MASKS = [
    [True, True, True],
    [True, False, False],
    [False, True, False],
    [False, False, True],
    [False, True, True],
]


@pytest.mark.parametrize("mask", BACKWARD_MASKS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, dilation, transposed, output_padding, groups", BACKWARD_CASES
)
def test_convolution_backward(
    input_shape, weight_shape, stride, padding, dilation, transposed, output_padding, groups, dtype, mask
):
    x, w = random(input_shape, dtype, layout="transposed"), random(weight_shape, dtype, 1)
    out_channels = weight_shape[1] * groups if transposed else weight_shape[0]
    conv = dict(
        stride=stride,
        padding=padding,
        dilation=dilation,
        transposed=transposed,
        output_padding=output_padding,
        groups=groups,
    )
    grad = random(aten.convolution(torch.from_numpy(x), torch.from_numpy(w), None, **conv).shape, dtype, 2)
    attrs = dict(bias_sizes=[out_channels], **conv)
    fast = call("aten::convolution_backward", grad, x, w, output_mask=mask, **attrs)
    reference = call_reference("aten::convolution_backward", grad, x, w, output_mask=mask, **attrs)
    expected = aten.convolution_backward(
        torch.from_numpy(grad), torch.from_numpy(x), torch.from_numpy(w), output_mask=mask, **attrs
    )
    tol = tolerance(dtype) or dict(rtol=1e-10, atol=1e-10)
    for name, wanted, got, ref, want in zip(
        ["grad_input", "grad_weight", "grad_bias"], mask, fast, reference, expected
    ):
        if not wanted:
            assert got.shape == ref.shape == (0,), name
            continue
        assert got.shape == want.shape and got.dtype == want.numpy().dtype, f"{name}: {got.dtype}{got.shape}"
        np.testing.assert_allclose(ref, want.numpy(), **tol, err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tol, err_msg=f"{name}: fast kernel vs reference")


def test_convolution_backward_without_bias_sizes():
    x, w = random((1, 3, 6, 6), np.float32), random((4, 3, 3, 3), np.float32, 1)
    grad = random((1, 4, 4, 4), np.float32, 2)
    attrs = dict(
        bias_sizes=None,
        stride=[1, 1],
        padding=[0, 0],
        dilation=[1, 1],
        transposed=False,
        output_padding=[0, 0],
        groups=1,
        output_mask=[False, False, True],
    )
    np.testing.assert_allclose(
        call("aten::convolution_backward", grad, x, w, **attrs)[2], grad.sum(axis=(0, 2, 3)), rtol=1e-5
    )


# ---- errors ----------------------------------------------------------------------


def conv_attrs(spatial, transposed=False, **given):
    attrs = dict(
        stride=[1] * spatial,
        padding=[0] * spatial,
        dilation=[1] * spatial,
        transposed=transposed,
        output_padding=[0] * spatial,
        groups=1,
    )
    attrs.update(given)
    return attrs


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
        (
            "aten::convolution",
            [random((1, 3, 8, 8), np.float32), random((4, 3, 3), np.float32), None],
            conv_attrs(1),
            r"input: expected rank 3 \(batch, channels, spatial...\)",
        ),
        (
            "aten::convolution",
            [random((1, 3, 8), np.float32), random((4, 3), np.float32), None],
            conv_attrs(1),
            r"weight: expected rank 3, 4 or 5 \(a 1-D, 2-D or 3-D convolution\), got float32\[4, 3\]",
        ),
        (
            "aten::convolution_backward",
            [random((1, 4, 5, 5), np.float32), random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(conv_attrs(2), bias_sizes=[4], output_mask=[True, True, True]),
            r"grad_output: expected float32\[1, 4, 6, 6\] like the convolution's output, got float32\[1, 4, 5, 5\]",
        ),
        (
            "aten::convolution_backward",
            [random((1, 4, 6, 6), np.float32), random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(conv_attrs(2), bias_sizes=[5], output_mask=[True, True, True]),
            r"bias_sizes: expected None or \[4\] \(the output's channels\), got \[5\]",
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
            ["aten.conv1d.padding", "aten.conv_transpose1d.default"],
        ),
        (
            nn.Sequential(nn.Conv3d(2, 4, 3, padding=1), nn.ConvTranspose3d(4, 2, 2, stride=2, groups=2)),
            torch.randn(1, 2, 3, 4, 5),
            ["aten.conv3d.default", "aten.conv_transpose3d.input"],
        ),
    ]:
        ir = extract_ir(model.eval(), (x,))
        assert [node.op_type for node in ir.nodes] == ops
        (got,) = ir.to_session().run(x.numpy())
        np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)
