"""Shape ops: each result is a copy laid out as ATen's view would be."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call, call_reference

aten = torch.ops.aten


def tensor(shape, dtype=np.float32):
    return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)


DTYPES = [np.float32, np.float64, np.int64, np.int32]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, size",
    [((2, 3, 4), [4, -1]), ((2, 3, 4), [24]), ((1,), []), ((0, 5), [5, 0]), ((7, 11), [11, 7]), ((3, 1001), [-1])],
)
def test_view_and_reshape(shape, size, dtype):
    x = tensor(shape, dtype)
    check_op("aten::view", lambda t: aten.view(t, size), x, size=size)
    check_op("aten::_unsafe_view", lambda t: aten._unsafe_view(t, size), x, size=size)
    check_op("aten::reshape", lambda t: aten.reshape(t, size), x, shape=size)


def test_reshape_of_a_strided_view():
    x = tensor((4, 6)).T
    check_op("aten::reshape", lambda t: aten.reshape(t, [3, 8]), x, shape=[3, 8])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, dims",
    [((2, 3, 4), [2, 0, 1]), ((5,), [0]), ((), []), ((2, 0, 3), [-1, 0, 1]), ((3, 1, 7, 2), [3, 1, 0, 2])],
)
def test_permute(shape, dims, dtype):
    check_op("aten::permute", lambda t: aten.permute(t, dims), tensor(shape, dtype), dims=dims)


@pytest.mark.parametrize("shape, dim0, dim1", [((2, 3), 0, 1), ((2, 3, 5), -1, 0), ((4,), 0, 0), ((3, 1001), 1, 0)])
def test_transpose(shape, dim0, dim1):
    check_op("aten::transpose.int", lambda t: aten.transpose(t, dim0, dim1), tensor(shape), dim0=dim0, dim1=dim1)


@pytest.mark.parametrize("shape", [(), (5,), (3, 7), (0, 2)])
def test_t(shape):
    check_op("aten::t", aten.t, tensor(shape))


@pytest.mark.parametrize(
    "shape, start, end", [((2, 3, 4), 0, -1), ((2, 3, 4, 5), 1, 2), ((), 0, -1), ((3,), 0, 0), ((2, 0, 3), 1, -1)]
)
def test_flatten(shape, start, end):
    check_op(
        "aten::flatten.using_ints", lambda t: aten.flatten(t, start, end), tensor(shape), start_dim=start, end_dim=end
    )


@pytest.mark.parametrize(
    "dim, start, end, step",
    [(0, 1, 5, 1), (1, None, None, 2), (1, -3, None, 1), (0, 2, 100, 3), (-1, 5, 2, 1), (0, -100, 3, 1)],
)
def test_slice(dim, start, end, step):
    check_op(
        "aten::slice.Tensor",
        lambda t: aten.slice(t, dim, start, end, step),
        tensor((7, 6)),
        dim=dim,
        start=start,
        end=end,
        step=step,
    )


@pytest.mark.parametrize("shape, dim", [((3, 1, 4), 1), ((3, 1, 4), 0), ((1,), -1), ((), 0)])
def test_squeeze(shape, dim):
    check_op("aten::squeeze.dim", lambda t: aten.squeeze(t, dim), tensor(shape), dim=dim)


@pytest.mark.parametrize("shape, dim", [((3, 4), 0), ((3, 4), 2), ((3, 4), -1), ((), 0), ((0,), 1)])
def test_unsqueeze(shape, dim):
    check_op("aten::unsqueeze", lambda t: aten.unsqueeze(t, dim), tensor(shape), dim=dim)


@pytest.mark.parametrize(
    "shape, size", [((3, 1), [3, 4]), ((3, 1), [-1, 4]), ((4,), [2, 3, 4]), ((), [5]), ((1, 1), [0, 2])]
)
def test_expand(shape, size):
    check_op("aten::expand", lambda t: aten.expand(t, size), tensor(shape), size=size)


@pytest.mark.parametrize(
    "shape, dim, index",
    [((3, 4), 0, 2), ((3, 4), 1, -1), ((2, 7, 32), 1, 0), ((5,), 0, 4), ((2, 0, 3), 2, 1), ((1, 1), -1, 0)],
)
def test_select(shape, dim, index):
    check_op("aten::select.int", lambda t: aten.select(t, dim, index), tensor(shape), dim=dim, index=index)
    check_op("aten::select.int", lambda t: aten.select(t, dim, index), tensor(shape).T.copy().T, dim=dim, index=index)


@pytest.mark.parametrize(
    "shape, dim, sizes",
    [((2, 96), 1, [3, 32]), ((2, 96), -1, [3, -1]), ((6,), 0, [1, 6, 1]), ((4, 0), 1, [0, 5]), ((3, 4), 0, [3])],
)
def test_unflatten(shape, dim, sizes):
    check_op("aten::unflatten.int", lambda t: aten.unflatten(t, dim, sizes), tensor(shape), dim=dim, sizes=sizes)


@pytest.mark.parametrize(
    "shape, dims", [((3, 1, 1, 4), [1, 2]), ((3, 1, 4), [0, -2]), ((1,), [0]), ((), [0]), ((2, 3), [])]
)
def test_squeeze_dims(shape, dims):
    check_op("aten::squeeze.dims", lambda t: aten.squeeze(t, dims), tensor(shape), dim=dims)


@pytest.mark.parametrize("weight_dtype", [np.float32, np.float64, np.float16, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("indices_shape", [(5,), (2, 3), (0,), ()])
def test_embedding(weight_dtype, index_dtype, indices_shape):
    """The fast kernel (whole rows) and the reference (element by element)
    agree with torch for weights of every item size."""
    weight = (np.random.default_rng(0).standard_normal((11, 7)) * 10).astype(weight_dtype)
    indices = (np.arange(int(np.prod(indices_shape))) * 4 % 11).astype(index_dtype).reshape(indices_shape)
    check_op("aten::embedding", lambda w, i: aten.embedding(w, i.long()), weight, indices)


@pytest.mark.parametrize(
    "op, x, attrs, message",
    [
        ("aten::view", tensor((2, 3)), dict(size=[4, 2]), r"size: shape \[4, 2\] holds 8 elements, the input has 6"),
        ("aten::view", tensor((2, 3)), dict(size=[-1, -1]), "only one dimension can be -1"),
        ("aten::reshape", tensor((2, 3)), dict(shape=[-1, 4]), r"cannot infer -1 in \[-1, 4\] for 6 elements"),
        ("aten::permute", tensor((2, 3)), dict(dims=[0, 0]), "dims: dimension 0 repeats"),
        ("aten::permute", tensor((2, 3)), dict(dims=[0]), r"dims: expected 2 dimensions for input float32\[2, 3\]"),
        ("aten::transpose.int", tensor((2, 3)), dict(dim0=0, dim1=2), "dim1: dimension 2 is out of range for rank 2"),
        ("aten::t", tensor((2, 3, 4)), {}, r"expected a tensor of rank 2 or less, got float32\[2, 3, 4\]"),
        ("aten::slice.Tensor", tensor((4,)), dict(step=0), "step: expected a positive step, got 0"),
        ("aten::expand", tensor((3, 2)), dict(size=[3, 4]), r"cannot expand float32\[3, 2\] to \[3, 4\]"),
        ("aten::flatten.using_ints", tensor((2, 3, 4)), dict(start_dim=2, end_dim=1), "must not come after"),
        ("aten::select.int", tensor((2, 3)), dict(dim=1, index=3), "index: 3 is out of range for dim 1 of size 3"),
        ("aten::select.int", tensor(()), dict(dim=0, index=0), "self: cannot select from a scalar"),
        ("aten::unflatten.int", tensor((2, 6)), dict(dim=1, sizes=[4, -1]), r"sizes: cannot infer -1 in \[4, -1\]"),
        ("aten::unflatten.int", tensor((2, 6)), dict(dim=1, sizes=[4, 2]), r"sizes: shape \[4, 2\] holds 8"),
    ],
)
def test_bad_arguments(op, x, attrs, message):
    with pytest.raises(opgraph.Error, match=f"^{op}: .*{message}"):
        call(op, x, **attrs)


@pytest.mark.parametrize("run", [call, call_reference])
def test_embedding_index_out_of_range(run):
    with pytest.raises(opgraph.Error, match="indices: index 11 at position 1 is out of range for 11 embeddings"):
        run("aten::embedding", np.zeros((11, 2), np.float32), np.array([0, 11]))
    with pytest.raises(opgraph.Error, match="indices: index -1 at position 0 is out of range for 11 embeddings"):
        run("aten::embedding", np.zeros((11, 2), np.float32), np.array([-1], np.int32))
    with pytest.raises(opgraph.Error, match=r"indices: expected int64 or int32, got float32\[2\]"):
        call("aten::embedding", np.zeros((11, 2), np.float32), np.zeros(2, np.float32))
