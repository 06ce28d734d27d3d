"""aten sum.dim_IntList and mean.dim against PyTorch."""

import numpy as np
import pytest
import torch
from oracle import check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
SHAPES = [(0, 5), (1, 1), (7,), (3, 1001), (2, 3, 5, 7), (70001,), (3, 70001)]
LAYOUTS = ["contiguous", "transposed", "sliced"]
OPS = {"aten::sum.dim_IntList": torch.ops.aten.sum.dim_IntList, "aten::mean.dim": torch.ops.aten.mean.dim}


def dim_lists(rank):
    """None and [] (all dims), every single dim of both signs, and a bare int (int[1] allows one)."""
    return [None, []] + [[d] for d in range(-rank, rank)] + ([rank - 1] if rank else [])


def multi_dim_lists(rank):
    """Lists the kernels handle but the attribute binding does not pass yet."""
    lists = []
    if rank >= 2:
        lists += [[0, -1], [-1, 0], list(range(rank))]
    if rank == 4:
        lists += [[1, 2], [0, 2], [3, 1, -4]]
    return lists


CASES = [(shape, dims) for shape in SHAPES for dims in dim_lists(len(shape))]
MULTI_CASES = [(shape, dims) for shape in SHAPES for dims in multi_dim_lists(len(shape))]


def make(shape, dtype, layout="contiguous", seed=0):
    rng = np.random.default_rng(seed)
    if layout == "transposed":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    if layout == "sliced":
        return rng.standard_normal((*shape[:-1], 2 * shape[-1])).astype(dtype)[..., ::2]
    return rng.standard_normal(shape).astype(dtype)


# Long float32 sums: PyTorch accumulates in float32, opgraph in double.
LONG_SUM_TOLERANCE = dict(rtol=1e-5, atol=1e-4)


# ATen's `int[1]? dim` takes a list of any length: MULTI_CASES reduce several dims.
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, dims", CASES + MULTI_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", OPS)
def test_reduce(op, dtype, shape, dims, layout, keepdim):
    x = make(shape, dtype, layout)
    tolerance = LONG_SUM_TOLERANCE if dtype == np.float32 and x.size > 10_000 else None
    check_op(op, lambda t: OPS[op](t, dims, keepdim), x, dim=dims, keepdim=keepdim, tolerance=tolerance)


@pytest.mark.parametrize("op", OPS)
def test_scalar_input(op):
    x = np.array(2.5)
    for dims in (None, [], [0], [-1]):
        check_op(op, lambda t: OPS[op](t, dims, False), x, dim=dims)


@pytest.mark.parametrize("op", OPS)
def test_defaults_and_explicit_dtype(op):
    x = make((4, 6), np.float64)
    check_op(op, lambda t: OPS[op](t, [1]), x, dim=1)
    check_op(op, lambda t: OPS[op](t, [0], True), x, dim=[0], keepdim=True, dtype=torch.float64)


@pytest.mark.parametrize("op", OPS)
def test_repeated_dim_is_an_error(op):
    with pytest.raises(opgraph.Error, match=op + r": dim: expected distinct dims, dim 1 appears more than once"):
        call(op, np.ones((2, 3, 4), np.float32), dim=[1, -2])


@pytest.mark.parametrize("op", OPS)
def test_errors(op):
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(opgraph.Error, match=op + r": dim: expected a dim in \[-3, 2\] for a tensor of rank 3, got 3"):
        call(op, x, dim=[3])
    with pytest.raises(opgraph.Error, match=r"dim: expected a dim in \[-3, 2\].*got -4"):
        call(op, x, dim=-4)
    with pytest.raises(opgraph.Error, match=r"dtype: expected None or float32.*got float64"):
        call(op, x, dim=[0], dtype=np.float64)
    with pytest.raises(opgraph.Error, match=r"self: expected float32 or float64, got int64"):
        call(op, np.ones(3, np.int64), dim=[0])
