"""Convolution gradients (opgraph::conv2d_backward, and aten::convolution_backward for 1-D, 2-D, 3-D and
transposed convolutions), and the convolution with a fused activation (opgraph::conv2d) and its gradients
(opgraph::conv2d_act_backward), against the reference, PyTorch autograd and finite differences."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op, convolution_attrs, random

import opgraph
from opgraph.ops import call, call_reference

ACTIVATIONS = {
    "none": lambda t: t,
    "relu": torch.relu,
    "gelu": F.gelu,  # the erf form, torch's default
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu6": F.relu6,
    "silu": F.silu,
}
DTYPES = [np.float32, np.float64]
aten = torch.ops.aten

CASES = [
    # input shape, weight shape, stride, padding, dilation, groups
    ((1, 3, 8, 8), (4, 3, 3, 3), 1, 0, 1, 1),
    ((2, 4, 9, 7), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2),  # groups 2, odd sizes
    ((2, 5, 13, 10), (7, 5, 3, 3), 2, 1, 1, 1),  # stride 2: the last input row is never read
    ((1, 6, 11, 11), (6, 1, 3, 3), 1, 1, 2, 6),  # depthwise, dilation 2
    ((1, 8, 7, 5), (12, 2, 3, 2), 1, (2, 0), (2, 1), 4),
    ((1, 1, 5, 5), (1, 1, 5, 5), 1, 0, 1, 1),  # the kernel covers the input
    ((3, 2, 13, 17), (5, 2, 1, 1), 3, 0, 1, 1),
    ((1, 1001, 3, 3), (5, 1001, 3, 3), 1, 1, 1, 1),
    ((2, 64, 14, 14), (32, 64, 3, 3), 2, 1, 1, 1),
    ((3, 8, 8), (4, 3, 3, 3), 1, 1, 1, 1),  # unbatched
    ((0, 3, 8, 8), (4, 3, 3, 3), 1, 1, 1, 1),  # empty batch
]
CASE_IDS = [f"{x}*{w}" for x, w, *_ in CASES]


def tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def conv_attrs(stride, padding, dilation, groups):
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def autograd(x, w, b, grad, activation="none", **attrs):
    """torch's gradients of activation(conv2d(x, w, b)) for the output gradient grad."""
    tx, tw, tb = (torch.from_numpy(t).requires_grad_() for t in (x, w, b))
    ACTIVATIONS[activation](F.conv2d(tx, tw, tb, **attrs)).backward(torch.from_numpy(grad))
    return [t.grad.numpy() for t in (tx, tw, tb)]


def check_gradients(op, inputs, expected, dtype, **attrs):
    fast = call(op, *inputs, **attrs)
    reference = call_reference(op, *inputs, **attrs)
    assert len(fast) == len(reference) == len(expected) == 3
    for name, got, ref, want in zip(["grad_input", "grad_weight", "grad_bias"], fast, reference, expected):
        assert got.shape == want.shape and got.dtype == want.dtype, f"{name}: {got.dtype}{got.shape}"
        np.testing.assert_allclose(ref, want, **tolerance(dtype), err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tolerance(dtype), err_msg=f"{name}: fast kernel vs reference")


def test_schemas_are_atens():
    assert_schema_is_aten("convolution_backward", "default")


def test_backward_ops_are_registered():
    assert opgraph.op_backward("aten::conv2d") == "opgraph::conv2d_backward"
    assert opgraph.op_backward("opgraph::conv2d") == "opgraph::conv2d_act_backward"


# ---- conv2d_backward -------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("input_shape, weight_shape, stride, padding, dilation, groups", CASES, ids=CASE_IDS)
def test_conv2d_backward_matches_autograd(input_shape, weight_shape, stride, padding, dilation, groups, dtype):
    attrs = conv_attrs(stride, padding, dilation, groups)
    x, w, b = random(input_shape, dtype), random(weight_shape, dtype, 1), random(weight_shape[:1], dtype, 2)
    grad = random(tuple(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), **attrs).shape), dtype, 3)
    check_gradients("opgraph::conv2d_backward", [grad, x, w], autograd(x, w, b, grad, **attrs), dtype, **attrs)


def test_conv2d_backward_takes_strided_inputs():
    attrs = conv_attrs(2, 1, 1, 1)
    x = random((2, 3, 9, 22), np.float32)[:, :, :, ::2]
    w = np.ascontiguousarray(random((3, 4, 3, 3), np.float32, 1).transpose(1, 0, 2, 3))
    grad = random((2, 4, 6, 5), np.float32, 3).transpose(0, 1, 3, 2)
    b = np.zeros(4, np.float32)
    assert not x.flags.c_contiguous and not grad.flags.c_contiguous
    check_gradients(
        "opgraph::conv2d_backward", [grad, x, w], autograd(x.copy(), w, b, grad.copy(), **attrs), np.float32, **attrs
    )


