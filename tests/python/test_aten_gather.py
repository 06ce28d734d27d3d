"""gather, index_select and index.Tensor (advanced indexing) against their
references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

aten = torch.ops.aten


def tensor(shape, dtype=np.float32):
    values = np.arange(int(np.prod(shape))).reshape(shape)
    return values % 3 == 0 if dtype == np.bool_ else values.astype(dtype)


def positions(shape, bound, seed=0, dtype=np.int64):
    return np.random.default_rng(seed).integers(-bound, bound, size=shape).astype(dtype)


GATHERS = {
    "bert-token-types": ((1, 512), 1, (1, 7)),
    "dim0": ((5, 3), 0, (4, 3)),
    "smaller-other-dims": ((5, 6), 1, (2, 9)),
    "3d": ((2, 3, 4), 2, (2, 3, 6)),
    "empty": ((3, 4), 1, (3, 0)),
    "1d": ((7,), 0, (10,)),
}


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("case", GATHERS)
def test_gather_matches_torch(case, index_dtype):
    shape, dim, index_shape = GATHERS[case]
    index = positions(index_shape, shape[dim], dtype=index_dtype) % shape[dim]  # ATen's gather: no negatives
    fast = check_op("aten::gather", lambda t, i: torch.gather(t, dim, i.long()), tensor(shape), index, dim=dim)
    assert fast.shape == index_shape


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize(
    "shape, dim, index_shape", [((5, 3), 0, (4,)), ((2, 6, 3), 1, (8,)), ((4,), 0, ()), ((3, 4), -1, (0,))]
)
def test_index_select_matches_torch(shape, dim, index_shape, dtype):
    index = np.asarray(positions(index_shape, shape[dim]) % shape[dim])
    check_op(
        "aten::index_select",
        lambda t, i: torch.index_select(t, dim, i.reshape(-1)),
        tensor(shape, dtype),
        index,
        dim=dim,
    )


def test_index_select_strided_self():
    x = tensor((6, 8))[::2, 1::2]
    check_op("aten::index_select", lambda t, i: torch.index_select(t, 1, i), x, np.array([3, 0, 1]), dim=1)


# index.Tensor cases: the list of indices (None for a whole dim), as x[...].
INDEXES = {
    "gpt2-mask": ((2, 7), [(2, 1, 1, 1), (1, 1, 7, 1)]),
    "one": ((5, 4), [(3,)]),
    "second-dim": ((5, 4, 3), [None, (2, 2)]),
    "adjacent-pair": ((4, 5, 6), [None, (3,), (3,)]),
    "separated": ((4, 5, 6), [(2, 1), None, (3,)]),
    "all-dims": ((3, 4), [(6,), (6,)]),
    "empty-index": ((3, 4), [(0,)]),
    "zero-d-index": ((3, 4), [()]),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("case", INDEXES)
def test_index_matches_torch(case, dtype):
    shape, index_shapes = INDEXES[case]
    indices = [None if s is None else positions(s, shape[d], seed=d) for d, s in enumerate(index_shapes)]
    check_op("aten::index.Tensor", lambda t, i: aten.index(t, i), tensor(shape, dtype), indices)


def test_index_with_int32_and_strided_self():
    x = tensor((6, 8))[::2].T
    check_op("aten::index.Tensor", lambda t, i: aten.index(t, [i[0].long()]), x, [np.array([7, 0, -2], np.int32)])


@pytest.mark.parametrize("name, overload", [("gather", "default"), ("index_select", "default"), ("index", "Tensor")])
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


BAD = {
    "gather-range": (
        "aten::gather",
        (tensor((2, 3)), np.array([[0, 3]])),
        dict(dim=1),
        r"index: 3 at position 1 is out of range for a dim of size 3",
    ),
    "gather-rank": ("aten::gather", (tensor((2, 3)), np.array([0])), dict(dim=1), r"index: expected rank 2"),
    "gather-float": (
        "aten::gather",
        (tensor((2, 3)), np.zeros((2, 3), np.float32)),
        dict(dim=1),
        r"index: expected int64 or int32",
    ),
    "select-range": (
        "aten::index_select",
        (tensor((2, 3)), np.array([-1])),
        dict(dim=1),
        r"index: -1 at position 0 is out of range",
    ),
    "gather-negative": (
        "aten::gather",
        (tensor((2, 3)), np.array([[0], [-1]])),
        dict(dim=1),
        r"index: -1 at position 1 is out of range",
    ),
    "index-too-many": (
        "aten::index.Tensor",
        (tensor((2,)), [np.array([0]), np.array([0])]),
        {},
        r"indices: 2 indices for a tensor of rank 1",
    ),
    "index-bool": (
        "aten::index.Tensor",
        (tensor((2, 3)), [np.array([True, False])]),
        {},
        r"indices\[0\]: expected an int64 or int32 tensor \(boolean masks",
    ),
    "index-broadcast": (
        "aten::index.Tensor",
        (tensor((4, 4)), [np.array([0, 1]), np.array([0, 1, 2])]),
        {},
        r"indices\[1\]: shape \[3\] does not broadcast with the other indices' \[2\]",
    ),
    "index-none": ("aten::index.Tensor", (tensor((4, 4)), [None]), {}, r"indices: expected at least one index"),
    "index-range": ("aten::index.Tensor", (tensor((4, 4)), [None, np.array([4])]), {}, r"index: 4 at position 0"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, *inputs, **attrs)
