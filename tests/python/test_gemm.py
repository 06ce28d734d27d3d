"""opgraph::gemm (a @ b + bias, then an activation) and its backward, against the
reference, PyTorch and finite differences."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call, call_reference

DTYPES = [np.float32, np.float64]
ACTIVATIONS = {
    "none": lambda z: z,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu6": torch.nn.functional.relu6,
    "silu": torch.nn.functional.silu,
}
# (M, K, N): a row, size-1 and prime sizes, K=1, N=1001, no rows, an empty sum,
# and enough rows for oneDNN's GEMM implementation.
SHAPES = [
    (1, 1, 1),
    (1, 257, 129),
    (3, 5, 7),
    (17, 1, 13),
    (4, 31, 1001),
    (64, 31, 1),
    (0, 4, 3),
    (5, 0, 3),
    (1031, 40, 17),
]
# Sums of a few hundred float32 products, which oneDNN blocks differently.
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-4)
FLOAT64 = dict(rtol=1e-10, atol=1e-12)


def random(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def tolerance(dtype):
    return FLOAT32_SUMS if dtype == np.float32 else FLOAT64


def torch_gemm(activation):
    def gemm(a, b, bias=None):
        z = a @ b if bias is None else torch.addmm(bias, a, b)
        return ACTIVATIONS[activation](z)

    return gemm


def gemm_inputs(m, k, n, dtype, with_bias):
    return [random((m, k), dtype), random((k, n), dtype, 1)] + ([random((n,), dtype, 2)] if with_bias else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_gemm(m, k, n, with_bias, activation, dtype):
    check_op(
        "opgraph::gemm",
        torch_gemm(activation),
        *gemm_inputs(m, k, n, dtype, with_bias),
        activation=activation,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gemm_of_strided_views(activation):
    a, b = random((9, 12), np.float32).T, random((9, 14), np.float32, 1)[:, ::2]
    bias = random((14,), np.float32, 2)[::2]
    check_op("opgraph::gemm", torch_gemm(activation), a, b, bias, activation=activation, tolerance=FLOAT32_SUMS)


@pytest.mark.parametrize("activation", ["none", "relu"])
@pytest.mark.parametrize("m", [1, 64])
def test_large_gemm_uses_threads(m, activation):
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(2)
        inputs = [random((m, 1024), np.float32), random((1024, 512), np.float32, 1), random((512,), np.float32, 2)]
        check_op(
            "opgraph::gemm",
            torch_gemm(activation),
            *inputs,
            activation=activation,
            tolerance=dict(rtol=1e-3, atol=1e-3),
        )
    finally:
        opgraph.set_num_threads(previous)


def torch_gradients(inputs, activation, grad):
    """Autograd's gradients of gemm (a zero-size bias gradient without a bias)."""
    tensors = [torch.from_numpy(x).requires_grad_() for x in inputs]
    torch_gemm(activation)(*tensors).backward(torch.from_numpy(grad))
    grads = [t.grad if t.grad is not None else torch.zeros_like(t) for t in tensors]
    return grads + ([] if len(inputs) == 3 else [torch.zeros(0, dtype=tensors[0].dtype)])


def backward_inputs(inputs, activation):
    bias = inputs[2] if len(inputs) == 3 else None
    output = call("opgraph::gemm", *inputs[:2], bias, activation=activation)
    grad = random(output.shape, output.dtype, 3)
    return [grad, inputs[0], inputs[1], bias, output]


def test_gemm_backward_is_registered():
    assert opgraph.op_backward("opgraph::gemm") == "opgraph::gemm_backward"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_gemm_backward_matches_autograd(m, k, n, with_bias, activation, dtype):
    inputs = gemm_inputs(m, k, n, dtype, with_bias)
    args = backward_inputs(inputs, activation)
    expected = torch_gradients(inputs, activation, args[0])
    fast = call("opgraph::gemm_backward", *args, activation=activation)
    reference = call_reference("opgraph::gemm_backward", *args, activation=activation)
    for name, got, ref, want in zip(["grad_a", "grad_b", "grad_bias"], fast, reference, expected):
        assert got.shape == tuple(want.shape), name
        np.testing.assert_allclose(ref, want.numpy(), **tolerance(dtype), err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tolerance(dtype), err_msg=f"{name}: fast kernel vs reference")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_gemm_backward_matches_finite_differences(activation):
    a, b, bias = random((3, 5), np.float64), random((5, 4), np.float64, 1), random((4,), np.float64, 2)
    grad = random((3, 4), np.float64, 3)
    output = call("opgraph::gemm", a, b, bias, activation=activation)
    analytic = call("opgraph::gemm_backward", grad, a, b, bias, output, activation=activation)
    step = 1e-6

    def numeric(wrt):
        result = np.zeros_like(wrt)
        for index in np.ndindex(wrt.shape):
            saved = wrt[index]
            values = []
            for bumped in (saved + step, saved - step):
                wrt[index] = bumped
                values.append(np.sum(grad * call("opgraph::gemm", a, b, bias, activation=activation)))
            wrt[index] = saved
            result[index] = (values[0] - values[1]) / (2 * step)
        return result

    for name, got, wrt in zip(["grad_a", "grad_b", "grad_bias"], analytic, [a, b, bias]):
        np.testing.assert_allclose(got, numeric(wrt), rtol=1e-6, atol=1e-8, err_msg=name)


