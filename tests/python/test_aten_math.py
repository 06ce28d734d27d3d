"""The elementwise math of transformer blocks (neg, exp, sqrt, rsqrt, erf,
pow with a scalar exponent, rsub, clamp) against references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call


def sample(shape, dtype, seed=0, positive=False):
    values = np.random.default_rng(seed).standard_normal(shape) * 3
    return np.asarray(np.abs(values) + 0.1 if positive else values, dtype=dtype)


SHAPES = {
    "()": lambda **kw: sample((), **kw),
    "(0,)": lambda **kw: sample((0,), **kw),
    "(17,)": lambda **kw: sample((17,), **kw),
    "(2,7,128)": lambda **kw: sample((2, 7, 128), **kw),
    "(70001,)": lambda **kw: sample((70001,), **kw),
    "transposed": lambda **kw: sample((7, 5), **kw).T,
}

OPS = {
    "neg": ("aten::neg", torch.neg, {}, False),
    "exp": ("aten::exp", torch.exp, {}, False),
    "sqrt": ("aten::sqrt", torch.sqrt, {}, True),
    "rsqrt": ("aten::rsqrt", torch.rsqrt, {}, True),
    "erf": ("aten::erf", torch.erf, {}, False),
    "pow-2": ("aten::pow.Tensor_Scalar", lambda t: torch.pow(t, 2), dict(exponent=2), False),
    "pow-3": ("aten::pow.Tensor_Scalar", lambda t: torch.pow(t, 3.0), dict(exponent=3.0), False),
    "pow-half": ("aten::pow.Tensor_Scalar", lambda t: torch.pow(t, 0.5), dict(exponent=0.5), True),
    "pow-minus-one": ("aten::pow.Tensor_Scalar", lambda t: torch.pow(t, -1), dict(exponent=-1), True),
    "pow-other": ("aten::pow.Tensor_Scalar", lambda t: torch.pow(t, 1.7), dict(exponent=1.7), True),
    "rsub": ("aten::rsub.Scalar", lambda t: torch.rsub(t, 1.0), dict(other=1.0), False),
    "rsub-alpha": ("aten::rsub.Scalar", lambda t: torch.rsub(t, 2, alpha=3), dict(other=2, alpha=3), False),
    "clamp": ("aten::clamp", lambda t: torch.clamp(t, -1, 2.5), dict(min=-1, max=2.5), False),
    "clamp-min": ("aten::clamp", lambda t: torch.clamp(t, min=0.5), dict(min=0.5), False),
    "clamp-max": ("aten::clamp", lambda t: torch.clamp(t, max=0), dict(max=0), False),
}

TOLERANCE = {np.float32: dict(rtol=3e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_matches_torch(op, shape, dtype):
    name, torch_fn, attrs, positive = OPS[op]
    check_op(name, torch_fn, SHAPES[shape](dtype=dtype, positive=positive), tolerance=TOLERANCE[dtype], **attrs)


def test_gpt2_gelu_spelled_out():
    # GPT-2's gelu_new, as its exported graph computes it, against the fused tanh gelu.
    x = sample((2, 7, 128), np.float32)
    cube = call("aten::pow.Tensor_Scalar", x, exponent=3.0)
    inner = call(
        "aten::mul.Scalar",
        call("aten::add.Tensor", x, call("aten::mul.Scalar", cube, other=0.044715)),
        other=0.7978845608028654,
    )
    y = call(
        "aten::mul.Tensor",
        call("aten::mul.Scalar", x, other=0.5),
        call("aten::add.Scalar", call("aten::tanh", inner), other=1.0),
    )
    np.testing.assert_allclose(y, call("aten::gelu", x, approximate="tanh"), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "name, overload",
    [
        ("neg", "default"),
        ("exp", "default"),
        ("sqrt", "default"),
        ("rsqrt", "default"),
        ("erf", "default"),
        ("pow", "Tensor_Scalar"),
        ("rsub", "Scalar"),
        ("clamp", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


def test_integer_input_is_a_clear_error():
    with pytest.raises(opgraph.Error, match=r"aten::exp: self: expected float32 or float64, got int64"):
        call("aten::exp", np.arange(3))
    with pytest.raises(opgraph.Error, match=r"aten::pow.Tensor_Scalar: attribute 'exponent' expects Scalar"):
        call("aten::pow.Tensor_Scalar", np.ones(3, np.float32), exponent="2")
