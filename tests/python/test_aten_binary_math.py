"""Binary math with broadcasting (atan2, pow, fmod, remainder, div with a
rounding mode, clamp with tensor bounds, bitwise ops with a Scalar, logical
ops) against references and PyTorch."""

import itertools

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

FLOATS = [np.float32, np.float64]
INTEGERS = [np.int32, np.int64]
TOLERANCE = {np.float32: dict(rtol=3e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-12)}


def sample(shape, dtype, seed=0, divisor=False, small=False):
    """Normal values; integers among -30..30 (-5..5 when small); a divisor
    stays away from zero."""
    values = np.random.default_rng(seed).standard_normal(shape) * 3
    if divisor:
        values = np.where(values < 0, values - 0.5, values + 0.5)
    if dtype == np.bool_:
        return np.asarray(values > 0)
    if np.issubdtype(dtype, np.integer):
        values = np.round(values * (5 / 3 if small else 10))
        if divisor:
            values = np.where(values == 0, 3, values)
    return np.asarray(values, dtype=dtype)


def tolerance(dtype):
    return TOLERANCE.get(dtype)


# name: (op, torch function, attributes, dtypes, how the second operand is drawn)
TENSOR_OPS = {
    "atan2": ("aten::atan2", torch.atan2, {}, FLOATS, {}),
    "pow": ("aten::pow.Tensor_Tensor", torch.pow, {}, FLOATS + INTEGERS, dict(small=True)),
    "fmod": ("aten::fmod.Tensor", torch.fmod, {}, FLOATS + INTEGERS, dict(divisor=True)),
    "remainder": ("aten::remainder.Tensor", torch.remainder, {}, FLOATS + INTEGERS, dict(divisor=True)),
    "div-none": (
        "aten::div.Tensor_mode",
        lambda a, b: torch.div(a, b, rounding_mode=None),
        dict(rounding_mode=None),
        FLOATS,
        dict(divisor=True),
    ),
    "div-trunc": (
        "aten::div.Tensor_mode",
        lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        dict(rounding_mode="trunc"),
        FLOATS + INTEGERS,
        dict(divisor=True),
    ),
    "div-floor": (
        "aten::div.Tensor_mode",
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
        dict(rounding_mode="floor"),
        FLOATS + INTEGERS,
        dict(divisor=True),
    ),
    "logical_and": ("aten::logical_and", torch.logical_and, {}, FLOATS + INTEGERS + [np.bool_], {}),
    "logical_or": ("aten::logical_or", torch.logical_or, {}, FLOATS + INTEGERS + [np.bool_], {}),
    "logical_xor": ("aten::logical_xor", torch.logical_xor, {}, FLOATS + INTEGERS + [np.bool_], {}),
}
TENSOR_CASES = [(op, dtype) for op, spec in TENSOR_OPS.items() for dtype in spec[3]]


def operands(op, dtype, shape_a, shape_b):
    a = sample(shape_a, dtype, seed=1, small=op == "pow")
    if op == "pow" and not np.issubdtype(dtype, np.integer):
        a = np.asarray(np.abs(a))  # a fractional power of a negative base is NaN
    return a, sample(shape_b, dtype, seed=2, **TENSOR_OPS[op][4])


LAYOUTS = {
    "()": (),
    "(0,)": (0,),
    "(17,)": (17,),
    "(2,7,128)": (2, 7, 128),
    "(70001,)": (70001,),
}


@pytest.mark.parametrize("layout", [*LAYOUTS, "transposed"])
@pytest.mark.parametrize("op, dtype", TENSOR_CASES)
def test_same_shape_matches_torch(op, dtype, layout):
    name, torch_fn, attrs, _, _ = TENSOR_OPS[op]
    if layout == "transposed":
        a, b = operands(op, dtype, (7, 5), (7, 5))
        a, b = a.T, b.T
    else:
        a, b = operands(op, dtype, LAYOUTS[layout], LAYOUTS[layout])
    check_op(name, torch_fn, a, b, tolerance=tolerance(dtype), **attrs)


BROADCASTS = {
    "(3,1)+(1,4)": ((3, 1), (1, 4)),
    "(5,)+(2,3,5)": ((5,), (2, 3, 5)),
    "()+(4,4)": ((), (4, 4)),
    "(4,4)+()": ((4, 4), ()),
    "(1,)+(0,)": ((1,), (0,)),
    "(2,1,3)+(4,1)": ((2, 1, 3), (4, 1)),
    "(70001,)+(1,)": ((70001,), (1,)),
    "(300,1)+(1,300)": ((300, 1), (1, 300)),
    "(2,15)+(2,1)": ((2, 15), (2, 1)),
}


