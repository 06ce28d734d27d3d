"""The piecewise activations elu, leaky_relu, hardswish and hardsigmoid
(MobileNetV3's) against references and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

TOLERANCE = {np.float32: dict(rtol=3e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def sample(shape, dtype, seed=0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape) * 4, dtype=dtype)


SHAPES = {
    "()": lambda dtype: sample((), dtype),
    "(0,)": lambda dtype: sample((0,), dtype),
    "(17,)": lambda dtype: sample((17,), dtype),
    "(2,7,128)": lambda dtype: sample((2, 7, 128), dtype),
    "(70001,)": lambda dtype: sample((70001,), dtype),
    "transposed": lambda dtype: sample((7, 5), dtype).T,
    # The kinks (0, +-3), signed zeros, infinities, NaN and exp's saturation.
    "special": lambda dtype: np.array(
        [-0.0, 0.0, 3.0, -3.0, 2.999, -3.001, 6.0, np.inf, -np.inf, np.nan, -100.0, -90.0, 1e-30, -1e-30], dtype
    ),
}

OPS = {
    "elu": ("aten::elu", F.elu, {}),
    "elu-params": (
        "aten::elu",
        lambda x: torch.ops.aten.elu(x, 0.5, 2.0, 1.5),
        dict(alpha=0.5, scale=2.0, input_scale=1.5),
    ),
    "elu-int-alpha": ("aten::elu", lambda x: F.elu(x, alpha=2), dict(alpha=2)),
    "leaky_relu": ("aten::leaky_relu", F.leaky_relu, {}),
    "leaky_relu-slope": ("aten::leaky_relu", lambda x: F.leaky_relu(x, 0.2), dict(negative_slope=0.2)),
    "leaky_relu-negative-slope": ("aten::leaky_relu", lambda x: F.leaky_relu(x, -1.5), dict(negative_slope=-1.5)),
    "hardswish": ("aten::hardswish", F.hardswish, {}),
    "hardsigmoid": ("aten::hardsigmoid", F.hardsigmoid, {}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", OPS)
def test_matches_torch(op, shape, dtype):
    name, torch_fn, attrs = OPS[op]
    with np.errstate(all="ignore"):
        got = check_op(name, torch_fn, SHAPES[shape](dtype), tolerance=TOLERANCE[dtype], **attrs)
    if shape == "special":  # zeros keep PyTorch's sign
        want = torch_fn(torch.from_numpy(SHAPES[shape](dtype))).numpy()
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


def test_errors_say_what_was_expected():
    with pytest.raises(opgraph.Error, match=r"aten::hardswish: self: expected float32 or float64, got int64"):
        call("aten::hardswish", np.arange(3))
    with pytest.raises(opgraph.Error, match=r"aten::leaky_relu: attribute 'negative_slope' expects Scalar"):
        call("aten::leaky_relu", np.ones(3, np.float32), negative_slope="0.1")


@pytest.mark.parametrize("name", ["elu", "leaky_relu", "hardswish", "hardsigmoid"])
def test_schema_is_aten(name):
    assert_schema_is_aten(name)