def numeric_gradient(f, wrt, eps=1e-6):
    """d f() / d wrt by central differences, perturbing wrt in place."""
    result = np.zeros_like(wrt)
    for index in np.ndindex(wrt.shape):
        saved = wrt[index]
        wrt[index] = saved + eps
        plus = f()
        wrt[index] = saved - eps
        minus = f()
        wrt[index] = saved
        result[index] = (plus - minus) / (2 * eps)
    return result


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
def test_gradients_match_finite_differences(activation):
    attrs = conv_attrs((2, 1), 1, (1, 2), 2)
    x, w, b = random((2, 4, 5, 6), np.float64), random((2, 2, 3, 2), np.float64, 1), random((2,), np.float64, 2)
    y = call("opgraph::conv2d", x, w, b, activation=activation, **attrs)
    grad = random(y.shape, np.float64, 3)

    def loss():
        return np.sum(grad * call("opgraph::conv2d", x, w, b, activation=activation, **attrs))

    analytic = call("opgraph::conv2d_act_backward", grad, x, w, b, y, activation=activation, **attrs)
    if activation == "none":
        for plain, fused in zip(call("opgraph::conv2d_backward", grad, x, w, **attrs), analytic):
            np.testing.assert_array_equal(plain, fused)
    for got, wrt in zip(analytic, [x, w, b]):
        np.testing.assert_allclose(got, numeric_gradient(loss, wrt), rtol=1e-6, atol=1e-8)


# ---- Fused activation -------------------------------------------------------

FUSED_CASES = [CASES[i] for i in (0, 1, 3, 6, 7, 8, 9)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, dilation, groups",
    FUSED_CASES,
    ids=[f"{x}*{w}" for x, w, *_ in FUSED_CASES],
)
def test_fused_conv2d(input_shape, weight_shape, stride, padding, dilation, groups, activation, with_bias, dtype):
    attrs = conv_attrs(stride, padding, dilation, groups)
    x, w = random(input_shape, dtype), random(weight_shape, dtype, 1)
    bias = [random(weight_shape[:1], dtype, 2)] if with_bias else []

    def expected(x, w, b=None):
        return ACTIVATIONS[activation](F.conv2d(x, w, b, **attrs))

    check_op("opgraph::conv2d", expected, x, w, *bias, tolerance=tolerance(dtype), activation=activation, **attrs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize(
    "input_shape, weight_shape, stride, padding, dilation, groups",
    FUSED_CASES,
    ids=[f"{x}*{w}" for x, w, *_ in FUSED_CASES],
)
def test_fused_conv2d_backward_matches_autograd(
    input_shape, weight_shape, stride, padding, dilation, groups, activation, with_bias, dtype
):
    attrs = conv_attrs(stride, padding, dilation, groups)
    x, w, b = random(input_shape, dtype), random(weight_shape, dtype, 1), random(weight_shape[:1], dtype, 2)
    bias = b if with_bias else None
    y = call("opgraph::conv2d", x, w, bias, activation=activation, **attrs)
    grad = random(y.shape, dtype, 3)
    expected = autograd(x, w, b if with_bias else np.zeros_like(b), grad, activation, **attrs)
    check_gradients(
        "opgraph::conv2d_act_backward", [grad, x, w, bias, y], expected, dtype, activation=activation, **attrs
    )


# ---- Cached primitives -----------------------------------------------------


def test_cached_primitives_read_each_calls_data():
    attrs = conv_attrs(1, 1, 1, 1)
    for seed in range(3):
        x, w, b = (
            random((1, 16, 10, 10), np.float32, seed),
            random((8, 16, 3, 3), np.float32, seed + 10),
            random((8,), np.float32, seed + 20),
        )
        check_op(
            "opgraph::conv2d",
            lambda x, w, b: torch.relu(F.conv2d(x, w, b, **attrs)),
            x,
            w,
            b,
            tolerance=tolerance(np.float32),
            activation="relu",
            **attrs,
        )
        grad = random((1, 8, 10, 10), np.float32, seed + 30)
        check_gradients("opgraph::conv2d_backward", [grad, x, w], autograd(x, w, b, grad, **attrs), np.float32, **attrs)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts(threads):
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(threads)
        attrs = conv_attrs(1, 1, 1, 1)
        x, w, b = (
            random((2, 32, 28, 28), np.float32),
            random((32, 32, 3, 3), np.float32, 1) * 0.1,
            random((32,), np.float32, 2),
        )
        check_op(
            "aten::conv2d",
            lambda x, w, b: F.conv2d(x, w, b, **attrs),
            x,
            w,
            b,
            tolerance=dict(rtol=1e-3, atol=1e-3),
            **attrs,
        )
        grad = random((2, 32, 28, 28), np.float32, 3)
        fast = call("opgraph::conv2d_backward", grad, x, w, **attrs)
        for got, want in zip(fast, autograd(x, w, b, grad, **attrs)):
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    finally:
        opgraph.set_num_threads(previous)


def test_concurrent_calls():
    """Calls from several threads at once, on shapes that share and that miss cached primitives."""

    def run(seed):
        attrs = conv_attrs(1 + seed % 2, 1, 1, 1)
        x, w = random((1, 8, 12 + seed % 3, 12), np.float32, seed), random((8, 8, 3, 3), np.float32, seed + 1)
        got = call("opgraph::conv2d", x, w, None, activation="tanh", **attrs)
        want = torch.tanh(F.conv2d(torch.from_numpy(x), torch.from_numpy(w), **attrs)).numpy()
        np.testing.assert_allclose(got, want, **tolerance(np.float32))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(24)))