@pytest.mark.parametrize("shapes", BROADCASTS)
@pytest.mark.parametrize("op, dtype", TENSOR_CASES)
def test_broadcasting_matches_torch(op, dtype, shapes):
    name, torch_fn, attrs, _, _ = TENSOR_OPS[op]
    a, b = operands(op, dtype, *BROADCASTS[shapes])
    check_op(name, torch_fn, a, b, tolerance=tolerance(dtype), **attrs)


@pytest.mark.parametrize("op", TENSOR_OPS)
def test_broadcasting_strided_operands(op):
    name, torch_fn, attrs, _, _ = TENSOR_OPS[op]
    a, b = operands(op, np.float64, (8, 6), (6, 3))
    check_op(name, torch_fn, a[::2], b[:, 0], **attrs)


# Signed zeros, infinities and NaN on either side of each op.
SPECIAL = [-0.0, 0.0, 1.0, -1.0, 2.5, -2.5, 3.0, -3.0, 0.5, np.inf, -np.inf, np.nan, 1e-300, 7.0]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", TENSOR_OPS)
def test_special_values(op, dtype):
    name, torch_fn, attrs, _, _ = TENSOR_OPS[op]
    pairs = np.array(list(itertools.product(SPECIAL, SPECIAL)), dtype=dtype)
    a, b = pairs[:, 0].copy(), pairs[:, 1].copy()
    with np.errstate(all="ignore"):
        got = check_op(name, torch_fn, a, b, tolerance=tolerance(dtype), **attrs)
    want = torch_fn(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    if got.dtype != np.bool_:  # zeros keep PyTorch's sign
        np.testing.assert_array_equal(np.signbit(got[got == 0]), np.signbit(want[got == 0]))


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["pow", "fmod", "remainder", "div-trunc", "div-floor"])
def test_integer_signs_and_extremes(op, dtype):
    name, torch_fn, attrs, _, _ = TENSOR_OPS[op]
    info = np.iinfo(dtype)
    values = [info.min + 1, -7, -3, -1, 0, 1, 3, 7, info.max]
    divisors = [v for v in values if v != 0] if op != "pow" else [-3, -1, 0, 1, 2, 5, 31, 40, 63]
    pairs = np.array(list(itertools.product(values, divisors)), dtype=dtype)
    check_op(name, torch_fn, pairs[:, 0].copy(), pairs[:, 1].copy(), **attrs)


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["fmod", "remainder", "div-trunc", "div-floor"])
def test_lowest_over_minus_one_wraps(op, dtype):
    # PyTorch's own kernels trap on this one (SIGFPE): the result wraps here.
    name, _, attrs, _, _ = TENSOR_OPS[op]
    lowest = np.iinfo(dtype).min
    expected = {"fmod": 0, "remainder": 0, "div-trunc": lowest, "div-floor": lowest}[op]
    x, minus_one = np.array([lowest], dtype), np.array([-1], dtype)
    assert call(name, x, minus_one, **attrs)[0] == expected
    assert opgraph.ops.call_reference(name, x, minus_one, **attrs)[0] == expected


@pytest.mark.parametrize("op", ["fmod", "remainder", "div-trunc", "div-floor"])
def test_integer_division_by_zero_is_an_error(op):
    name, _, attrs, _, _ = TENSOR_OPS[op]
    with pytest.raises(opgraph.Error, match=rf"{name}: other: integer division by zero"):
        call(name, np.arange(4), np.array([1, 2, 0, 3]), **attrs)
    scalar_name = name.replace(".Tensor_mode", ".Scalar_mode").replace(".Tensor", ".Scalar")
    with pytest.raises(opgraph.Error, match=rf"{scalar_name}: other: integer division by zero"):
        call(scalar_name, np.arange(4), other=0, **attrs)