def test_gemm_backward_uses_threads():
    previous = opgraph.get_num_threads()
    try:
        opgraph.set_num_threads(2)
        inputs = gemm_inputs(256, 300, 512, np.float32, True)
        args = backward_inputs(inputs, "gelu")
        expected = torch_gradients(inputs, "gelu", args[0])
        for got, want in zip(call("opgraph::gemm_backward", *args, activation="gelu"), expected):
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-3, atol=1e-3)
    finally:
        opgraph.set_num_threads(previous)


F32 = np.float32


@pytest.mark.parametrize(
    "inputs, attrs, message",
    [
        (
            [np.ones((2, 3), F32), np.ones((3, 4), F32)],
            dict(activation="swish"),
            r'activation: expected one of "none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "relu6", "silu", got "swish"',
        ),
        (
            [np.ones((2, 3), F32), np.ones((4, 5), F32)],
            {},
            r"cannot multiply float32\[2, 3\] by float32\[4, 5\]: inner dimensions 3 and 4 differ",
        ),
        ([np.ones(3, F32), np.ones((3, 4), F32)], {}, r"a: expected rank 2, got float32\[3\]"),
        ([np.ones((2, 3), F32), np.ones((1, 3, 4), F32)], {}, r"b: expected rank 2, got float32\[1, 3, 4\]"),
        ([np.ones((2, 3), F32), np.ones((3, 4), np.float64)], {}, r"b: expected float32 like a, got float64\[3, 4\]"),
        (
            [np.ones((2, 3), np.int64), np.ones((3, 4), np.int64)],
            {},
            r"a: expected float32, float64 or bfloat16, got int64\[2, 3\]",
        ),
        (
            [np.ones((2, 3), F32), np.ones((3, 4), F32), np.ones(3, F32)],
            {},
            r"bias: expected float32\[4\] \(one per column of b\), got float32\[3\]",
        ),
        (
            [np.ones((2, 3), F32), np.ones((3, 4), F32), np.ones(4, np.float64)],
            {},
            r"bias: expected float32 like a, got float64\[4\]",
        ),
    ],
)
def test_bad_inputs(inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^opgraph::gemm: {message}"):
        call("opgraph::gemm", *inputs, **attrs)


def test_backward_bad_inputs():
    a, b, good = np.ones((3, 2), F32), np.ones((2, 4), F32), np.ones((3, 4), F32)
    with pytest.raises(
        opgraph.Error,
        match=r"^opgraph::gemm_backward: grad_output: expected float32\[3, 4\] like "
        r"gemm's output, got float32\[3, 5\]",
    ):
        call("opgraph::gemm_backward", np.ones((3, 5), F32), a, b, None, good)
    with pytest.raises(
        opgraph.Error,
        match=r"^opgraph::gemm_backward: output: expected float32\[3, 4\] like "
        r"gemm's output, got float64\[3, 4\]",
    ):
        call("opgraph::gemm_backward", good, a, b, None, good.astype(np.float64))
    with pytest.raises(
        opgraph.Error, match=r'^opgraph::gemm_backward: activation: expected one of "none", .* got "elu"'
    ):
        call("opgraph::gemm_backward", good, a, b, None, good, activation="elu")


# -- bfloat16 -----------------------------------------------------------------------
# NumPy has no bfloat16: the inputs are torch bfloat16 tensors, and so are the
# results (returned, or written into `out`). The expected values are the
# float32 computation of the same (bfloat16) inputs; the kernels sum in
# float32 and round each result to bfloat16 once, so they differ from it by
# bfloat16's rounding (2^-8 relative), plus, in the backward, the rounding of
# dz = grad_output * f'(z) to bfloat16 before its products, which grows with
# the length of the sums.
BF16_ACTIVATIONS = ["none", "relu", "gelu", "sigmoid", "tanh"]
BF16_SHAPES = [(1, 1, 1), (3, 5, 7), (17, 64, 33), (5, 0, 3), (0, 4, 3), (130, 200, 70)]


def bf16_random(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)).bfloat16()


def bf16_inputs(m, k, n, with_bias=True):
    return [bf16_random((m, k), 0), bf16_random((k, n), 1), bf16_random((n,), 2) if with_bias else None]


def bf16_gemm(run, a, b, bias, activation):
    result = run("opgraph::gemm", a, b, bias, activation=activation)
    assert isinstance(result, torch.Tensor) and result.dtype == torch.bfloat16
    return result


def bf16_gemm_backward(run, grad, a, b, bias, output, activation):
    grad_bias = torch.empty_like(bias) if bias is not None else torch.empty(0, dtype=torch.bfloat16)
    out = (torch.empty_like(a), torch.empty_like(b), grad_bias)
    return run("opgraph::gemm_backward", grad, a, b, bias, output, activation=activation, out=out)