# ---- aten::convolution_backward ---------------------------------------------

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
    tol = tolerance(dtype)
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


# ---- Bad input -------------------------------------------------------------


def ones(*shape, dtype=np.float32):
    return np.ones(shape, dtype)


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        (
            "opgraph::conv2d",
            [ones(1, 3, 8, 8), ones(4, 3, 3, 3)],
            dict(activation="swish"),
            r'activation: expected one of "none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "relu6", "silu", got "swish"',
        ),
        (
            "opgraph::conv2d_act_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8), ones(4, 3, 3, 3), None, ones(1, 4, 6, 6)],
            dict(activation="GELU"),
            r'activation: expected one of .*, got "GELU"',
        ),
        (
            "opgraph::conv2d_backward",
            [ones(1, 4, 5, 5), ones(1, 3, 8, 8), ones(4, 3, 3, 3)],
            {},
            r"grad_output: expected float32\[1, 4, 6, 6\] like the convolution's output, got float32\[1, 4, 5, 5\]",
        ),
        (
            "opgraph::conv2d_backward",
            [ones(1, 4, 6, 6, dtype=np.float64), ones(1, 3, 8, 8), ones(4, 3, 3, 3)],
            {},
            r"grad_output: expected float32\[1, 4, 6, 6\] like the convolution's output, got float64\[1, 4, 6, 6\]",
        ),
        (
            "opgraph::conv2d_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8), ones(4, 2, 3, 3)],
            {},
            r"weight: expected 3 input channels per group",
        ),
        (
            "opgraph::conv2d_backward",
            [ones(4, 6, 6), ones(8, 8), ones(4, 3, 3, 3)],
            {},
            r"input: expected rank 4 \(batch, channels, spatial...\), got float32\[8, 8\]",
        ),
        (
            "opgraph::conv2d_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8).astype(np.int64), ones(4, 3, 3, 3).astype(np.int64)],
            {},
            r"input: expected float32 or float64, got int64\[1, 3, 8, 8\]",
        ),
        (
            "opgraph::conv2d_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8), ones(4, 3, 3, 3)],
            dict(dilation=0),
            r"dilation: expected values of at least 1",
        ),
        (
            "opgraph::conv2d_act_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8), ones(4, 3, 3, 3), None, ones(1, 4, 6, 5)],
            dict(activation="relu"),
            r"output: expected float32\[1, 4, 6, 6\] like the convolution's output, got float32\[1, 4, 6, 5\]",
        ),
        (
            "opgraph::conv2d_act_backward",
            [ones(1, 4, 6, 6), ones(1, 3, 8, 8), ones(4, 3, 3, 3), ones(3), ones(1, 4, 6, 6)],
            dict(activation="relu"),
            r"bias: expected float32\[4\], got float32\[3\]",
        ),
        (
            "aten::convolution_backward",
            [random((1, 4, 5, 5), np.float32), random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(convolution_attrs(2), bias_sizes=[4], output_mask=[True, True, True]),
            r"grad_output: expected float32\[1, 4, 6, 6\] like the convolution's output, got float32\[1, 4, 5, 5\]",
        ),
        (
            "aten::convolution_backward",
            [random((1, 4, 6, 6), np.float32), random((1, 3, 8, 8), np.float32), random((4, 3, 3, 3), np.float32)],
            dict(convolution_attrs(2), bias_sizes=[5], output_mask=[True, True, True]),
            r"bias_sizes: expected None or \[4\] \(the output's channels\), got \[5\]",
        ),
    ],
)
def test_bad_inputs(op, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: {message}"):
        call(op, *inputs, **attrs)