# name: (op, torch function, attributes, dtypes)
SCALAR_OPS = {
    "pow-base": ("aten::pow.Scalar", lambda e: torch.pow(2.5, e), dict(self=2.5), FLOATS),
    "pow-int-base": ("aten::pow.Scalar", lambda e: torch.pow(-3, e), dict(self=-3), FLOATS + INTEGERS),
    "fmod": ("aten::fmod.Scalar", lambda a: torch.fmod(a, -1.5), dict(other=-1.5), FLOATS),
    "fmod-int": ("aten::fmod.Scalar", lambda a: torch.fmod(a, 7), dict(other=7), FLOATS + INTEGERS),
    "remainder": ("aten::remainder.Scalar", lambda a: torch.remainder(a, 1.5), dict(other=1.5), FLOATS),
    "remainder-int": ("aten::remainder.Scalar", lambda a: torch.remainder(a, -7), dict(other=-7), FLOATS + INTEGERS),
    "div-none": (
        "aten::div.Scalar_mode",
        lambda a: torch.div(a, 0.75, rounding_mode=None),
        dict(other=0.75, rounding_mode=None),
        FLOATS,
    ),
    "div-trunc": (
        "aten::div.Scalar_mode",
        lambda a: torch.div(a, -4, rounding_mode="trunc"),
        dict(other=-4, rounding_mode="trunc"),
        FLOATS + INTEGERS,
    ),
    "div-floor": (
        "aten::div.Scalar_mode",
        lambda a: torch.div(a, 4, rounding_mode="floor"),
        dict(other=4, rounding_mode="floor"),
        FLOATS + INTEGERS,
    ),
    "div-floor-fraction": (
        "aten::div.Scalar_mode",
        lambda a: torch.div(a, 0.3, rounding_mode="floor"),
        dict(other=0.3, rounding_mode="floor"),
        FLOATS,
    ),
    "bitwise_and": ("aten::bitwise_and.Scalar", lambda a: torch.bitwise_and(a, 0b1011), dict(other=0b1011), INTEGERS),
    "bitwise_or": ("aten::bitwise_or.Scalar", lambda a: torch.bitwise_or(a, -8), dict(other=-8), INTEGERS),
    "bitwise_xor": ("aten::bitwise_xor.Scalar", lambda a: torch.bitwise_xor(a, 5), dict(other=5), INTEGERS),
    "bitwise_and-bool": ("aten::bitwise_and.Scalar", lambda a: torch.bitwise_and(a, True), dict(other=1), [np.bool_]),
    "bitwise_or-bool": ("aten::bitwise_or.Scalar", lambda a: torch.bitwise_or(a, False), dict(other=0), [np.bool_]),
    "bitwise_xor-bool": ("aten::bitwise_xor.Scalar", lambda a: torch.bitwise_xor(a, True), dict(other=1), [np.bool_]),
}
# The registry's Scalar holds an int or a float, so a bool tensor's bool
# Scalar arrives as 0 or 1.
SCALAR_CASES = [(op, dtype) for op, spec in SCALAR_OPS.items() for dtype in spec[3]]


@pytest.mark.parametrize("layout", [*LAYOUTS, "transposed"])
@pytest.mark.parametrize("op, dtype", SCALAR_CASES)
def test_scalar_variants_match_torch(op, dtype, layout):
    name, torch_fn, attrs, _ = SCALAR_OPS[op]
    small = op.startswith("pow")
    x = sample((7, 5), dtype, small=small).T if layout == "transposed" else sample(LAYOUTS[layout], dtype, small=small)
    if op == "pow-int-base" and np.issubdtype(dtype, np.integer):
        x = np.asarray(np.abs(x))  # PyTorch refuses negative integer powers of an integer Scalar
    check_op(name, torch_fn, x, tolerance=tolerance(dtype), **attrs)


# ---- clamp with tensor bounds ------------------------------------------------

CLAMPS = {
    "both": ((2, 7, 128), (128,), (2, 1, 128)),
    "min-only": ((17,), (17,), None),
    "max-only": ((17,), None, ()),
    "scalar-bounds": ((70001,), (), ()),
    "bounds-broadcast-self": ((1, 5), (3, 1), (3, 5)),
    "empty": ((0, 3), (3,), (1, 3)),
    "0-d": ((), (), ()),
}


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS)
@pytest.mark.parametrize("case", CLAMPS)
def test_clamp_tensor_matches_torch(case, dtype):
    shape, min_shape, max_shape = CLAMPS[case]
    x = sample(shape, dtype)
    low = None if min_shape is None else sample(min_shape, dtype, seed=3) - (2 if max_shape else 0)
    high = None if max_shape is None else sample(max_shape, dtype, seed=4) + (2 if min_shape else 0)
    low = None if low is None else np.asarray(low, dtype)
    high = None if high is None else np.asarray(high, dtype)
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo, hi), x, low, high)


def test_clamp_tensor_transposed_and_crossed_bounds():
    x = sample((7, 5), np.float32).T
    low = sample((5, 7), np.float32, seed=3)
    high = sample((7,), np.float32, seed=4)  # often below low: max wins, as in PyTorch
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo, hi), x, low, high)


