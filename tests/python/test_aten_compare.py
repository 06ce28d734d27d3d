"""Comparisons, logical and bitwise ops, where and masked_fill against their
references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]


def sample(shape, dtype, seed=0):
    # Few distinct values, so that equal elements are common.
    values = np.random.default_rng(seed).integers(-2, 3, size=shape)
    return values.astype(dtype) if dtype != np.bool_ else np.asarray(values > 0)


COMPARISONS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "gt": torch.gt, "le": torch.le, "ge": torch.ge}

# Same shapes, broadcasting both ways, 0-sized, past the threading threshold,
# and strided views.
SHAPES = {
    "(7,)": lambda d, s: sample((7,), d, s),
    "(0,3)": lambda d, s: sample((0, 3), d, s),
    "()": lambda d, s: sample((), d, s),
    "(70001,)": lambda d, s: sample((70001,), d, s),
    "transposed": lambda d, s: sample((5, 3), d, s).T,
}
BROADCASTS = {
    "(3,1)+(1,4)": ((3, 1), (1, 4)),
    "(2,1,7,1)+(2,1,1,7)": ((2, 1, 7, 1), (2, 1, 1, 7)),
    "(4,4)+()": ((4, 4), ()),
    "(1,)+(0,)": ((1,), (0,)),
    "(300,1)+(300,300)": ((300, 1), (300, 300)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", COMPARISONS)
def test_comparisons_match_torch(op, dtype):
    for make in SHAPES.values():
        check_op(f"aten::{op}.Tensor", COMPARISONS[op], make(dtype, 1), make(dtype, 2))
    for shape_a, shape_b in BROADCASTS.values():
        check_op(f"aten::{op}.Tensor", COMPARISONS[op], sample(shape_a, dtype, 1), sample(shape_b, dtype, 2))
    other = 1
    for make in SHAPES.values():
        check_op(f"aten::{op}.Scalar", lambda a: COMPARISONS[op](a, other), make(dtype, 1), other=other)


def test_float_scalar_compares_with_floats():
    x = sample((4, 5), np.float32)
    check_op("aten::lt.Scalar", lambda a: a < 0.5, x, other=0.5)


def test_zero_dim_operand_takes_the_other_dtype():
    # An exported graph carries Python numbers as 0-d tensors: int64 or float64.
    x = sample((3, 4), np.float32)
    check_op("aten::eq.Tensor", torch.eq, x, np.array(1, np.int64))
    check_op("aten::ge.Tensor", torch.ge, np.array(0.0), x)
    check_op("aten::ne.Tensor", torch.ne, sample((3, 4), np.int64), np.array(1.0))


LOGICAL = {
    "__and__": lambda a, b: a & b,
    "bitwise_and": torch.bitwise_and,
    "__or__": lambda a, b: a | b,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
}


@pytest.mark.parametrize("dtype", [np.bool_, np.int64, np.int32])
@pytest.mark.parametrize("op", LOGICAL)
def test_logical_ops_match_torch(op, dtype):
    for shape_a, shape_b in BROADCASTS.values():
        check_op(f"aten::{op}.Tensor", LOGICAL[op], sample(shape_a, dtype, 1), sample(shape_b, dtype, 2))
    check_op(f"aten::{op}.Tensor", LOGICAL[op], SHAPES["transposed"](dtype, 1), SHAPES["transposed"](dtype, 2))


@pytest.mark.parametrize("dtype", DTYPES)
def test_not_matches_torch(dtype):
    x = SHAPES["transposed"](dtype, 1)
    check_op("aten::logical_not", torch.logical_not, x)
    if dtype not in (np.float32, np.float64):
        check_op("aten::bitwise_not", torch.bitwise_not, x)


WHERE = {
    "same": ((4, 5), (4, 5), (4, 5)),
    "broadcast": ((2, 1, 7, 7), (2, 1, 1, 7), ()),
    "mask-row": ((7,), (3, 7), (3, 1)),
    "empty": ((0, 3), (1, 3), (3,)),
    "large": ((300, 300), (300, 1), (300,)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
@pytest.mark.parametrize("shapes", WHERE)
def test_where_matches_torch(shapes, dtype):
    condition, self, other = WHERE[shapes]
    check_op(
        "aten::where.self", torch.where, sample(condition, np.bool_, 1), sample(self, dtype, 2), sample(other, dtype, 3)
    )


def test_where_with_a_zero_dim_number():
    condition, x = sample((3, 4), np.bool_, 1), sample((3, 4), np.float32, 2)
    check_op("aten::where.self", torch.where, condition, x, np.array(-np.inf))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_where_with_a_scalar_branch(dtype):
    # Eager attention masks scores with torch.where(mask, scores, min_value).
    condition, x = sample((2, 1, 7, 7), np.bool_, 1), sample((2, 4, 7, 7), dtype, 2)
    check_op("aten::where.ScalarOther", lambda c, t: torch.where(c, t, -7), condition, x, other=-7)
    check_op("aten::where.ScalarSelf", lambda c, t: torch.where(c, 3, t), condition, x, self=3)


MASKS = {
    "same": ((2, 4, 7, 7), (2, 4, 7, 7)),
    "padding": ((2, 4, 7, 7), (2, 1, 1, 7)),
    "all-true": ((3, 5), None),
    "all-false": ((3, 5), None),
    "empty": ((0, 5), (5,)),
    "large": ((300, 300), (300,)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("case", MASKS)
def test_masked_fill_matches_torch(case, dtype):
    shape, mask_shape = MASKS[case]
    x = sample(shape, dtype, 1)
    if mask_shape is None:
        mask = np.full(shape, case == "all-true")
    else:
        mask = sample(mask_shape, np.bool_, 2)
    value = -1e9 if dtype != np.int64 else -7
    check_op("aten::masked_fill.Scalar", lambda a, m: a.masked_fill(m, value), x, mask, value=value)
    check_op("aten::masked_fill.Tensor", lambda a, m, v: a.masked_fill(m, v), x, mask, np.array(value))
    before = x.copy()
    check_op("aten::masked_fill_.Scalar", lambda a, m: a.clone().masked_fill_(m, value), x, mask, value=value)
    np.testing.assert_array_equal(x, before)  # runs as the functional form


def test_masked_fill_strided_self():
    x = sample((6, 8), np.float32, 1)[::2, 1::2]
    mask = sample((3, 4), np.bool_, 2)
    check_op("aten::masked_fill.Scalar", lambda a, m: a.masked_fill(m, 0.5), x, mask, value=0.5)


@pytest.mark.parametrize(
    "op, overload",
    [
        *[(name, overload) for name in COMPARISONS for overload in ("Tensor", "Scalar")],
        *[(name, "Tensor") for name in LOGICAL],
        ("logical_not", "default"),
        ("bitwise_not", "default"),
        ("where", "self"),
        ("where", "ScalarSelf"),
        ("where", "ScalarOther"),
        ("masked_fill", "Scalar"),
        ("masked_fill", "Tensor"),
        ("masked_fill_", "Scalar"),
    ],
)
def test_schema_is_aten(op, overload):
    assert_schema_is_aten(op, overload)


BAD = {
    "shapes": (
        "aten::eq.Tensor",
        (np.zeros(3, np.float32), np.zeros(4, np.float32)),
        {},
        r"self and other: shapes \[3\] and \[4\] cannot be broadcast together",
    ),
    "dtypes": (
        "aten::lt.Tensor",
        (np.zeros(3, np.float32), np.zeros(3, np.int64)),
        {},
        r"other: expected float32 like self \(no type promotion except from 0-d tensors\)",
    ),
    "fraction-for-int": (
        "aten::gt.Scalar",
        (np.zeros(3, np.int64),),
        {"other": 0.5},
        r"other: expected a whole number for a int64 tensor",
    ),
    "bitwise-float": (
        "aten::bitwise_and.Tensor",
        (np.zeros(3, np.float32),) * 2,
        {},
        r"self: expected bool or an integer dtype, got float32",
    ),
    "where-condition": (
        "aten::where.self",
        (np.zeros(3, np.float32),) * 3,
        {},
        r"condition: expected a bool tensor, got float32\[3\]",
    ),
    "where-fraction": (
        "aten::where.ScalarOther",
        (np.zeros(3, bool), np.zeros(3, np.int64)),
        {"other": 0.5},
        r"other: expected a whole number for a int64 tensor",
    ),
    "mask-dtype": (
        "aten::masked_fill.Scalar",
        (np.zeros(3, np.float32), np.zeros(3, np.int64)),
        {"value": 1},
        r"mask: expected a bool tensor",
    ),
    "mask-grows-self": (
        "aten::masked_fill.Scalar",
        (np.zeros(3, np.float32), np.zeros((2, 3), bool)),
        {"value": 1},
        r"mask: expected a shape that broadcasts to self's \[3\], got bool\[2, 3\]",
    ),
    "fill-tensor": (
        "aten::masked_fill.Tensor",
        (np.zeros(3, np.float32), np.zeros(3, bool), np.zeros(2)),
        {},
        r"value: expected a 0-d tensor",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, *inputs, **attrs)
