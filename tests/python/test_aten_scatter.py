"""scatter, scatter_add, scatter_reduce, index_put, select_scatter,
slice_scatter, masked_scatter, embedding_dense_backward and _embedding_bag
against their references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64, np.int64]


def tensor(shape, dtype=np.float32, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape) * 4
    if dtype == np.bool_:
        return np.asarray(values > 0)
    return np.asarray(np.round(values) if np.issubdtype(dtype, np.integer) else values, dtype)


def positions(shape, bound, seed=0, dtype=np.int64):
    """Indices in [0, bound), repeats likely."""
    return np.random.default_rng(seed).integers(0, bound, size=shape).astype(dtype)


def distinct_positions(self_shape, index_shape, dim, seed=0):
    """Indices in [0, self_shape[dim]) that never repeat along dim, so that a
    scatter without a reduction has one answer."""
    draw_shape = list(index_shape)
    draw_shape[dim] = self_shape[dim]
    order = np.argsort(np.random.default_rng(seed).random(draw_shape), axis=dim)
    return np.take(order, np.arange(index_shape[dim]), axis=dim).astype(np.int64)


# self shape, dim, index shape, src shape (at least the index's extents)
SCATTERS = {
    "rows": ((5, 3), 0, (4, 3), (4, 3)),
    "columns": ((4, 7), 1, (3, 5), (3, 5)),
    "last-of-3d": ((2, 3, 4), 2, (2, 3, 4), (2, 3, 4)),
    "middle-of-3d": ((2, 5, 3), 1, (2, 2, 3), (2, 2, 3)),
    "src-larger": ((3, 6, 5), 1, (2, 4, 3), (3, 5, 4)),
    "negative-dim": ((3, 4), -1, (3, 2), (3, 2)),
    "1d": ((7,), 0, (5,), (6,)),
    "empty-index": ((3, 4), 1, (3, 0), (3, 2)),
    "ones": ((1, 1), 0, (1, 1), (1, 1)),
    "threaded": ((256, 301), 1, (256, 300), (256, 300)),
    "threaded-dim0": ((300, 257), 0, (256, 257), (256, 257)),
}


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("case", SCATTERS)
def test_scatter_src(case, dtype):
    self_shape, dim, index_shape, src_shape = SCATTERS[case]
    index = distinct_positions(self_shape, index_shape, dim % len(self_shape))
    check_op(
        "aten::scatter.src",
        lambda s, i, x: aten.scatter.src(s, dim, i, x),
        tensor(self_shape, dtype),
        index,
        tensor(src_shape, dtype, seed=1),
        dim=dim,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["rows", "middle-of-3d", "1d", "empty-index"])
def test_scatter_value(case, dtype):
    self_shape, dim, index_shape, _ = SCATTERS[case]
    index = positions(index_shape, self_shape[dim])  # repeats write the same value
    check_op(
        "aten::scatter.value",
        lambda s, i: aten.scatter.value(s, dim, i, -5),
        tensor(self_shape, dtype),
        index,
        dim=dim,
        value=-5,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", SCATTERS)
def test_scatter_add(case, dtype):
    self_shape, dim, index_shape, src_shape = SCATTERS[case]
    index = positions(index_shape, self_shape[dim])
    check_op(
        "aten::scatter_add",
        lambda s, i, x: aten.scatter_add(s, dim, i, x),
        tensor(self_shape, dtype),
        index,
        tensor(src_shape, dtype, seed=1),
        dim=dim,
    )


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["rows", "columns", "src-larger", "1d", "empty-index", "threaded"])
def test_scatter_reduce(case, dtype, reduce, include_self):
    self_shape, dim, index_shape, src_shape = SCATTERS[case]
    index = positions(index_shape, self_shape[dim])
    src = tensor(src_shape, dtype, seed=1)
    if reduce == "prod":  # factors near 1, so that products of many stay finite and exact
        src = np.clip(src, -2, 2)
        src[src == 0] = 1
    check_op(
        "aten::scatter_reduce.two",
        lambda s, i, x: aten.scatter_reduce.two(s, dim, i, x, reduce, include_self=include_self),
        tensor(self_shape, dtype),
        index,
        src,
        dim=dim,
        reduce=reduce,
        include_self=include_self,
        tolerance=dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else None,
    )


def test_scatter_reduce_integer_mean_floors():
    self = np.array([1, 2, -3, 7], np.int64)
    index = np.array([0, 0, 2, 2, 3])
    src = np.array([4, 5, 2, -4, 1], np.int64)
    got = check_op(
        "aten::scatter_reduce.two",
        lambda s, i, x: aten.scatter_reduce.two(s, 0, i, x, "mean"),
        self,
        index,
        src,
        dim=0,
        reduce="mean",
    )
    np.testing.assert_array_equal(got, [3, 2, -2, 4])


def test_scatter_int32_index_and_strided_inputs():
    self = tensor((6, 10))[::2, 1::2]
    src = tensor((5, 8), seed=2).T
    index = distinct_positions((3, 5), (3, 5), 1).astype(np.int32)
    check_op("aten::scatter.src", lambda s, i, x: aten.scatter.src(s, 1, i.long(), x), self, index, src, dim=1)
    check_op("aten::scatter_add", lambda s, i, x: aten.scatter_add(s, 1, i.long(), x), self, index, src, dim=1)


def test_scatter_0d():
    check_op(
        "aten::scatter.src",
        lambda s, i, x: aten.scatter.src(s, 0, i, x),
        np.array(1.5),
        np.array(0),
        np.array(-2.0),
        dim=0,
    )


# index_put: self shape, indices (None or an index shape), values shape
INDEX_PUTS = {
    "one": ((5, 4), [(3,)], (3, 4)),
    "one-broadcast-row": ((5, 4), [(3,)], (4,)),
    "scalar-value": ((5, 4), [(2, 2)], ()),
    "second-dim": ((5, 4, 3), [None, (2,)], (5, 2, 3)),
    "adjacent-pair": ((4, 5, 6), [None, (3,), (3,)], (4, 3)),
    "leading-pair": ((4, 5, 6), [(3,), (3,)], (3, 6)),
    "separated": ((4, 5, 6), [(2, 1), None, (3,)], (2, 3, 5)),
    "separated-broadcast": ((4, 5, 6), [(2, 1), None, (3,)], (1, 3, 1)),
    "all-dims": ((3, 4), [(6,), (6,)], (6,)),
    "all-dims-0d": ((3, 4), [(), ()], ()),
    "empty-index": ((3, 4), [(0,)], (1,)),
    "gpt2-mask": ((2, 7), [(2, 1, 1, 1), (1, 1, 7, 1)], (1,)),
    "large": ((300, 512), [(200,)], (200, 512)),
}


def index_put_indices(self_shape, index_shapes, distinct):
    """Index tensors with negative entries; with `distinct`, no two index
    tuples name one element (one-dim indices are drawn without repeats)."""
    indices = []
    for d, shape in enumerate(index_shapes):
        if shape is None:
            indices.append(None)
            continue
        n = self_shape[d]
        rng = np.random.default_rng(d)
        if distinct and len([s for s in index_shapes if s is not None]) == 1:
            values = rng.permutation(n)[: int(np.prod(shape))].reshape(shape)
        else:
            values = rng.integers(0, n, size=shape)
        indices.append(np.asarray(values - n * (values % 2), np.int64))  # odd ones counted from the end
    return indices


def unique_targets(self_shape, indices):
    indexed = np.arange(int(np.prod(self_shape))).reshape(self_shape)[
        tuple(slice(None) if i is None else i for i in indices)
    ]
    return len(np.unique(indexed)) == indexed.size


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", INDEX_PUTS)
def test_index_put(case, accumulate, dtype):
    self_shape, index_shapes, values_shape = INDEX_PUTS[case]
    indices = index_put_indices(self_shape, index_shapes, distinct=not accumulate)
    if not accumulate and not unique_targets(self_shape, indices) and values_shape != ():
        pytest.skip("repeated targets leave the value written last to ATen's choice")
    check_op(
        "aten::index_put",
        lambda s, i, v: aten.index_put(s, i, v, accumulate),
        tensor(self_shape, dtype),
        indices,
        tensor(values_shape, dtype, seed=3),
        accumulate=accumulate,
    )


# self shape, indices (a mask's shape, an index tensor's shape or None), values
# shape (None: one value per true element of the mask)
MASKED_INDEX_PUTS = {
    "whole": ((3, 4), [("mask", (3, 4))], ()),
    "whole-values": ((3, 4), [("mask", (3, 4))], None),
    "rows": ((5, 3), [("mask", (5,))], (3,)),
    "trailing": ((2, 3, 4), [None, ("mask", (3, 4))], (2, 1)),
    "with-index": ((4, 5, 3), [("mask", (4,)), (2, 1)], (3,)),
    "no-true": ((3, 4), [("mask", (3, 4))], (0,)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", MASKED_INDEX_PUTS)
def test_index_put_with_masks(case, accumulate, dtype):
    self_shape, index_specs, values_shape = MASKED_INDEX_PUTS[case]
    rng = np.random.default_rng(6)
    indices = []
    for spec in index_specs:
        if spec is None:
            indices.append(None)
        elif spec[0] == "mask":
            indices.append(rng.random(spec[1]) < (0 if case == "no-true" else 0.5))
        else:
            indices.append(np.asarray(rng.integers(0, self_shape[len(indices)], spec), np.int64))
    if values_shape is None:
        values_shape = (int(indices[0].sum()),)
    check_op(
        "aten::index_put",
        lambda s, i, v: aten.index_put(s, i, v, accumulate),
        tensor(self_shape, dtype),
        indices,
        tensor(values_shape, dtype, seed=3),
        accumulate=accumulate,
    )


def test_index_put_in_place_form_runs_functionally():
    self = tensor((3, 4))
    mask = self < 0
    got = check_op("aten::index_put_", lambda s, i, v: aten.index_put(s, i, v), self, [mask], np.array(0.0, np.float32))
    assert (got >= 0).all() and (self < 0).any()


def test_index_put_accumulates_repeats_in_order():
    self = np.zeros(4, np.float64)
    got = check_op(
        "aten::index_put",
        lambda s, i, v: aten.index_put(s, i, v, True),
        self,
        [np.array([1, 1, -3, 3])],
        np.array([1.0, 2.0, 4.0, 8.0]),
        accumulate=True,
    )
    np.testing.assert_array_equal(got, [0, 7, 0, 8])


def test_index_put_int32_index_and_strided_inputs():
    self = tensor((8, 10))[::2, 1::2].T
    values = tensor((4, 6), seed=5)[:, ::2].T
    check_op(
        "aten::index_put",
        lambda s, i, v: aten.index_put(s, [i[0].long()], v, False),
        self,
        [np.array([4, 0, -2], np.int32)],
        values,
    )


SELECT_SCATTERS = [((5, 4), 0, 2), ((5, 4), 1, -1), ((2, 3, 4), 1, 0), ((7,), 0, 6), ((0, 3), 1, 2), ((3, 0), 0, 1)]


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("shape, dim, index", SELECT_SCATTERS)
def test_select_scatter(shape, dim, index, dtype):
    src_shape = shape[: dim % len(shape)] + shape[dim % len(shape) + 1 :]
    check_op(
        "aten::select_scatter",
        lambda s, x: aten.select_scatter(s, x, dim, index),
        tensor(shape, dtype),
        tensor(src_shape, dtype, seed=1),
        dim=dim,
        index=index,
    )


SLICE_SCATTERS = [
    ((7, 4), dict(dim=0, start=1, end=5, step=1)),
    ((7, 4), dict(dim=0, start=None, end=None, step=3)),
    ((5, 11), dict(dim=1, start=-8, end=-1, step=2)),
    ((5, 11), dict(dim=-1, start=3, end=100, step=1)),
    ((2, 3, 13), dict(dim=2, start=2, end=11, step=4)),
    ((4, 6), dict(dim=1, start=4, end=2, step=1)),  # empty
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, attrs", SLICE_SCATTERS)
def test_slice_scatter(shape, attrs, dtype):
    view_shape = torch.zeros(shape)[
        (slice(None),) * (attrs["dim"] % len(shape)) + (slice(attrs["start"], attrs["end"], attrs["step"]),)
    ].shape
    check_op(
        "aten::slice_scatter",
        lambda s, x: aten.slice_scatter(s, x, **attrs),
        tensor(shape, dtype),
        tensor(tuple(view_shape), dtype, seed=1),
        **attrs,
    )


def test_view_scatter_strided_src():
    src = tensor((8, 6))[::2].T
    check_op(
        "aten::select_scatter", lambda s, x: aten.select_scatter(s, x, 1, 3), tensor((6, 5, 4)), src, dim=1, index=3
    )


MASKED_SCATTERS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (3, 5)),
    ((2, 3, 5), (1, 3, 1)),
    ((0, 4), (4,)),
    ((), ()),
    ((7,), ()),
    ((67, 1031), (67, 1031)),
]


@pytest.mark.parametrize("dtype", DTYPES + [np.bool_])
@pytest.mark.parametrize("shape, mask_shape", MASKED_SCATTERS)
def test_masked_scatter(shape, mask_shape, dtype):
    mask = np.asarray(np.random.default_rng(4).random(mask_shape) < 0.4)
    out_numel = int(np.prod(np.broadcast_shapes(shape, mask_shape)))
    source = tensor((out_numel + 3,), dtype, seed=1)
    check_op("aten::masked_scatter", aten.masked_scatter, tensor(shape, dtype), mask, source)


def test_masked_scatter_takes_source_in_order():
    got = check_op(
        "aten::masked_scatter",
        aten.masked_scatter,
        np.zeros((2, 3)),
        np.array([True, False, True]),
        np.arange(10.0).reshape(2, 5),
    )
    np.testing.assert_array_equal(got, [[0, 0, 1], [2, 0, 3]])


EMBEDDING_BACKWARDS = [
    ((4, 7), 10, -1, False),
    ((4, 7), 10, 3, False),
    ((2, 3, 5), 6, -1, True),
    ((13,), 4, 0, True),
    ((0,), 5, -1, False),
    ((1000,), 50, 7, False),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_shape, num_weights, padding_idx, scale", EMBEDDING_BACKWARDS)
@pytest.mark.parametrize("dim", [1, 16, 131])
def test_embedding_dense_backward(index_shape, num_weights, padding_idx, scale, dim, dtype):
    indices = positions(index_shape, num_weights, seed=2)
    grad = tensor(index_shape + (dim,), dtype)
    check_op(
        "aten::embedding_dense_backward",
        lambda g, i: aten.embedding_dense_backward(g, i, num_weights, padding_idx, scale),
        grad,
        indices,
        num_weights=num_weights,
        padding_idx=padding_idx,
        scale_grad_by_freq=scale,
    )


# indices, offsets (bag starts)
BAGS = {
    "plain": ([1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 2, 5]),
    "one-bag": ([3, 3, 0], [0]),
    "empty-bags": ([7, 1], [0, 0, 2, 2]),
    "no-indices": ([], [0, 0]),
    "many": (list(np.random.default_rng(7).integers(0, 10, 3000)), list(range(0, 3000, 7))),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
@pytest.mark.parametrize("padding_idx", [-1, 2])
@pytest.mark.parametrize("case", BAGS)
def test_embedding_bag(case, padding_idx, include_last_offset, mode, index_dtype, dtype):
    indices, offsets = BAGS[case]
    if include_last_offset:
        offsets = offsets + [len(indices)]
    indices, offsets = np.array(indices, index_dtype), np.array(offsets, index_dtype)
    weight = tensor((10, 5), dtype)
    attrs = dict(mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx)
    check_op(
        "aten::_embedding_bag",
        lambda w, i, o: aten._embedding_bag(w, i, o, False, mode, False, None, include_last_offset, padding_idx),
        weight,
        indices,
        offsets,
        **attrs,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_per_sample_weights(include_last_offset, dtype):
    indices, offsets = (np.array(v) for v in BAGS["plain"])
    offsets = np.append(offsets, indices.size) if include_last_offset else offsets
    scales = tensor((indices.size,), dtype, seed=3)
    check_op(
        "aten::_embedding_bag",
        lambda w, i, o, p: aten._embedding_bag(w, i, o, False, 0, False, p, include_last_offset),
        tensor((10, 3), dtype),
        indices,
        offsets,
        scales,
        include_last_offset=include_last_offset,
    )


@pytest.mark.parametrize("padding_idx", [None, 4])
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_public_overloads(mode, padding_idx):
    indices, offsets = (np.array(v) for v in BAGS["plain"])
    weight = tensor((10, 3))
    check_op(
        "aten::embedding_bag.padding_idx",
        lambda w, i, o: aten.embedding_bag.padding_idx(w, i, o, False, mode, False, None, False, padding_idx),
        weight,
        indices,
        offsets,
        scale_grad_by_freq=False,
        mode=mode,
        sparse=False,
        include_last_offset=False,
        padding_idx=padding_idx,
    )
    if padding_idx is None:
        check_op(
            "aten::embedding_bag",
            lambda w, i, o: aten.embedding_bag(w, i, o, False, mode),
            weight,
            indices,
            offsets,
            mode=mode,
        )


def test_embedding_bag_strided_weight():
    weight = tensor((10, 8), np.float64)[:, ::2]
    indices, offsets = (np.array(v) for v in BAGS["plain"])
    check_op(
        "aten::_embedding_bag", lambda w, i, o: aten._embedding_bag(w, i, o, False, 1), weight, indices, offsets, mode=1
    )


class Writes(torch.nn.Module):
    """x[mask] = v, scatter_add, an embedding bag and the pads and copies that
    torch.export leaves as core ATen ops."""

    def __init__(self):
        super().__init__()
        self.bag = torch.nn.EmbeddingBag(10, 4, mode="mean")

    def forward(self, x, index):
        y = torch.nn.functional.pad(x, (1, -1, 0, 2), value=0.5).flip(-1).repeat(1, 2, 1, 1).clone()
        y[y < 0] = 0
        z = torch.zeros(2, 4).scatter_add(1, index, torch.ones(2, 3))
        return y, z, torch.diagonal(y, 0, 2, 3), self.bag(torch.tensor([1, 2, 4, 5]), torch.tensor([0, 2]))


@pytest.mark.parametrize("decompose", [False, True])
def test_exported_module_runs_on_the_session(tmp_path, decompose):
    from opgraph import ir

    model, inputs = Writes().eval(), (torch.randn(1, 3, 5, 6), torch.tensor([[0, 1, 1], [3, 3, 2]]))
    model_ir = ir.extract_ir(model, inputs, decompose=decompose)
    ops = (
        {"aten::index_put", "aten::_embedding_bag", "aten::constant_pad_nd"}
        if decompose
        else {"aten::index_put", "aten::embedding_bag.padding_idx", "aten::pad"}
    )
    assert ops <= {node.op_type for node in model_ir.nodes}
    model_ir.save(tmp_path / "writes.opg")
    actual = opgraph.Session(str(tmp_path / "writes.opg"), threads=2).run(*inputs)
    with torch.no_grad():
        expected = model(*inputs)
    for got, want in zip(actual, expected, strict=True):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "name, overload",
    [
        ("scatter", "src"),
        ("scatter", "value"),
        ("scatter_add", "default"),
        ("scatter_reduce", "two"),
        ("index_put", "default"),
        ("index_put_", "default"),
        ("select_scatter", "default"),
        ("slice_scatter", "default"),
        ("masked_scatter", "default"),
        ("embedding_dense_backward", "default"),
        ("_embedding_bag", "default"),
        ("embedding_bag", "padding_idx"),
        ("embedding_bag", "default"),
    ],
)
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


BAD = {
    "scatter-range": (
        "aten::scatter.src",
        (tensor((2, 3)), np.array([[0, 3]]), tensor((1, 2))),
        dict(dim=1),
        r"index: 3 at position 1 is out of range for a dim of size 3",
    ),
    "scatter-negative": (
        "aten::scatter_add",
        (tensor((2, 3)), np.array([[-1]]), tensor((1, 1))),
        dict(dim=1),
        r"index: -1 at position 0 is out of range",
    ),
    "scatter-index-too-large": (
        "aten::scatter.src",
        (tensor((2, 3)), np.zeros((3, 1), np.int64), tensor((3, 1))),
        dict(dim=1),
        r"index: expected at most src's extents \[3, 1\] and, except in dim 1, "
        r"self's \[2, 3\]",
    ),
    "scatter-src-smaller": (
        "aten::scatter.src",
        (tensor((2, 3)), np.zeros((2, 2), np.int64), tensor((2, 1))),
        dict(dim=1),
        r"index: expected at most src's extents",
    ),
    "scatter-rank": (
        "aten::scatter_add",
        (tensor((2, 3)), np.zeros((2,), np.int64), tensor((2,))),
        dict(dim=0),
        r"index: expected rank 2 like self",
    ),
    "scatter-src-dtype": (
        "aten::scatter.src",
        (tensor((2, 3)), np.zeros((2, 3), np.int64), tensor((2, 3), np.float64)),
        dict(dim=0),
        r"src: expected float32 like self, got float64\[2, 3\]",
    ),
    "scatter-reduce-name": (
        "aten::scatter_reduce.two",
        (tensor((2,)), np.zeros((2,), np.int64), tensor((2,))),
        dict(dim=0, reduce="max"),
        r"reduce: expected one of sum, prod, mean, amax, amin, got 'max'",
    ),
    "index-put-range": (
        "aten::index_put",
        (tensor((4, 4)), [None, np.array([4])], tensor((4, 1))),
        {},
        r"index: 4 at position 0 is out of range for a dim of size 4",
    ),
    "index-put-negative-range": (
        "aten::index_put",
        (tensor((4, 4)), [np.array([-5])], tensor((4,))),
        {},
        r"index: -5 at position 0 is out of range",
    ),
    "index-put-values": (
        "aten::index_put",
        (tensor((4, 4)), [np.array([0, 1])], tensor((3, 4))),
        {},
        r"values: expected a shape that broadcasts to the indexed \[2, 4\], got float32\[3, 4\]",
    ),
    "index-put-mask-shape": (
        "aten::index_put",
        (tensor((4, 3)), [None, np.array([True, False])], tensor(())),
        {},
        r"indices\[1\]: expected a mask of self's extents from dim 1 of float32\[4, 3\], "
        r"got bool\[2\]",
    ),
    "index-put-mask-values": (
        "aten::index_put",
        (tensor((4,)), [np.array([True, False, True, True])], tensor((2,))),
        {},
        r"values: expected a shape that broadcasts to the indexed \[3\], got float32\[2\]",
    ),
    "select-scatter-shape": (
        "aten::select_scatter",
        (tensor((4, 5)), tensor((4,))),
        dict(dim=0, index=1),
        r"src: expected float32\[5\], the part of self float32\[4, 5\] it replaces, got "
        r"float32\[4\]",
    ),
    "select-scatter-range": (
        "aten::select_scatter",
        (tensor((4, 5)), tensor((5,))),
        dict(dim=0, index=4),
        r"index: 4 is out of range for dim 0 of size 4",
    ),
    "slice-scatter-shape": (
        "aten::slice_scatter",
        (tensor((4, 5)), tensor((4, 2))),
        dict(dim=1, start=1, end=4),
        r"src: expected float32\[4, 3\]",
    ),
    "masked-scatter-short": (
        "aten::masked_scatter",
        (tensor((2, 3)), np.ones((2, 3), bool), tensor((5,))),
        {},
        r"source: mask holds more true elements than source's 5",
    ),
    "masked-scatter-mask": (
        "aten::masked_scatter",
        (tensor((2, 3)), np.ones((2, 3), np.int64), tensor((6,))),
        {},
        r"mask: expected bool",
    ),
    "masked-scatter-broadcast": (
        "aten::masked_scatter",
        (tensor((2, 3)), np.ones((2,), bool), tensor((6,))),
        {},
        r"self and other: shapes \[2, 3\] and \[2\] cannot be broadcast",
    ),
    "embedding-backward-range": (
        "aten::embedding_dense_backward",
        (tensor((3, 2)), np.array([0, 5, 1])),
        dict(num_weights=5, padding_idx=-1, scale_grad_by_freq=False),
        r"index: 5 at position 1 is out of range for a dim of size 5",
    ),
    "embedding-backward-shape": (
        "aten::embedding_dense_backward",
        (tensor((3, 2)), np.array([0, 1])),
        dict(num_weights=5, padding_idx=-1, scale_grad_by_freq=False),
        r"grad_output: expected indices' shape \[2\] and one more dim, got float32\[3, 2\]",
    ),
    "bag-offsets-start": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0, 1]), np.array([1])),
        {},
        r"offsets: expected non-decreasing offsets from 0 to at most 2, got 1 for bag 0",
    ),
    "bag-offsets-beyond": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0, 1]), np.array([0, 3])),
        {},
        r"offsets: expected non-decreasing offsets from 0 to at most 2",
    ),
    "bag-index-range": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0, 5]), np.array([0])),
        {},
        r"index: 5 at position 1 is out of range for a dim of size 5",
    ),
    "bag-last-offset": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0, 1, 2]), np.array([0, 2])),
        dict(include_last_offset=True),
        r"offsets: with include_last_offset, expected the last offset to be 3 \(the number of "
        r"indices\), got 2",
    ),
    "bag-mode": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0]), np.array([0])),
        dict(mode=3),
        r"mode: expected 0 \(sum\), 1 \(mean\) or 2 \(max\), got 3",
    ),
    "bag-weights-mode": (
        "aten::_embedding_bag",
        (tensor((5, 2)), np.array([0]), np.array([0]), tensor((1,))),
        dict(mode=1),
        r"per_sample_weights: only mode 0 \(sum\) takes them",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, *inputs, **attrs)
