"""aten amax, amin, any, argmax, argmin, max.dim, min.dim, mean, prod and var
against their references and PyTorch: every way each takes its dims, keepdim,
float, integer and bool inputs, NaN, and the errors."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call, call_reference

FLOATS = [np.float32, np.float64]
INTEGERS = [np.int32, np.int64, np.bool_]

# name: (overload, how the schema takes dim, dtypes beyond the floats, whether no elements is an error)
OPS = {
    "amax": ("default", "list", INTEGERS, True),
    "amin": ("default", "list", INTEGERS, True),
    "any": ("default", "none", INTEGERS, False),
    "any.dim": ("dim", "int", INTEGERS, False),
    "any.dims": ("dims", "optlist", INTEGERS, False),
    "argmax": ("default", "optint", [np.int32, np.int64], True),
    "argmin": ("default", "optint", [np.int32, np.int64], True),
    "max.dim": ("dim", "int", INTEGERS, True),
    "min.dim": ("dim", "int", INTEGERS, True),
    "mean": ("default", "none", [], False),
    "prod": ("default", "none", INTEGERS, False),
    "prod.dim_int": ("dim_int", "int", INTEGERS, False),
    "var.correction": ("correction", "optlist", [], False),
    "var.dim": ("dim", "optlist", [], False),
}

SHAPES = [(), (0, 5), (1, 1), (7,), (3, 257), (2, 3, 5, 7), (70001,), (5, 20011)]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def overload(op):
    return getattr(getattr(torch.ops.aten, op.split(".")[0]), OPS[op][0])


def qualified(op):
    return "aten::" + op


def dim_attrs(kind, rank):
    """The dim arguments a schema of this kind takes, for a tensor of this rank."""
    singles = list(range(rank)) + [-1] if rank else [0, -1]
    multi = [[0, -1]] if rank >= 2 else []
    multi += [[1, 3]] if rank == 4 else []
    return {
        "none": [{}],
        "int": [dict(dim=d) for d in singles],
        "optint": [dict(dim=None)] + [dict(dim=d) for d in singles],
        "list": [dict(dim=[])] + [dict(dim=[d]) for d in singles] + [dict(dim=m) for m in multi],
        "optlist": [dict(dim=None), dict(dim=[])] + [dict(dim=[d]) for d in singles] + [dict(dim=m) for m in multi],
    }[kind]


def reduced(shape, op, dim):
    """The dims the call reduces."""
    if dim is None or (dim == [] and op != "any.dims"):
        return list(range(len(shape)))
    return [d % len(shape) for d in (dim if isinstance(dim, list) else [dim])] if shape else []


def sample(shape, dtype, layout="contiguous", seed=0):
    """Floats around 1 (products stay finite), small integers (ties for the arg ops), half-true bools."""
    rng = np.random.default_rng(seed)
    full = {"transposed": shape[::-1], "sliced": (*shape[:-1], 2 * shape[-1]) if shape else ()}.get(layout, shape)
    if dtype in FLOATS:
        values = 1 + 0.05 * rng.standard_normal(full)
    elif dtype == np.bool_:
        values = rng.random(full) < 0.5
    else:
        values = rng.integers(-3, 4, full)
    x = np.asarray(values, dtype=dtype)
    if layout == "transposed":
        return x.T
    return x[..., ::2] if layout == "sliced" and shape else x


# float32 over long rows: PyTorch accumulates in float32, opgraph in double.
LONG_TOLERANCE = dict(rtol=2e-4, atol=1e-4)


def cases(dtypes):
    for op, (_, kind, extra, needs_elements) in OPS.items():
        for dtype in [d for d in dtypes if d in FLOATS + extra]:
            for shape in SHAPES:
                for attrs in dim_attrs(kind, len(shape)):
                    if needs_elements and any(shape[d] == 0 for d in reduced(shape, op, attrs.get("dim"))):
                        continue
                    yield pytest.param(op, dtype, shape, attrs, id=f"{op}-{np.dtype(dtype).name}-{shape}-{attrs}")


def run(op, x, attrs, keepdim=None, **extra):
    attrs = dict(attrs, **extra)
    if keepdim is not None and OPS[op][1] != "none":
        attrs["keepdim"] = keepdim
    tolerance = LONG_TOLERANCE if x.dtype == np.float32 and x.size > 10_000 else None
    check_op(qualified(op), lambda t: overload(op)(t, **attrs), x, tolerance=tolerance, **attrs)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op, dtype, shape, attrs", list(cases(FLOATS + INTEGERS)))
def test_matches_torch(op, dtype, shape, attrs, keepdim):
    run(op, sample(shape, dtype), attrs, keepdim)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("op, dtype, shape, attrs", list(cases([np.float64, np.int32])))
def test_strided_inputs(op, dtype, shape, attrs, layout):
    run(op, sample(shape, dtype, layout), attrs, keepdim=False)


@pytest.mark.parametrize("correction", [0, 2, 0.5, 7])
def test_var_corrections(correction):
    x = sample((3, 8), np.float64)
    for dim in (None, [1], [0, 1]):
        run("var.correction", x, dict(dim=dim), correction=correction)
    for unbiased in (False, True):
        run("var.dim", x, dict(dim=[0]), unbiased=unbiased)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_and_is_picked(dtype):
    x = sample((4, 9), dtype)
    x[1, 3] = x[1, 7] = x[2, 0] = x[3, 8] = np.nan
    for op in ("amax", "amin", "max.dim", "min.dim", "argmax", "argmin", "any.dims", "prod.dim_int", "var.dim"):
        for attrs in dim_attrs(OPS[op][1], 2):
            run(op, x, attrs)


def test_extreme_ties_take_the_first_index():
    x = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2]], np.int64)
    assert call("aten::argmax", x, dim=1).tolist() == [1, 0]
    assert call("aten::argmin", x, dim=None).tolist() == 3
    values, indices = call("aten::min.dim", x, dim=1)
    assert values.tolist() == [0, 2] and indices.tolist() == [3, 0]


def test_prod_overflow_wraps_like_torch():
    x = np.full(70, 3, np.int64)
    run("prod", x, {})
    run("prod.dim_int", x.astype(np.int32).reshape(7, 10), dict(dim=1))


def test_prod_and_mean_dtype_arguments():
    run("prod", sample((3, 4), np.int32), {}, dtype=torch.int64)
    run("prod.dim_int", sample((3, 4), np.float64), dict(dim=0), dtype=torch.float64)
    run("mean", sample((3, 4), np.float32), {}, dtype=torch.float32)


@pytest.mark.parametrize("op", OPS)
def test_schema_is_aten(op):
    assert_schema_is_aten(op.split(".")[0], OPS[op][0])


def test_errors():
    x = np.ones((2, 0, 3), np.float32)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::amax: self: expected a non-zero size along reduced dim 1 "
        r"\(this reduction has no identity\), got float32\[2, 0, 3\]",
    ):
        call("aten::amax", x, dim=[1])
    with pytest.raises(opgraph.Error, match=r"aten::argmax: self: expected a non-zero size along reduced dim 1"):
        call("aten::argmax", x)
    with pytest.raises(opgraph.Error, match=r"aten::argmax: self: expected a numeric dtype, got bool\[3\]"):
        call("aten::argmax", np.ones(3, np.bool_))
    with pytest.raises(opgraph.Error, match=r"aten::var.dim: self: expected float32 or float64, got int64\[3\]"):
        call("aten::var.dim", np.ones(3, np.int64), dim=[0])
    with pytest.raises(
        opgraph.Error,
        match=r"aten::max.dim: dim: expected a dim in \[-2, 1\] for a tensor of rank "
        r"2, got 2",
    ):
        call("aten::max.dim", np.ones((2, 2), np.float32), dim=2)
    with pytest.raises(opgraph.Error, match=r"aten::any.dims: dim: expected distinct dims, dim 0 appears more"):
        call("aten::any.dims", np.ones((2, 2), np.float32), dim=[0, -2])
    with pytest.raises(
        opgraph.Error,
        match=r"aten::prod: dtype: expected None or int64 \(the product's dtype for "
        r"int32 input; conversion is not supported\), got int32",
    ):
        call("aten::prod", np.ones(3, np.int32), dtype=torch.int32)
    # The reference reports the same errors.
    with pytest.raises(opgraph.Error, match=r"aten::amin: self: expected a non-zero size"):
        call_reference("aten::amin", x)


def test_exported_graph_runs_on_a_session():
    from opgraph import ir

    class Model(torch.nn.Module):
        def forward(self, x):
            values, indices = x.max(0)
            return (
                x.amax(1),
                x.amin(),
                x.argmax(),
                x.argmin(1, keepdim=True),
                values,
                indices,
                x.var(1),
                torch.var(x, 0, correction=0),
                x.prod(),
                x.prod(1),
                (x > 0).any(1),
                (x > 0).any(),
                x.mean(),
            )

    x = torch.randn(4, 6)
    results = ir.extract_ir(Model(), (x,)).to_session().run(x.numpy())
    for got, want in zip(results, Model()(x), strict=True):
        np.testing.assert_allclose(np.asarray(got), want.numpy(), rtol=1e-5, atol=1e-6)
