"""split, split_with_sizes, chunk and unbind: ops returning a Tensor[] whose
length the shape function decides."""

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


CASES = {
    "split-gpt2-qkv": ("aten::split.Tensor", (2, 7, 96), dict(split_size=32, dim=2)),
    "split-uneven": ("aten::split.Tensor", (7, 3), dict(split_size=3)),
    "split-larger": ("aten::split.Tensor", (2, 3), dict(split_size=5, dim=1)),
    "split-empty-dim": ("aten::split.Tensor", (0, 3), dict(split_size=2)),
    "sizes": ("aten::split_with_sizes", (2, 9, 2), dict(split_sizes=[2, 0, 7], dim=1)),
    "chunk": ("aten::chunk", (5, 4), dict(chunks=3)),
    "chunk-more-than-size": ("aten::chunk", (2, 5), dict(chunks=4, dim=0)),
    "unbind": ("aten::unbind.int", (3, 2, 4), dict(dim=1)),
    "unbind-first": ("aten::unbind.int", (2, 5), {}),
    "unbind-empty": ("aten::unbind.int", (0, 5), {}),
}


def torch_fn(name, attrs):
    op = {
        "aten::split.Tensor": aten.split.Tensor,
        "aten::split_with_sizes": aten.split_with_sizes,
        "aten::chunk": aten.chunk,
        "aten::unbind.int": aten.unbind.int,
    }[name]
    return lambda t: op(t, **attrs)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("case", CASES)
def test_pieces_match_torch(case, dtype):
    name, shape, attrs = CASES[case]
    pieces = check_op(name, torch_fn(name, attrs), tensor(shape, dtype), **attrs)
    assert isinstance(pieces, tuple)


def test_a_single_piece_is_still_a_list():
    (piece,) = call("aten::split.Tensor", tensor((2, 3)), split_size=3, dim=1)
    np.testing.assert_array_equal(piece, tensor((2, 3)))


def test_strided_input():
    x = tensor((6, 8))[::2].T
    check_op("aten::split.Tensor", torch_fn("aten::split.Tensor", dict(split_size=3)), x, split_size=3)


@pytest.mark.parametrize(
    "name, overload", [("split", "Tensor"), ("split_with_sizes", "default"), ("chunk", "default"), ("unbind", "int")]
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


BAD = {
    "split-size": ("aten::split.Tensor", dict(split_size=0), r"split_size: expected a positive size, got 0"),
    "sizes-sum": (
        "aten::split_with_sizes",
        dict(split_sizes=[1, 1]),
        r"split_sizes: \[1, 1\] add up to 2, the dim "
        r"has size 4",
    ),
    "chunks": ("aten::chunk", dict(chunks=0), r"chunks: expected a positive number of chunks"),
    "dim": ("aten::unbind.int", dict(dim=3), r"dim: expected a dim in \[-2, 1\]"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, tensor((4, 3)), **attrs)
