"""aten sort and topk against their references and PyTorch: ties in the order
of a stable sort, NaN as the largest value, every dim and dtype."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten

import opgraph
from opgraph.ops import call, call_reference

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]
SHAPES = [(), (0,), (1,), (7,), (4, 0), (3, 5), (2, 3, 5), (1009,), (40, 1021)]


def sample(shape, dtype, layout="contiguous", seed=0):
    """Few distinct values, so that ties are many; floats get NaN and infinities too."""
    rng = np.random.default_rng(seed)
    full = shape[::-1] if layout == "transposed" else shape
    x = np.asarray(rng.integers(-4, 5, full) if dtype != np.bool_ else rng.random(full) < 0.5, dtype)
    if dtype in (np.float32, np.float64) and x.size:
        flat = x.reshape(-1)
        flat[rng.random(flat.size) < 0.1] = np.nan
        flat[rng.random(flat.size) < 0.05] = np.inf
        flat[rng.random(flat.size) < 0.05] = -np.inf
        flat += 0.25 * rng.standard_normal(flat.size) * (rng.random(flat.size) < 0.5)
    return x.T if layout == "transposed" else x


def dims(shape):
    return [-1] + list(range(len(shape))) if shape else [0, -1]


def assert_same(got, want):
    values, indices = got
    np.testing.assert_array_equal(values, want[0].numpy())
    np.testing.assert_array_equal(indices, want[1].numpy())
    assert values.dtype == want[0].numpy().dtype and indices.dtype == np.int64


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_matches_stable_torch(dtype, shape, layout, descending):
    x = sample(shape, dtype, layout)
    for dim in dims(shape):
        want = torch.sort(torch.from_numpy(x), dim=dim, descending=descending, stable=True)
        for run in (call, call_reference):
            assert_same(run("aten::sort", x, dim=dim, descending=descending), want)


def topk_cases():
    for shape in SHAPES:
        for dim in dims(shape):
            size = shape[dim] if shape else 1
            for k in sorted({0, 1, size // 2, size}):
                if k <= size:
                    yield pytest.param(shape, dim, k, id=f"{shape}-dim{dim}-k{k}")


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape, dim, k", list(topk_cases()))
@pytest.mark.parametrize("dtype", DTYPES[:-1])
def test_topk_matches_torch(dtype, shape, dim, k, largest):
    """Values exactly as torch's; indices those of a stable sort, which hold the values (torch's own indices
    among ties are unspecified)."""
    x = sample(shape, dtype)
    t = torch.from_numpy(x)
    want = torch.topk(t, k, dim=dim, largest=largest)
    order = torch.sort(t, dim=dim, descending=largest, stable=True)
    for run in (call, call_reference):
        values, indices = run("aten::topk", x, k=k, dim=dim, largest=largest)
        np.testing.assert_array_equal(values, want.values.numpy())
        np.testing.assert_array_equal(indices, order.indices.narrow(dim, 0, k).numpy() if shape else 0)
        np.testing.assert_array_equal(np.take_along_axis(x, indices, dim) if shape else x, values)


def test_topk_unsorted_holds_the_same_values():
    x = sample((6, 50), np.float32)
    values, indices = call("aten::topk", x, k=7, sorted=False)
    want = torch.topk(torch.from_numpy(x), 7, sorted=True)
    np.testing.assert_array_equal(np.sort(values, axis=1), np.sort(want.values.numpy(), axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, indices, 1), values)


def test_defaults():
    x = sample((3, 9), np.float64)
    assert_same(call("aten::sort", x), torch.sort(torch.from_numpy(x), stable=True))
    values, _ = call("aten::topk", x, k=2)
    np.testing.assert_array_equal(values, torch.topk(torch.from_numpy(x), 2).values.numpy())


@pytest.mark.parametrize("name, overload", [("sort", "default"), ("topk", "default")])
def test_schema_is_aten(name, overload):
    assert_schema_is_aten(name, overload)


def test_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(opgraph.Error, match=r"aten::topk: k: expected a k in \[0, 3\] \(the size of dim 1\), got 4"):
        call("aten::topk", x, k=4)
    with pytest.raises(opgraph.Error, match=r"aten::topk: k: expected a k in \[0, 2\] \(the size of dim 0\), got -1"):
        call("aten::topk", x, k=-1, dim=0)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::sort: dim: expected a dim in \[-2, 1\] for a tensor of rank 2, "
        r"got 2",
    ):
        call("aten::sort", x, dim=2)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::sort: self: expected float32, float64, int64, int32 or bool, "
        r"got uint8",
    ):
        call("aten::sort", np.ones(3, np.uint8))
    with pytest.raises(opgraph.Error, match=r"aten::topk: self: expected a numeric dtype, got bool\[3\]"):
        call("aten::topk", np.ones(3, np.bool_), k=1)


def test_exported_graph_runs_on_a_session():
    from opgraph import ir

    class Model(torch.nn.Module):
        def forward(self, x):
            values, indices = torch.sort(x, dim=0, descending=True)
            return values, indices, torch.topk(x, 2, largest=False).values

    x = torch.randn(5, 7)
    results = ir.extract_ir(Model(), (x,)).to_session().run(x.numpy())
    for got, want in zip(results, Model()(x), strict=True):
        np.testing.assert_array_equal(np.asarray(got), want.numpy())