def assert_close_to_bf16(actual, expected, k, name):
    """Within bfloat16's rounding of the result (relative) and of k rounded
    terms summed (absolute: it shows where the sum cancels)."""
    assert actual.dtype == torch.bfloat16, name
    torch.testing.assert_close(
        actual.float(), expected.float(), rtol=2e-2, atol=1e-2 * max(1, k) ** 0.5, msg=lambda why: f"{name}: {why}"
    )


def bf16_cases(test):
    """Parametrizes a bfloat16 test over each activation, with and without a bias, and each shape."""
    test = pytest.mark.parametrize("m, k, n", BF16_SHAPES)(test)
    test = pytest.mark.parametrize("with_bias", [True, False])(test)
    return pytest.mark.parametrize("activation", BF16_ACTIVATIONS)(test)


@bf16_cases
def test_bfloat16_gemm_matches_float32_and_the_reference(m, k, n, with_bias, activation):
    a, b, bias = bf16_inputs(m, k, n, with_bias)
    fast = bf16_gemm(call, a, b, bias, activation)
    reference = bf16_gemm(call_reference, a, b, bias, activation)
    wide = [None if x is None else x.float() for x in (a, b, bias)]
    expected = torch_gemm(activation)(*wide)
    assert_close_to_bf16(reference, expected, k, "reference vs float32")
    assert_close_to_bf16(fast, reference, k, "fast kernel vs reference")


@bf16_cases
def test_bfloat16_gemm_backward_matches_float32_autograd_and_the_reference(m, k, n, with_bias, activation):
    a, b, bias = bf16_inputs(m, k, n, with_bias)
    output = bf16_gemm(call, a, b, bias, activation)
    grad = bf16_random((m, n), 3)
    fast = bf16_gemm_backward(call, grad, a, b, bias, output, activation)
    reference = bf16_gemm_backward(call_reference, grad, a, b, bias, output, activation)
    wide = [x.float().requires_grad_() for x in (a, b, bias) if x is not None]
    torch_gemm(activation)(*wide).backward(grad.float())
    expected = [x.grad if x.grad is not None else torch.zeros_like(x) for x in wide]
    expected += [] if with_bias else [torch.zeros(0)]
    # dz's error, from z's rounding (k terms), is summed again over m or n.
    length = max(m, k, n)
    for name, got, ref, want in zip(["grad_a", "grad_b", "grad_bias"], fast, reference, expected):
        assert got.shape == want.shape, name
        assert_close_to_bf16(ref, want, length, f"{name}: reference vs float32 autograd")
        assert_close_to_bf16(got, ref, length, f"{name}: fast kernel vs reference")


def test_bfloat16_gemm_backward_matches_torch_bfloat16_autograd():
    a, b, bias = (x.requires_grad_() for x in bf16_inputs(64, 96, 48))
    output = torch.nn.functional.gelu(torch.addmm(bias, a, b))
    grad = bf16_random(output.shape, 3)
    output.backward(grad)
    ours = bf16_gemm_backward(call, grad, a.detach(), b.detach(), bias.detach(), output.detach(), "gelu")
    for name, got, want in zip(["grad_a", "grad_b", "grad_bias"], ours, (a.grad, b.grad, bias.grad)):
        assert_close_to_bf16(got, want, 64, name)


@pytest.mark.parametrize(
    "b, bias, message",
    [
        (torch.ones(3, 4), None, r"b: expected bfloat16 like a, got float32\[3, 4\]"),
        (torch.ones(3, 4, dtype=torch.bfloat16), torch.ones(4), r"bias: expected bfloat16 like a, got float32\[4\]"),
    ],
)
def test_bfloat16_mixed_with_another_dtype_names_the_argument(b, bias, message):
    with pytest.raises(opgraph.Error, match=f"^opgraph::gemm: {message}"):
        call("opgraph::gemm", torch.ones(2, 3, dtype=torch.bfloat16), b, bias)


def test_float16_names_the_dtypes_gemm_takes():
    a, b = torch.ones(2, 3, dtype=torch.float16), torch.ones(3, 4, dtype=torch.float16)
    with pytest.raises(
        opgraph.Error, match=r"^opgraph::gemm: a: expected float32, float64 or bfloat16, got float16\[2, 3\]"
    ):
        call("opgraph::gemm", a, b)
    grad = torch.ones(2, 4, dtype=torch.float16)
    with pytest.raises(opgraph.Error, match=r"^opgraph::gemm_backward: a: expected float32, float64 or bfloat16"):
        call("opgraph::gemm_backward", grad, a, b, None, grad)


def test_the_other_products_still_refuse_bfloat16():
    a = torch.ones(2, 3, dtype=torch.bfloat16)
    with pytest.raises(opgraph.Error, match=r"^aten::mm: self: expected float32 or float64, got bfloat16\[2, 3\]"):
        call("aten::mm", a, a.T.contiguous())