def test_clamp_tensor_nan_anywhere_gives_nan():
    nan = np.nan
    x = np.array([1.0, nan, 5.0, -1.0, 0.5], np.float32)
    low = np.array([nan, 0.0, 0.0, 0.0, 0.0], np.float32)
    high = np.array([2.0, 2.0, nan, 2.0, 1.0], np.float32)
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo, hi), x, low, high)
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo, hi), x, low, None)
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo, hi), x, None, high)


def test_clamp_tensor_number_bounds():
    # A 0-d bound of another dtype is a number: an int for a float tensor is fine.
    x = sample((17,), np.float64)
    check_op("aten::clamp.Tensor", lambda t, lo, hi: torch.clamp(t, lo.item(), hi.item()), x, np.array(-1), np.array(2))
    with pytest.raises(opgraph.Error, match=r"aten::clamp.Tensor: min: expected int64 like self"):
        call("aten::clamp.Tensor", np.arange(5), np.array(0.5), None)
    with pytest.raises(opgraph.Error, match=r"expected at least one of them to be a tensor"):
        call("aten::clamp.Tensor", np.arange(5), None, None)


# ---- atan2.out -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shapes", ["(3,1)+(1,4)", "(70001,)+(1,)", "()+(4,4)"])
def test_atan2_out_matches_torch(shapes, dtype):
    a, b = operands("atan2", dtype, *BROADCASTS[shapes])
    out = np.zeros((0,), dtype)  # resized to the result's shape, as ATen does
    check_op("aten::atan2.out", lambda x, y, o: torch.atan2(x, y, out=o.clone()), a, b, out, tolerance=tolerance(dtype))


def test_atan2_out_needs_the_result_dtype():
    a = sample((4,), np.float32)
    with pytest.raises(opgraph.Error, match=r"aten::atan2.out: out: expected float32 like the result"):
        call("aten::atan2.out", a, a, np.zeros(4, np.float64))


# ---- logical ops on numbers of other dtypes, errors -------------------------------


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_with_a_number_of_another_dtype(op):
    x = np.array([0.0, 0.5, -0.0, np.nan, 2.0], np.float32)
    for number in [np.array(0.5), np.array(0), np.array(3), np.array(True), np.array(False)]:
        check_op(f"aten::{op}", getattr(torch, op), x, number)
        check_op(f"aten::{op}", getattr(torch, op), number, np.arange(-2, 3))


def test_errors_say_what_was_expected():
    floats = sample((3,), np.float32)
    with pytest.raises(opgraph.Error, match=r"aten::atan2: self: expected float32 or float64, got int64"):
        call("aten::atan2", np.arange(3), np.arange(3))
    with pytest.raises(opgraph.Error, match=r"rounding_mode: expected None, \"trunc\" or \"floor\", got \"round\""):
        call("aten::div.Tensor_mode", floats, floats, rounding_mode="round")
    with pytest.raises(
        opgraph.Error,
        match=r"aten::div.Tensor_mode: self: expected float32, float64, complex64 or complex128, got int64",
    ):
        call("aten::div.Tensor_mode", np.arange(3), np.arange(1, 4), rounding_mode=None)
    with pytest.raises(
        opgraph.Error, match=r"bitwise_and.Scalar: self: expected bool or an integer dtype, got float32"
    ):
        call("aten::bitwise_and.Scalar", floats, other=1)
    with pytest.raises(opgraph.Error, match=r"bitwise_or.Scalar: other: expected a bool for a bool tensor"):
        call("aten::bitwise_or.Scalar", np.ones(3, np.bool_), other=2)
    with pytest.raises(opgraph.Error, match=r"aten::pow.Scalar: self: expected an integer for a int64 tensor"):
        call("aten::pow.Scalar", np.arange(3), self=2.5)
    with pytest.raises(opgraph.Error, match=r"aten::logical_and: other: expected float32 like self"):
        call("aten::logical_and", floats, np.arange(3))
    with pytest.raises(opgraph.Error, match=r"cannot be broadcast together"):
        call("aten::remainder.Tensor", floats, sample((4,), np.float32))


@pytest.mark.parametrize(
    "name, overload",
    [
        ("atan2", "default"),
        ("atan2", "out"),
        ("pow", "Scalar"),
        ("pow", "Tensor_Tensor"),
        ("fmod", "Scalar"),
        ("fmod", "Tensor"),
        ("remainder", "Scalar"),
        ("remainder", "Tensor"),
        ("div", "Scalar_mode"),
        ("div", "Tensor_mode"),
        ("clamp", "Tensor"),
        ("bitwise_and", "Scalar"),
        ("bitwise_or", "Scalar"),
        ("bitwise_xor", "Scalar"),
        ("logical_and", "default"),
        ("logical_or", "default"),
        ("logical_xor", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)
