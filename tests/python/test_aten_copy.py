"""Ops that copy or rearrange a whole tensor: flip, diagonal, as_strided,
repeat, copy, fill.Scalar and empty_strided, against their references and
PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64, np.int64, np.bool_]


def tensor(shape, dtype=np.float32, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 4
    if dtype == np.bool_:
        return np.asarray(values > 0)
    return np.asarray(np.round(values) if np.issubdtype(dtype, np.integer) else values, dtype)


FLIPS = [
    ((5,), [0]),
    ((3, 4), [0]),
    ((3, 4), [1]),
    ((3, 4), [0, -1]),
    ((2, 3, 5), [1]),
    ((2, 3, 5), [2, 0]),
    ((2, 3, 5), []),
    ((0, 3), [0, 1]),
    ((1, 7), [0]),
    ((), []),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dims", FLIPS)
def test_flip(shape, dims, dtype):
    check_op("aten::flip", lambda t: aten.flip(t, dims), tensor(shape, dtype), dims=dims)


def test_flip_strided_input():
    check_op("aten::flip", lambda t: aten.flip(t, [0, 1]), tensor((6, 9))[::2, 1::3].T, dims=[0, 1])


DIAGONALS = [
    ((4, 4), 0, 0, 1),
    ((3, 5), 1, 0, 1),
    ((3, 5), -2, 0, 1),
    ((5, 3), 2, 1, 0),
    ((2, 3, 4), 0, 1, 2),
    ((2, 3, 4), -1, 2, 0),
    ((2, 3, 4), 1, -1, -3),
    ((3, 3), 5, 0, 1),
    ((3, 3), -3, 0, 1),
    ((0, 4), 0, 0, 1),
    ((2, 7, 1, 5), 0, 1, 3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, offset, dim1, dim2", DIAGONALS)
def test_diagonal(shape, offset, dim1, dim2, dtype):
    check_op(
        "aten::diagonal",
        lambda t: aten.diagonal(t, offset, dim1, dim2).clone(),
        tensor(shape, dtype),
        offset=offset,
        dim1=dim1,
        dim2=dim2,
    )


def test_diagonal_strided_input():
    check_op("aten::diagonal", lambda t: aten.diagonal(t, 1).clone(), tensor((8, 6))[::2].T, offset=1)


AS_STRIDED = [
    ((12,), [3, 4], [4, 1], None),
    ((12,), [4, 3], [1, 4], 0),
    ((3, 4), [2, 2], [4, 1], 5),
    ((10,), [3, 3], [1, 1], 2),
    ((10,), [4], [0], 9),
    ((6,), [], [], 3),
    ((6,), [0, 5], [100, 1], 50),
    ((2, 3, 5), [2, 2, 2], [15, 5, 1], 2),
    ((5,), [5], [1], None),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, size, stride, offset", AS_STRIDED)
def test_as_strided(shape, size, stride, offset, dtype):
    check_op(
        "aten::as_strided",
        lambda t: aten.as_strided(t, size, stride, offset).clone(),
        tensor(shape, dtype),
        size=size,
        stride=stride,
        storage_offset=offset,
    )


REPEATS = [
    ((3,), [2]),
    ((2, 3), [2, 3]),
    ((2, 3), [3, 1, 2]),
    ((2, 1, 3), [1, 4, 1]),
    ((2, 3), [0, 2]),
    ((), [3, 2]),
    ((), []),
    ((0, 2), [2, 2]),
    ((5, 7), [1, 1]),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, repeats", REPEATS)
def test_repeat(shape, repeats, dtype):
    check_op("aten::repeat", lambda t: aten.repeat(t, repeats), tensor(shape, dtype), repeats=repeats)


def test_repeat_strided_input():
    check_op("aten::repeat", lambda t: aten.repeat(t, [2, 1, 3]), tensor((6, 5))[::2, 1:].T, repeats=[2, 1, 3])


COPIES = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 4), (3, 1)),
    ((3, 4), ()),
    ((2, 0, 3), (3,)),
    ((), ()),
    ((5, 1, 7), (1, 1, 7)),
]


@pytest.mark.parametrize("src_dtype", DTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, src_shape", COPIES)
def test_copy(shape, src_shape, dtype, src_dtype):
    src = tensor(src_shape, src_dtype, seed=1)
    check_op("aten::copy", aten.copy, tensor(shape, dtype), src)


def test_copy_strided_src():
    check_op("aten::copy", aten.copy, tensor((4, 3), np.float64), tensor((3, 8))[:, ::2].T)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 5), (2, 1, 3)])
@pytest.mark.parametrize("value", [0, 1, -1.5])
def test_fill_scalar(shape, value, dtype):
    check_op("aten::fill.Scalar", lambda t: aten.fill.Scalar(t, value), tensor(shape, dtype), value=value)


@pytest.mark.parametrize(
    "size, stride, dtype",
    [
        ([2, 3], [3, 1], None),
        ([2, 3], [1, 2], "float64"),
        ([0, 4], [4, 1], "int64"),
        ([], [], "bool"),
        ([5], [2], None),
    ],
)
def test_empty_strided_is_zeros(size, stride, dtype):
    attrs = dict(size=size, stride=stride) if dtype is None else dict(size=size, stride=stride, dtype=dtype)
    torch_dtype = getattr(torch, dtype) if dtype else None
    check_op("aten::empty_strided", lambda: torch.zeros(size, dtype=torch_dtype), **attrs)


@pytest.mark.parametrize(
    "name, overload",
    [
        ("flip", "default"),
        ("diagonal", "default"),
        ("as_strided", "default"),
        ("repeat", "default"),
        ("copy", "default"),
        ("fill", "Scalar"),
        ("empty_strided", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


BAD = {
    "flip-repeat": ("aten::flip", (tensor((2, 3)),), dict(dims=[1, -1]), r"dims: dimension -1 repeats in \[1, -1\]"),
    "flip-dim": ("aten::flip", (tensor((2, 3)),), dict(dims=[2]), r"dims: dimension 2 is out of range for rank 2"),
    "diagonal-same-dim": (
        "aten::diagonal",
        (tensor((2, 3)),),
        dict(dim1=1, dim2=-1),
        r"dim1 and dim2: expected two different dims, got 1 twice",
    ),
    "diagonal-rank": ("aten::diagonal", (tensor((3,)),), {}, r"self: expected a tensor of rank 2 or more"),
    "as-strided-beyond": (
        "aten::as_strided",
        (tensor((2, 3)),),
        dict(size=[2, 3], stride=[3, 1], storage_offset=1),
        r"size and stride: \[2, 3\] with strides \[3, 1\] and offset 1 read element 6, beyond input",
    ),
    "as-strided-rank": (
        "aten::as_strided",
        (tensor((6,)),),
        dict(size=[2, 3], stride=[3]),
        r"size and stride: expected as many strides as sizes",
    ),
    "as-strided-negative": (
        "aten::as_strided",
        (tensor((6,)),),
        dict(size=[2], stride=[-1], storage_offset=3),
        r"size and stride: expected non-negative values",
    ),
    "repeat-short": ("aten::repeat", (tensor((2, 3)),), dict(repeats=[2]), r"repeats: expected at least 2 values"),
    "repeat-negative": (
        "aten::repeat",
        (tensor((2, 3)),),
        dict(repeats=[2, -1]),
        r"repeats: expected non-negative values",
    ),
    "copy-broadcast": (
        "aten::copy",
        (tensor((2, 3)), tensor((2, 1, 3))),
        {},
        r"src: expected a shape that broadcasts to float32\[2, 3\], got float32\[2, 1, 3\]",
    ),
    "copy-broadcast-self": (
        "aten::copy",
        (tensor((2, 1)), tensor((2, 3))),
        {},
        r"src: expected a shape that broadcasts to float32\[2, 1\]",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, *inputs, **attrs)
