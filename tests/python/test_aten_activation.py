"""The activation ops and their gradients against PyTorch, torch.autograd and
central finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]


def sample(shape, dtype, seed=0):
    """Values spread over the interesting range of every activation."""
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * 3, dtype=dtype)


# Where the float32 approximations of exp, erf and tanh change regime or
# saturate (exp's clamps near +-88, tanh's switch at 0.625, erf's clamp at
# |x| / sqrt(2) = 4), tiny values, and values far past all of them.
EXTREMES = [-100, -88.5, -88, -87.5, -20, -5.7, -0.65, -0.6, -1e-20, 0, 1e-20, 0.6, 0.65, 5.7, 20, 87.5, 88.5, 100]


def extremes(dtype, seed=0):
    return np.random.default_rng(seed).permutation(np.array(EXTREMES, dtype=dtype))


# Inputs by id: shapes chosen to hurt (empty, 0-d, lengths around the vector
# widths, more elements than the threading threshold), strided views the
# registry must copy, and extreme values.
INPUTS = {
    "()": lambda dtype, seed=0: sample((), dtype, seed),
    "(0,)": lambda dtype, seed=0: sample((0,), dtype, seed),
    "(1,)": lambda dtype, seed=0: sample((1,), dtype, seed),
    "(7,)": lambda dtype, seed=0: sample((7,), dtype, seed),
    "(15,)": lambda dtype, seed=0: sample((15,), dtype, seed),
    "(17,)": lambda dtype, seed=0: sample((17,), dtype, seed),
    "(1001,)": lambda dtype, seed=0: sample((1001,), dtype, seed),
    "(3,0,5)": lambda dtype, seed=0: sample((3, 0, 5), dtype, seed),
    "(2,3,5,7)": lambda dtype, seed=0: sample((2, 3, 5, 7), dtype, seed),
    "(70001,)": lambda dtype, seed=0: sample((70001,), dtype, seed),
    "transposed": lambda dtype, seed=0: sample((7, 5), dtype, seed).T,
    "sliced": lambda dtype, seed=0: sample((2002,), dtype, seed)[::2],
    "sliced-2d": lambda dtype, seed=0: sample((6, 9), dtype, seed)[::2, 1::3],
    "extremes": extremes,
}

FORWARD = {
    "relu": ("aten::relu", torch.relu, {}),
    "gelu": ("aten::gelu", F.gelu, {}),
    "gelu-none": ("aten::gelu", lambda x: F.gelu(x, approximate="none"), {"approximate": "none"}),
    "gelu-tanh": ("aten::gelu", lambda x: F.gelu(x, approximate="tanh"), {"approximate": "tanh"}),
    "silu": ("aten::silu", F.silu, {}),
    "sigmoid": ("aten::sigmoid", torch.sigmoid, {}),
    "tanh": ("aten::tanh", torch.tanh, {}),
    "hardtanh": ("aten::hardtanh", F.hardtanh, {}),
    "hardtanh-bounds": ("aten::hardtanh", lambda x: F.hardtanh(x, -0.5, 2), {"min_val": -0.5, "max_val": 2}),
    "dropout": ("aten::dropout", lambda x: F.dropout(x, 0.3, training=False), {"p": 0.3, "train": False}),
}


@pytest.mark.parametrize("layout", INPUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", FORWARD)
def test_forward_matches_torch(op, dtype, layout):
    name, torch_fn, attrs = FORWARD[op]
    x = INPUTS[layout](dtype)
    check_op(name, torch_fn, x, **attrs)


# Gradient op -> (the forward op in torch, its attributes, the opgraph forward
# op, whether the gradient op takes the forward output instead of its input).
BACKWARD = {
    "threshold_backward": ("aten::threshold_backward", torch.relu, {"threshold": 0}, "aten::relu", {}, False),
    "gelu_backward": ("aten::gelu_backward", F.gelu, {}, "aten::gelu", {}, False),
    "gelu_backward-tanh": (
        "aten::gelu_backward",
        lambda x: F.gelu(x, approximate="tanh"),
        {"approximate": "tanh"},
        "aten::gelu",
        {"approximate": "tanh"},
        False,
    ),
    "silu_backward": ("aten::silu_backward", F.silu, {}, "aten::silu", {}, False),
    "sigmoid_backward": ("aten::sigmoid_backward", torch.sigmoid, {}, "aten::sigmoid", {}, True),
    "tanh_backward": ("aten::tanh_backward", torch.tanh, {}, "aten::tanh", {}, True),
    "hardtanh_backward": (
        "aten::hardtanh_backward",
        F.hardtanh,
        {"min_val": -1, "max_val": 1},
        "aten::hardtanh",
        {},
        False,
    ),
    "hardtanh_backward-bounds": (
        "aten::hardtanh_backward",
        lambda x: F.hardtanh(x, -0.5, 2.0),
        {"min_val": -0.5, "max_val": 2.0},
        "aten::hardtanh",
        {"min_val": -0.5, "max_val": 2.0},
        False,
    ),
}


def torch_gradient(forward, x, grad):
    x = torch.tensor(np.asarray(x), requires_grad=True)
    (result,) = torch.autograd.grad(forward(x), x, torch.tensor(np.asarray(grad)))
    return result


@pytest.mark.parametrize("layout", INPUTS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", BACKWARD)
def test_backward_matches_torch_autograd(op, dtype, layout):
    name, forward, attrs, _, _, takes_output = BACKWARD[op]
    x, grad = INPUTS[layout](dtype, seed=1), INPUTS[layout](dtype, seed=2)
    second = forward(torch.from_numpy(np.array(x))).numpy() if takes_output else x
    check_op(name, lambda g, _: torch_gradient(forward, x, g), grad, second, **attrs)


@pytest.mark.parametrize("op", BACKWARD)
def test_backward_matches_finite_differences(op):
    name, _, attrs, forward, forward_attrs, takes_output = BACKWARD[op]
    # Off the kinks of relu and hardtanh (0, -1, 1, -0.5, 2), where there is no derivative.
    x = np.linspace(-4, 4, 41) + 0.01
    grad = np.random.default_rng(3).standard_normal(x.shape)
    h = 1e-6
    numeric = grad * (call(forward, x + h, **forward_attrs) - call(forward, x - h, **forward_attrs)) / (2 * h)
    second = call(forward, x, **forward_attrs) if takes_output else x
    np.testing.assert_allclose(call(name, grad, second, **attrs), numeric, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("dtype", DTYPES)
def test_bounds_are_rounded_to_the_dtype(dtype):
    # 0.1 is not a float32: x == float32(0.1) lies on the bound in float32.
    x = np.array([0.0999, 0.1, 0.1001, 2.1], dtype=dtype)
    grad = np.ones_like(x)
    check_op(
        "aten::threshold_backward", lambda g, t: torch.ops.aten.threshold_backward(g, t, 0.1), grad, x, threshold=0.1
    )
    check_op(
        "aten::hardtanh_backward",
        lambda g, t: torch.ops.aten.hardtanh_backward(g, t, 0.1, 2.1),
        grad,
        x,
        min_val=0.1,
        max_val=2.1,
    )
    check_op("aten::hardtanh", lambda t: F.hardtanh(t, 0.1, 2.1), x, min_val=0.1, max_val=2.1)


def test_backward_links():
    # ATen's gradient op where it takes (grad, the forward inputs, its attributes), opgraph's otherwise.
    assert opgraph.op_backward("aten::gelu") == "aten::gelu_backward"
    assert opgraph.op_backward("aten::silu") == "aten::silu_backward"
    assert opgraph.op_backward("aten::hardtanh") == "aten::hardtanh_backward"
    for name in ["relu", "sigmoid", "tanh"]:
        assert opgraph.op_backward(f"aten::{name}") == f"opgraph::{name}_backward"
    assert opgraph.op_backward("aten::dropout") == ""


@pytest.mark.parametrize(
    "name, overload",
    [
        ("relu", "default"),
        ("gelu", "default"),
        ("silu", "default"),
        ("sigmoid", "default"),
        ("tanh", "default"),
        ("hardtanh", "default"),
        ("dropout", "default"),
        ("threshold_backward", "default"),
        ("gelu_backward", "default"),
        ("sigmoid_backward", "default"),
        ("tanh_backward", "default"),
        ("silu_backward", "default"),
        ("hardtanh_backward", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    schema = str(getattr(getattr(torch.ops.aten, name), overload)._schema)
    assert str(opgraph.op_schema(f"aten::{name}")) == schema


def test_nan_passes_through_relu_and_hardtanh():
    x = np.array([np.nan, -1.0, 2.0])
    for name in ["aten::relu", "aten::hardtanh"]:
        assert np.isnan(call(name, x)[0])


def test_rejects_integer_input():
    with pytest.raises(opgraph.Error, match="aten::relu: self: expected float32 or float64, got int32"):
        call("aten::relu", np.arange(4, dtype=np.int32))


def test_rejects_unknown_gelu_approximation():
    message = 'aten::gelu: approximate: expected "none" or "tanh", got "sigmoid"'
    with pytest.raises(opgraph.Error, match=message):
        call("aten::gelu", np.ones(3), approximate="sigmoid")
    with pytest.raises(opgraph.Error, match="approximate"):
        call("aten::gelu_backward", np.ones(3), np.ones(3), approximate="erf")


def test_rejects_training_mode_dropout():
    with pytest.raises(opgraph.Error, match="training-mode dropout is not supported"):
        call("aten::dropout", np.ones(3), p=0.5, train=True)
    with pytest.raises(opgraph.Error, match=r"p: expected a probability in \[0, 1\], got 1.5"):
        call("aten::dropout", np.ones(3), p=1.5, train=False)


def test_backward_rejects_mismatched_inputs():
    with pytest.raises(opgraph.Error, match=r"self: expected shape \[3\] like grad_output, got \[4\]"):
        call("aten::silu_backward", np.ones(3), np.ones(4))
    with pytest.raises(opgraph.Error, match="output: expected float64 like grad_output, got float32"):
        call("aten::tanh_backward", np.ones(3), np.ones(3, dtype=np.float32))
