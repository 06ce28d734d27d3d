"""extract_ir makes ATen's type promotion explicit: an operand of another dtype
than the one ATen computes a pointwise op in is converted to it by a _to_copy
node, a Python number is made in it, and the Session, whose kernels take one
dtype, gives PyTorch's values in PyTorch's dtype. Where the operands already
share the dtype, nothing is inserted."""

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir, promote

CAST = "aten::_to_copy"


def tensor(dtype, zero_dim=False):
    """Small operands every op here takes: positive and nonzero, so that no case divides by zero."""
    values = {
        torch.bool: [True, True, True],
        torch.int32: [2, 5, 1],
        torch.int64: [3, 1, 2],
        torch.float32: [0.5, 1.5, 2.25],
        torch.float64: [1.25, 0.75, 3.0],
    }[dtype]
    return torch.tensor(values[0] if zero_dim else values, dtype=dtype)


class Cases(nn.Module):
    """``fn`` applied to each case's operands: the tensors come from the inputs, numbers are the model's constants."""

    def __init__(self, fn, cases):
        super().__init__()
        self.fn, self.cases = fn, cases

    def forward(self, *inputs):
        tensors = iter(inputs)
        operands = [[next(tensors) if isinstance(a, torch.Tensor) else a for a in case] for case in self.cases]
        return tuple(self.fn(*case) for case in operands)


def check_like_torch(fn, cases, rtol=1e-6):
    """Extracts ``fn`` over ``cases``, runs it on a Session and compares each result with PyTorch's; returns
    the IR."""
    model = Cases(fn, cases)
    inputs = [a for case in cases for a in case if isinstance(a, torch.Tensor)]
    ir = extract_ir(model, tuple(inputs))
    outputs = ir.to_session().run(*inputs)
    assert len(outputs) == len(cases)
    for case, actual, expected in zip(cases, outputs, model(*inputs)):
        what = ", ".join(
            f"{a.dtype}{'[]' if a.dim() == 0 else ''}" if isinstance(a, torch.Tensor) else repr(a) for a in case
        )
        assert actual.dtype == expected.numpy().dtype, f"({what}): {actual.dtype}, PyTorch gives {expected.dtype}"
        np.testing.assert_allclose(actual, expected.numpy(), rtol=rtol, err_msg=f"({what})")
    return ir


i32, i64, f32, f64, b8 = torch.int32, torch.int64, torch.float32, torch.float64, torch.bool

