"""Ops that make tensors from attributes (arange, full, zeros, ones, the
*_like and new_* variants) against their references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

ARANGES = {
    "end": ("aten::arange", dict(end=7)),
    "end-zero": ("aten::arange", dict(end=0)),
    "end-float": ("aten::arange", dict(end=2.5)),
    "start": ("aten::arange.start", dict(start=-3, end=4)),
    "start-step": ("aten::arange.start_step", dict(start=1, end=10, step=3)),
    "negative-step": ("aten::arange.start_step", dict(start=5, end=-5, step=-2)),
    "float-step": ("aten::arange.start_step", dict(start=0, end=1, step=0.1)),
    "dtype": ("aten::arange", dict(end=5, dtype="float64")),
    "int-dtype-of-float": ("aten::arange.start_step", dict(start=0.5, end=4, step=1, dtype="int32")),
}


@pytest.mark.parametrize("case", ARANGES)
def test_arange_matches_torch(case):
    name, attrs = ARANGES[case]
    args = [attrs[k] for k in ("start", "end", "step") if k in attrs]
    dtype = getattr(torch, attrs["dtype"]) if "dtype" in attrs else None
    check_op(name, lambda: torch.arange(*args, dtype=dtype), **attrs)


FILLS = {
    "full": ("aten::full", lambda: torch.full([2, 3], 1.5), dict(size=[2, 3], fill_value=1.5)),
    "full-int": ("aten::full", lambda: torch.full([4], 7), dict(size=[4], fill_value=7)),
    "full-dtype": (
        "aten::full",
        lambda: torch.full([2, 0], 1, dtype=torch.bool),
        dict(size=[2, 0], fill_value=1, dtype="bool"),
    ),
    "zeros": ("aten::zeros", lambda: torch.zeros([3, 1]), dict(size=[3, 1])),
    "ones": ("aten::ones", lambda: torch.ones([], dtype=torch.int64), dict(size=[], dtype="int64")),
    "empty": ("aten::empty.memory_format", lambda: torch.zeros([2, 2]), dict(size=[2, 2])),
    "scalar_tensor": ("aten::scalar_tensor", lambda: torch.scalar_tensor(-2.5), dict(s=-2.5)),
    "scalar_tensor-int": (
        "aten::scalar_tensor",
        lambda: torch.scalar_tensor(3, dtype=torch.int64),
        dict(s=3, dtype="int64"),
    ),
}


@pytest.mark.parametrize("case", FILLS)
def test_fills_match_torch(case):
    name, torch_fn, attrs = FILLS[case]
    check_op(name, torch_fn, **attrs)


LIKE = {
    "zeros_like": ("aten::zeros_like", torch.zeros_like, {}),
    "ones_like": ("aten::ones_like", torch.ones_like, {}),
    "full_like": ("aten::full_like", lambda t: torch.full_like(t, 3), dict(fill_value=3)),
    "ones_like-bool": ("aten::ones_like", lambda t: torch.ones_like(t, dtype=torch.bool), dict(dtype="bool")),
    "new_ones": ("aten::new_ones", lambda t: t.new_ones([2, 5]), dict(size=[2, 5])),
    "new_ones-bool": ("aten::new_ones", lambda t: t.new_ones([], dtype=torch.bool), dict(size=[], dtype="bool")),
    "new_zeros": ("aten::new_zeros", lambda t: t.new_zeros([0, 3]), dict(size=[0, 3])),
    "new_full": ("aten::new_full", lambda t: t.new_full([3], -1), dict(size=[3], fill_value=-1)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("case", LIKE)
def test_like_and_new_match_torch(case, dtype):
    name, torch_fn, attrs = LIKE[case]
    check_op(name, torch_fn, np.ones((3, 4), dtype)[:, ::2], **attrs)


@pytest.mark.parametrize(
    "name, overload",
    [
        ("arange", "default"),
        ("arange", "start"),
        ("arange", "start_step"),
        ("full", "default"),
        ("zeros", "default"),
        ("ones", "default"),
        ("scalar_tensor", "default"),
        ("zeros_like", "default"),
        ("ones_like", "default"),
        ("full_like", "default"),
        ("empty_like", "default"),
        ("new_ones", "default"),
        ("new_zeros", "default"),
        ("new_full", "default"),
        ("new_empty", "default"),
        ("empty", "memory_format"),
    ],
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


BAD = {
    "step-zero": ("aten::arange.start_step", dict(start=0, end=3, step=0), r"step: expected a non-zero step"),
    "wrong-way": ("aten::arange.start_step", dict(start=0, end=3, step=-1), r"step: -1 does not lead from start 0"),
    "inf": ("aten::arange", dict(end=float("inf")), r"start and end: expected finite values"),
    "negative-size": ("aten::zeros", dict(size=[2, -1]), r"size: expected non-negative extents, got \[2, -1\]"),
    "device": ("aten::ones", dict(size=[2], device="cuda"), r"device: expected None or cpu"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, **attrs)
