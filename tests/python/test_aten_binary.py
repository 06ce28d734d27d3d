"""Arithmetic with broadcasting, its Scalar variants and sum_to_size, against
PyTorch."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call

FLOATS = [np.float32, np.float64]


def sample(shape, dtype, seed=0, divisor=False):
    values = np.random.default_rng(seed).standard_normal(shape) * 3
    if divisor:  # keep quotients well conditioned
        values = np.where(values < 0, values - 0.5, values + 0.5)
    if np.issubdtype(dtype, np.integer):
        values = np.round(values * 10)
    return np.asarray(values, dtype=dtype)


# Same-shape operands, by id: shapes chosen to hurt (lengths around the
# vector widths among them) and strided views.
LAYOUTS = {
    "()": lambda **kw: sample((), **kw),
    "(0,)": lambda **kw: sample((0,), **kw),
    "(1,)": lambda **kw: sample((1,), **kw),
    "(7,)": lambda **kw: sample((7,), **kw),
    "(15,)": lambda **kw: sample((15,), **kw),
    "(17,)": lambda **kw: sample((17,), **kw),
    "(1001,)": lambda **kw: sample((1001,), **kw),
    "(3,0,5)": lambda **kw: sample((3, 0, 5), **kw),
    "(2,3,5,7)": lambda **kw: sample((2, 3, 5, 7), **kw),
    "(70001,)": lambda **kw: sample((70001,), **kw),
    "transposed": lambda **kw: sample((7, 5), **kw).T,
    "sliced": lambda **kw: sample((2002,), **kw)[::2],
    "sliced-2d": lambda **kw: sample((6, 9), **kw)[::2, 1::3],
}

OPS = {
    "add": ("aten::add.Tensor", torch.add, {}),
    "add-alpha": ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=2), {"alpha": 2}),
    "add-float-alpha": ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=0.5), {"alpha": 0.5}),
    "sub": ("aten::sub.Tensor", torch.sub, {}),
    "sub-alpha": ("aten::sub.Tensor", lambda a, b: torch.sub(a, b, alpha=3), {"alpha": 3}),
    "mul": ("aten::mul.Tensor", torch.mul, {}),
    "div": ("aten::div.Tensor", torch.div, {}),
    "maximum": ("aten::maximum", torch.maximum, {}),
    "minimum": ("aten::minimum", torch.minimum, {}),
}


def operands(op, make):
    return make(seed=1), make(seed=2, divisor=op == "div")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
def test_same_shape_matches_torch(op, dtype, layout):
    name, torch_fn, attrs = OPS[op]
    a, b = operands(op, lambda **kw: LAYOUTS[layout](dtype=dtype, **kw))
    check_op(name, torch_fn, a, b, **attrs)


# Each fast path (scalar, trailing row, either side) and the general strided
# loop, some past the threading threshold, some with strided operands.
BROADCASTS = {
    "(3,1)+(1,4)": ((3, 1), (1, 4)),
    "(5,)+(2,3,5)": ((5,), (2, 3, 5)),
    "()+(4,4)": ((), (4, 4)),
    "(4,4)+()": ((4, 4), ()),
    "(1,)+(0,)": ((1,), (0,)),
    "(2,1,3)+(4,1)": ((2, 1, 3), (4, 1)),
    "(2,3,5)+(3,1)": ((2, 3, 5), (3, 1)),
    "(2,3,5)+(2,1,5)": ((2, 3, 5), (2, 1, 5)),
    "(2,3,5)+(1,3,5)": ((2, 3, 5), (1, 3, 5)),
    "(1,1)+(1,)": ((1, 1), (1,)),
    "(70001,)+(1,)": ((70001,), (1,)),
    "(1,)+(70001,)": ((1,), (70001,)),
    "(300,300)+(300,)": ((300, 300), (300,)),
    "(1,300)+(300,300)": ((1, 300), (300, 300)),
    "(300,1)+(1,300)": ((300, 1), (1, 300)),
    "(300,1)+(300,300)": ((300, 1), (300, 300)),
    "(17,)+()": ((17,), ()),
    "(3,17)+(17,)": ((3, 17), (17,)),
    "(15,)+(3,15)": ((15,), (3, 15)),
    "(2,15)+(2,1)": ((2, 15), (2, 1)),
}


@pytest.mark.parametrize("shapes", BROADCASTS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", OPS)
def test_broadcasting_matches_torch(op, dtype, shapes):
    name, torch_fn, attrs = OPS[op]
    shape_a, shape_b = BROADCASTS[shapes]
    a, b = sample(shape_a, dtype, seed=1), sample(shape_b, dtype, seed=2, divisor=op == "div")
    check_op(name, torch_fn, a, b, **attrs)


@pytest.mark.parametrize("op", OPS)
def test_broadcasting_strided_operands(op):
    name, torch_fn, attrs = OPS[op]
    a = sample((8, 6), np.float64, seed=1)[::2]
    b = sample((6, 3), np.float64, seed=2, divisor=op == "div")[:, 0]
    check_op(name, torch_fn, a, b, **attrs)
    check_op(name, torch_fn, b, a.T[:, :, None].transpose(2, 1, 0), **attrs)


SCALAR_OPS = {
    "add": ("aten::add.Scalar", lambda a: torch.add(a, 2.5), {"other": 2.5}),
    "add-alpha": ("aten::add.Scalar", lambda a: torch.add(a, 2.5, alpha=-2), {"other": 2.5, "alpha": -2}),
    "sub": ("aten::sub.Scalar", lambda a: torch.sub(a, 1), {"other": 1}),
    "sub-alpha": ("aten::sub.Scalar", lambda a: torch.sub(a, 1.5, alpha=0.5), {"other": 1.5, "alpha": 0.5}),
    "mul": ("aten::mul.Scalar", lambda a: torch.mul(a, -3.5), {"other": -3.5}),
    "div": ("aten::div.Scalar", lambda a: torch.div(a, 0.25), {"other": 0.25}),
    "div-int": ("aten::div.Scalar", lambda a: torch.div(a, 3), {"other": 3}),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", SCALAR_OPS)
def test_scalar_variants_match_torch(op, dtype, layout):
    name, torch_fn, attrs = SCALAR_OPS[op]
    check_op(name, torch_fn, LAYOUTS[layout](dtype=dtype), **attrs)


INTEGER_CASES = {
    "add": ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=3), {"alpha": 3}),
    "sub": ("aten::sub.Tensor", torch.sub, {}),
    "mul": ("aten::mul.Tensor", torch.mul, {}),
}


@pytest.mark.parametrize("shapes", ["(3,1)+(1,4)", "(70001,)+(1,)", "(300,300)+(300,)", "(2,3,5)+(2,1,5)"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op", INTEGER_CASES)
def test_integers_match_torch(op, dtype, shapes):
    name, torch_fn, attrs = INTEGER_CASES[op]
    shape_a, shape_b = BROADCASTS[shapes]
    check_op(name, torch_fn, sample(shape_a, dtype, seed=1), sample(shape_b, dtype, seed=2), **attrs)
    check_op(name.replace("Tensor", "Scalar"), lambda a: torch_fn(a, 7), sample(shape_a, dtype), other=7, **attrs)


SUMS = {
    "(3,4)->(1,4)": ((3, 4), [1, 4]),
    "(3,4)->(4,)": ((3, 4), [4]),
    "(3,4)->(3,1)": ((3, 4), [3, 1]),
    "(2,3,4)->(3,1)": ((2, 3, 4), [3, 1]),
    "(2,3,4)->(2,1,4)": ((2, 3, 4), [2, 1, 4]),
    "(2,3,4)->()": ((2, 3, 4), []),
    "(2,3,4)->(2,3,4)": ((2, 3, 4), [2, 3, 4]),
    "(5,)->(1,)": ((5,), [1]),
    "(0,3)->(3,)": ((0, 3), [3]),
    "(3,0)->(3,1)": ((3, 0), [3, 1]),
    "(3,0)->(1,0)": ((3, 0), [1, 0]),
    "(70001,)->(1,)": ((70001,), [1]),
    "(300,300)->(300,)": ((300, 300), [300]),
    "(300,300)->(300,1)": ((300, 300), [300, 1]),
}


@pytest.mark.parametrize("case", SUMS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_to_size_matches_torch(case, dtype):
    shape, size = SUMS[case]
    check_op("aten::sum_to_size", lambda x: x.sum_to_size(size), sample(shape, dtype), size=size)


def test_sum_to_size_strided_input():
    x = sample((6, 8), np.float64)[::2, 1::2]
    check_op("aten::sum_to_size", lambda t: t.sum_to_size([1, 4]), x, size=[1, 4])
    check_op("aten::sum_to_size", lambda t: t.sum_to_size([3, 1]), x.T.copy().T, size=[3, 1])


@pytest.mark.parametrize("shapes", ["(3,1)+(1,4)", "(5,)+(2,3,5)", "(2,1,3)+(4,1)", "()+(4,4)"])
def test_sum_to_size_folds_broadcast_gradients(shapes):
    shape_a, shape_b = BROADCASTS[shapes]
    a = torch.tensor(sample(shape_a, np.float64, seed=1), requires_grad=True)
    b = torch.tensor(sample(shape_b, np.float64, seed=2), requires_grad=True)
    grad = sample(torch.broadcast_shapes(a.shape, b.shape), np.float64, seed=3)
    grad_a, grad_b = torch.autograd.grad(a * 1 + b, (a, b), torch.from_numpy(grad))
    np.testing.assert_allclose(call("aten::sum_to_size", grad, size=list(shape_a)), grad_a.numpy(), rtol=1e-12)
    np.testing.assert_allclose(call("aten::sum_to_size", grad, size=list(shape_b)), grad_b.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "name, overload",
    [
        ("add", "Tensor"),
        ("sub", "Tensor"),
        ("mul", "Tensor"),
        ("div", "Tensor"),
        ("add", "Scalar"),
        ("sub", "Scalar"),
        ("mul", "Scalar"),
        ("div", "Scalar"),
        ("sum_to_size", "default"),
        ("maximum", "default"),
        ("minimum", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    schema = str(getattr(getattr(torch.ops.aten, name), overload)._schema)
    qualified = f"aten::{name}" if overload == "default" else f"aten::{name}.{overload}"
    assert str(opgraph.op_schema(qualified)) == schema


def test_incompatible_shapes_name_both():
    with pytest.raises(
        opgraph.Error,
        match=r"aten::add.Tensor: self and other: shapes \[3\] and \[4\] cannot be "
        r"broadcast together",
    ):
        call("aten::add.Tensor", np.ones(3), np.ones(4))
    with pytest.raises(opgraph.Error, match=r"shapes \[2, 3\] and \[2\]"):
        call("aten::mul.Tensor", np.ones((2, 3)), np.ones(2))


# An exported graph carries Python numbers as 0-d tensors (float64 or int64):
# they take the tensor's dtype, as PyTorch's wrapped numbers do.
WRAPPED_NUMBERS = {
    "float32 * float64 number": (np.float32, (2, 7), np.array(0.044715)),
    "float32 + int64 number": (np.float32, (3,), np.array(1)),
    "int64 - int64 number": (np.int64, (2, 1), np.array(1)),
    "int32 + int64 number": (np.int32, (4,), np.array(-3)),
    "float64 number / float32": (np.float32, None, np.array(2.5)),
}


@pytest.mark.parametrize("case", WRAPPED_NUMBERS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_zero_dim_numbers_take_the_tensor_dtype(op, case):
    dtype, shape, number = WRAPPED_NUMBERS[case]
    name, torch_fn, attrs = OPS[op]
    if op == "div" and np.issubdtype(dtype, np.integer):
        return  # true division of integers changes the dtype
    if shape is None:  # the number first
        check_op(name, torch_fn, number, sample((3, 4), dtype, divisor=True), **attrs)
    else:
        check_op(name, lambda a, b: torch_fn(a, b.item()), sample(shape, dtype), number, **attrs)


def test_float_number_with_integer_tensor_is_refused():
    with pytest.raises(
        opgraph.Error,
        match=r"aten::mul.Tensor: other: expected int64 like self \(there is no type "
        r"promotion\), got float64",
    ):
        call("aten::mul.Tensor", np.ones(3, dtype=np.int64), np.array(0.5))


def test_maximum_and_minimum_propagate_nan():
    a = np.array([np.nan, 1.0, 2.0, np.nan, -np.inf], np.float32)
    b = np.array([0.0, np.nan, 3.0, np.nan, 5.0], np.float32)
    check_op("aten::maximum", torch.maximum, a, b)
    check_op("aten::minimum", torch.minimum, a, b)
    check_op("aten::maximum", torch.maximum, sample((3, 1), np.int64, seed=1), sample((4,), np.int64, seed=2))


def test_rejects_mismatched_dtypes():
    with pytest.raises(opgraph.Error, match="aten::add.Tensor: other: expected float32 like self .*got float64"):
        call("aten::add.Tensor", np.ones(3, dtype=np.float32), np.ones(3))
    with pytest.raises(opgraph.Error, match="other: expected int32 like self .*got int64"):
        call("aten::sub.Tensor", np.ones(3, dtype=np.int32), np.ones(3, dtype=np.int64))


def test_rejects_unsupported_dtypes():
    with pytest.raises(
        opgraph.Error, match="aten::div.Tensor: self: expected float32, float64, complex64 or complex128, got int32"
    ):
        call("aten::div.Tensor", np.ones(3, dtype=np.int32), np.ones(3, dtype=np.int32))
    with pytest.raises(
        opgraph.Error, match="self: expected float32, float64, int32, int64, complex64 or complex128, got uint8"
    ):
        call("aten::add.Tensor", np.ones(3, dtype=np.uint8), np.ones(3, dtype=np.uint8))
    with pytest.raises(opgraph.Error, match="sum_to_size: self: expected float32 or float64, got int64"):
        call("aten::sum_to_size", np.ones(3, dtype=np.int64), size=[1])


def test_rejects_float_scalars_for_integer_tensors():
    with pytest.raises(opgraph.Error, match="other: expected an integer for a int64 tensor .*got 2.5"):
        call("aten::mul.Scalar", np.ones(3, dtype=np.int64), other=2.5)
    with pytest.raises(opgraph.Error, match="alpha: expected an integer for a int32 tensor .*got 0.5"):
        call("aten::add.Tensor", np.ones(3, dtype=np.int32), np.ones(3, dtype=np.int32), alpha=0.5)


def test_sum_to_size_rejects_a_size_it_cannot_fold_to():
    with pytest.raises(opgraph.Error, match=r"size: expected a shape that broadcasts to self's \[3\], got \[4\]"):
        call("aten::sum_to_size", np.ones(3), size=[4])
    with pytest.raises(opgraph.Error, match=r"got \[1, 3\]"):
        call("aten::sum_to_size", np.ones(3), size=[1, 3])
