"""Unary math (trigonometric, hyperbolic, logarithms, expm1, reciprocal, abs,
sign, rounding, isinf, isnan, and neg on integers) against references and
PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

FLOATS = [np.float32, np.float64]
INTEGERS = [np.int32, np.int64]
TOLERANCE = {np.float32: dict(rtol=3e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


# Where each op is defined: values are drawn there.
def real(x):
    return x * 3


def unit(x):  # (-1, 1)
    return np.tanh(x)


def at_least_one(x):
    return 1 + np.abs(x) * 3


def positive(x):
    return np.abs(x) * 3 + 1e-3


def above_minus_one(x):
    return np.abs(x) * 3 - 0.99


def sample(shape, dtype, domain=real, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    if np.issubdtype(dtype, np.integer):
        return np.asarray(np.round(values * 1000), dtype=dtype)
    if dtype == np.bool_:
        return np.asarray(values > 0)
    return np.asarray(domain(values), dtype=dtype)


SHAPES = {
    "()": lambda **kw: sample((), **kw),
    "(0,)": lambda **kw: sample((0,), **kw),
    "(17,)": lambda **kw: sample((17,), **kw),
    "(2,7,128)": lambda **kw: sample((2, 7, 128), **kw),
    "(70001,)": lambda **kw: sample((70001,), **kw),
    "transposed": lambda **kw: sample((7, 5), **kw).T,
}

# name: (torch function, domain)
FLOAT_OPS = {
    "sin": (torch.sin, real),
    "cos": (torch.cos, real),
    "tan": (torch.tan, real),
    "asin": (torch.asin, unit),
    "acos": (torch.acos, unit),
    "atan": (torch.atan, real),
    "sinh": (torch.sinh, real),
    "cosh": (torch.cosh, real),
    "asinh": (torch.asinh, real),
    "acosh": (torch.acosh, at_least_one),
    "atanh": (torch.atanh, unit),
    "expm1": (torch.expm1, real),
    "log": (torch.log, positive),
    "log2": (torch.log2, positive),
    "log10": (torch.log10, positive),
    "log1p": (torch.log1p, above_minus_one),
    "reciprocal": (torch.reciprocal, real),
    "abs": (torch.abs, real),
    "sign": (torch.sign, real),
    "ceil": (torch.ceil, real),
    "floor": (torch.floor, real),
    "round": (torch.round, real),
    "trunc": (torch.trunc, real),
    "isinf": (torch.isinf, real),
    "isnan": (torch.isnan, real),
}

# Ops that also take integers (and, for some, bool), as ATen does.
INTEGER_OPS = ["abs", "sign", "ceil", "floor", "round", "trunc", "isinf", "isnan", "neg"]
BOOL_OPS = ["sign", "isinf", "isnan"]
INTEGER_CASES = [(op, dtype) for op in INTEGER_OPS for dtype in INTEGERS + ([np.bool_] if op in BOOL_OPS else [])]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op", FLOAT_OPS)
def test_floats_match_torch(op, shape, dtype):
    torch_fn, domain = FLOAT_OPS[op]
    check_op(f"aten::{op}", torch_fn, SHAPES[shape](dtype=dtype, domain=domain), tolerance=TOLERANCE[dtype])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("op, dtype", INTEGER_CASES)
def test_integers_match_torch(op, dtype, shape):
    check_op(f"aten::{op}", getattr(torch, op), SHAPES[shape](dtype=dtype))


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", INTEGER_OPS)
def test_integer_extremes(op, dtype):
    # The lowest value has no positive counterpart: abs and neg wrap to it, as in PyTorch.
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1, 0, 1, info.max], dtype=dtype)
    check_op(f"aten::{op}", getattr(torch, op), x)


# Signed zeros, infinities, NaN, the ends of each domain and values just past
# them, tiny and huge magnitudes (within what PyTorch's vectorized sinh and
# cosh reach before overflowing early), and halves (round ties to even).
SPECIAL = [
    -0.0,
    0.0,
    np.inf,
    -np.inf,
    np.nan,
    1.0,
    -1.0,
    1.5,
    -1.5,
    0.5,
    -0.5,
    2.5,
    -2.5,
    3.5,
    -3.5,
    1.0000001,
    -1.0000001,
    1e-30,
    -1e-30,
    1e-8,
    -1e-8,
    0.49999997,
    -0.49999997,
    1e30,
    -1e30,
    88.0,
    -88.0,
    709.0,
    -709.0,
    8388607.5,
    -8388607.5,
    8388609.0,
    4503599627370495.5,
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", [*FLOAT_OPS, "neg"])
def test_special_values(op, dtype):
    x = np.array(SPECIAL, dtype=dtype)
    with np.errstate(all="ignore"):
        got = check_op(f"aten::{op}", getattr(torch, op), x, tolerance=TOLERANCE[dtype])
    want = getattr(torch, op)(torch.from_numpy(x)).numpy()
    if got.dtype != np.bool_:  # zeros keep PyTorch's sign
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


def test_float_log_over_every_magnitude():
    # The vectorized float log: subnormals, values near 1 (where log is
    # small and must keep its relative precision) and the largest floats.
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            10.0 ** rng.uniform(-45, 38.5, 70001),
            1 + rng.uniform(-1e-3, 1e-3, 1001),
            [1.4e-45, 1e-40, 1.1754942e-38, 1.1754944e-38, 0.70710677, 0.7071068, 3.4028235e38],
        ]
    )
    check_op("aten::log", torch.log, x.astype(np.float32), tolerance=TOLERANCE[np.float32])


@pytest.mark.parametrize("dtype", FLOATS)
def test_round_halves_to_even(dtype):
    x = np.arange(-10.5, 11, 1.0, dtype=dtype)
    np.testing.assert_array_equal(call("aten::round", x), np.arange(-10, 12, 2).repeat(2)[: x.size])
    np.testing.assert_array_equal(call("aten::round", x), torch.round(torch.from_numpy(x)).numpy())


def test_round_ties_in_a_large_tensor():
    x = (np.arange(70001, dtype=np.float32) - 35000) + np.float32(0.5)
    check_op("aten::round", torch.round, x)


def test_errors_say_what_was_expected():
    with pytest.raises(opgraph.Error, match=r"aten::sin: self: expected float32 or float64, got int64"):
        call("aten::sin", np.arange(3))
    with pytest.raises(opgraph.Error, match=r"aten::abs: self: expected float32, float64, int32 or int64, got bool"):
        call("aten::abs", np.ones(3, np.bool_))
    with pytest.raises(opgraph.Error, match=r"aten::reciprocal: self: expected float32 or float64, got int32"):
        call("aten::reciprocal", np.ones(3, np.int32))


@pytest.mark.parametrize("name", [*FLOAT_OPS, "neg"])
def test_schema_is_aten(name):
    assert_schema_is_aten(name)