# (self, other): tensors of two dtypes, a 0-d tensor with a tensor, a Python number with a tensor.
MIXED = [
    (tensor(i64), tensor(f32)),
    (tensor(f32), tensor(i64)),
    (tensor(i32), tensor(i64)),
    (tensor(b8), tensor(i64)),
    (tensor(b8), tensor(f32)),
    (tensor(f32), tensor(f64)),
    (tensor(i64, zero_dim=True), tensor(f32)),
    (tensor(f64, zero_dim=True), tensor(f32)),
    (tensor(f32), tensor(i64, zero_dim=True)),
    (tensor(i32), tensor(i64, zero_dim=True)),
    (tensor(i64, zero_dim=True), 1.5),
    (tensor(i64), 1.5),
    (tensor(i32), 3),
    (tensor(f32), 2),
    (tensor(f64), 0.1),
]
# The integer and bool cases, for ops that take no floating point.
INTEGRAL = [
    (tensor(i32), tensor(i64)),
    (tensor(b8), tensor(i64)),
    (tensor(i32), tensor(i64, zero_dim=True)),
    (tensor(b8), 3),
    (tensor(i32), 3),
]

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "maximum": lambda a, b: torch.maximum(a, torch.as_tensor(b)),
    "minimum": lambda a, b: torch.minimum(a, torch.as_tensor(b)),
    "pow": torch.pow,
    "atan2": lambda a, b: torch.atan2(a, torch.as_tensor(b)),
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": lambda a, b: torch.logical_and(a, torch.as_tensor(b)),
    "logical_or": lambda a, b: torch.logical_or(a, torch.as_tensor(b)),
    "where": lambda a, b: torch.where(torch.tensor([True, False, True]), a, b),
    "clamp_min": lambda a, b: torch.clamp(a, min=b),
    "clamp_max": lambda a, b: torch.clamp(a, max=b),
}
# ATen refuses to subtract bools; the runtime's pow raises an integer tensor to integer tensors only.
CASES = {
    "sub": [case for case in MIXED if case[0].dtype != b8],
    "pow": [case for case in MIXED if not (case[0].dtype == i32 and isinstance(case[1], int))],
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_promote_as_aten_does(name):
    check_like_torch(BINARY[name], CASES.get(name, MIXED))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_ops_promote_integers_as_aten_does(name):
    check_like_torch(getattr(torch, name), INTEGRAL)


UNARY = ["sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log2", "log1p", "sin", "cos", "tanh", "sigmoid", "erf"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_math_of_integers_and_bools_is_computed_in_the_default_float_dtype(name):
    cases = [(tensor(i64),), (tensor(i32),), (tensor(b8),), (tensor(i64, zero_dim=True),), (tensor(f64),)]
    check_like_torch(getattr(torch, name), cases)


def test_results_of_another_kind_than_the_operands_have_pytorchs_dtype():
    # complex * real is complex and its abs real; int / int is float and isinf of it bool
    check_like_torch(lambda a: torch.abs(a * 1j), [(tensor(f32),), (tensor(i64),)])
    check_like_torch(lambda a, b: torch.isinf(a / b), [(tensor(i64), 0), (tensor(i32), tensor(b8))])


def test_operands_of_clamp_addcmul_and_cat_meet_in_one_dtype():
    check_like_torch(lambda a, lo, hi: torch.clamp(a, lo, hi), [(tensor(i64), tensor(f32), tensor(f64, zero_dim=True))])
    check_like_torch(torch.addcmul, [(tensor(f32), tensor(i64), tensor(f64, zero_dim=True))])
    check_like_torch(lambda a, b: torch.cat([a, b]), [(tensor(i64), tensor(f32)), (tensor(b8), tensor(i32))])


class PositionsTimesScale(nn.Module):
    """Relative positions (an int64 arange) scaled by a ratio of sizes, as MViTv2's relative position bias."""

    def forward(self, x):
        positions = torch.arange(x.shape[-1])
        return positions * (x.shape[-1] / 7) + positions * x


class SqrtOfCount(nn.Module):
    """Scaled by the square root of an integer tensor, as RAFT's correlation volume."""

    def forward(self, x):
        return x / torch.sqrt(torch.tensor(x.shape[-1]))


@pytest.mark.parametrize("model", [PositionsTimesScale(), SqrtOfCount()], ids=lambda model: type(model).__name__)
def test_an_int64_times_float32_and_the_sqrt_of_an_int64_run_like_torch(model):
    x = torch.randn(2, 5)
    ir = extract_ir(model, (x,))
    (actual,) = ir.to_session().run(x)
    expected = model(x)
    assert actual.dtype == np.float32
    np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-6)


class SameDtypes(nn.Module):
    def forward(self, x, y, z, n, flags):
        return (
            (x * y + 2).sqrt(),
            x < 0.5,
            z * 0.1,
            n + 1,
            (n * 3) // 2,
            flags & (n > 1),
            torch.where(flags, x, 0.0),
        )


def test_no_conversion_is_inserted_where_the_dtypes_already_match():
    inputs = (tensor(f32), tensor(f32), tensor(f64), tensor(i64), torch.tensor([True, False, True]))
    ir = extract_ir(SameDtypes(), inputs)
    assert [node.name for node in ir.nodes if node.op_type == CAST] == []
    # each number is made in its tensor's dtype
    assert {weight.dtype for weight in ir.weights.values() if weight.dim() == 0} == {f32, f64, i64}
    for actual, expected in zip(ir.to_session().run(*inputs), SameDtypes()(*inputs)):
        np.testing.assert_array_equal(actual, expected.numpy())


def test_only_the_operands_of_another_dtype_are_converted():
    ir = check_like_torch(lambda a, b: (a + b) * (a - b), [(tensor(i64), tensor(f32))])
    conversions = [node for node in ir.nodes if node.op_type == CAST]
    operands = [ir.values[node.inputs[0].values[0]] for node in conversions]
    assert [(operand.dtype, node.attrs["dtype"]) for operand, node in zip(operands, conversions)] == [
        ("int64", "float32")
    ] * 2


def test_a_result_dtype_that_disagrees_with_the_exported_graph_is_an_error(monkeypatch):
    monkeypatch.setitem(promote._KINDS, "mul", promote.Kind.INT_TO_FLOAT)
    with pytest.raises(
        opgraph.Error,
        match=r"node 'mul' \(aten.mul.Tensor\): type promotion \(INT_TO_FLOAT\) of \(int64 tensor, int64 "
        r"tensor\) gives float32, but torch.export computed int64",
    ):
        extract_ir(Cases(torch.mul, [(tensor(i64), tensor(i64))]), (tensor(i64), tensor(i64)))


def test_a_python_number_is_converted_to_the_dtype_as_aten_converts_it():
    # 0.1 rounds once, to float64 or to float32; 2**32 + 3 wraps around int32's range
    check_like_torch(torch.add, [(tensor(i32), 2**32 + 3), (tensor(f32), 0.1), (tensor(f64), 0.1)], rtol=0)
