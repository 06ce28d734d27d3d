"""Copies and dtype conversions (_to_copy, to, type_as, clone, contiguous,
alias, detach, detach_) against their references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def sample(shape, dtype):
    values = np.asarray(np.random.default_rng(0).standard_normal(shape) * 4)
    if values.ndim:
        values[..., ::3] = 0  # zeros, which become False
    return values.astype(dtype) if dtype != np.bool_ else np.asarray(values > 0)


SHAPES = {
    "(2,7)": lambda d: sample((2, 7), d),
    "()": lambda d: sample((), d),
    "(0,3)": lambda d: sample((0, 3), d),
    "transposed": lambda d: sample((4, 5), d).T,
    "(70001,)": lambda d: sample((70001,), d),
}


@pytest.mark.parametrize("to", DTYPES)
@pytest.mark.parametrize("source", DTYPES)
def test_conversions_match_torch(source, to):
    dtype = getattr(torch, to)
    for make in SHAPES.values():
        x = make(DTYPES[source])
        check_op("aten::_to_copy", lambda t: t.to(dtype), x, dtype=to)
        check_op("aten::to.dtype", lambda t: t.to(dtype), x, dtype=to)
        check_op("aten::to.dtype_layout", lambda t: t.to(dtype), x, dtype=to, layout="strided", device="cpu")
        check_op("aten::to.device", lambda t: t.to("cpu", dtype), x, device="cpu", dtype=to)
        check_op("aten::type_as", lambda t, o: t.type_as(o), x, np.zeros((), DTYPES[to]))


@pytest.mark.parametrize("name", ["clone", "contiguous", "alias", "detach", "detach_", "lift_fresh_copy", "_to_copy"])
@pytest.mark.parametrize("shape", SHAPES)
def test_copies_match_torch(name, shape):
    x = SHAPES[shape](np.float32)
    check_op(f"aten::{name}", getattr(torch.ops.aten, name), x)


def test_exported_spellings_of_placement():
    x = sample((3, 4), np.float32)
    check_op(
        "aten::to.dtype_layout",
        lambda t: t.to(torch.bool),
        x,
        dtype="bool",
        layout="torch.strided",
        device="cpu",
        memory_format="torch.preserve_format",
    )


@pytest.mark.parametrize(
    "op, overload",
    [
        ("_to_copy", "default"),
        ("to", "dtype"),
        ("to", "dtype_layout"),
        ("to", "device"),
        ("type_as", "default"),
        ("clone", "default"),
        ("alias", "default"),
        ("detach", "default"),
        ("detach_", "default"),
        ("lift_fresh_copy", "default"),
        ("contiguous", "default"),
        ("resize_", "default"),
    ],
)
def test_schema_is_aten(op, overload):
    assert_schema_is_aten(op, overload)


@pytest.mark.parametrize("size", [[7], [2, 2], [3, 0], [], [2, 3, 4]])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
def test_resize_keeps_the_leading_elements(dtype, size):
    x = SHAPES["transposed"](dtype)  # 20 elements, strided
    got = call("aten::resize_", x, size=size)
    assert got.shape == tuple(size) and got.dtype == x.dtype
    kept = min(x.size, got.size)
    np.testing.assert_array_equal(got.reshape(-1)[:kept], np.ascontiguousarray(x).reshape(-1)[:kept])
    assert not got.reshape(-1)[kept:].any()  # zeros where PyTorch leaves memory uninitialized
    np.testing.assert_array_equal(
        call("aten::resize_", x, size=size), opgraph.ops.call_reference("aten::resize_", x, size=size)
    )
    if got.size <= x.size:
        check_op("aten::resize_", lambda t: t.clone(memory_format=torch.contiguous_format).resize_(size), x, size=size)


def test_resize_errors():
    with pytest.raises(opgraph.Error, match=r"aten::resize_: size: expected extents of at least 0, got \[2, -1\]"):
        call("aten::resize_", sample((2, 3), np.float32), size=[2, -1])
    with pytest.raises(opgraph.Error, match=r"memory_format: expected None"):
        call("aten::resize_", sample((2, 3), np.float32), size=[6], memory_format="channels_last")


BAD = {
    "device": ("aten::_to_copy", dict(device="cuda"), r"device: expected None or cpu, got \"cuda\""),
    "layout": ("aten::to.dtype_layout", dict(layout="sparse_coo"), r"layout: expected None or strided"),
    "memory-format": ("aten::clone", dict(memory_format="channels_last"), r"memory_format: expected None, "),
    "dtype": ("aten::to.dtype", dict(dtype="float16"), r"dtype: expected float32, float64, int64"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, sample((2, 3), np.float32), **attrs)
