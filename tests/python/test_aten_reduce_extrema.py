"""aten amax, amin, argmax, argmin, max.dim and min.dim against their references and PyTorch: every way each takes
its dims, keepdim, float, integer and bool inputs, NaN, ties and the errors; and, with the other reductions (any,
prod, mean, var), NaN propagation, the errors and an exported graph."""

import numpy as np
import pytest
import torch
from oracle import FLOATS, INTEGERS, check_reduction, dim_attrs, reduction_sample, reduction_tests
from test_aten_reduce_any_prod_mean import OPS as ANY_PROD_MEAN_OPS
from test_aten_reduce_var import OPS as VAR_OPS

import opgraph
from opgraph.ops import call, call_reference

# name: (overload, how the schema takes dim, dtypes beyond the floats, whether no elements is an error)
OPS = {
    "amax": ("default", "list", INTEGERS, True),
    "amin": ("default", "list", INTEGERS, True),
    "argmax": ("default", "optint", [np.int32, np.int64], True),
    "argmin": ("default", "optint", [np.int32, np.int64], True),
    "max.dim": ("dim", "int", INTEGERS, True),
    "min.dim": ("dim", "int", INTEGERS, True),
}
REDUCTIONS = {**OPS, **ANY_PROD_MEAN_OPS, **VAR_OPS}
test_matches_torch, test_strided_inputs, test_schema_is_aten = reduction_tests(OPS)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_and_is_picked(dtype):
    x = reduction_sample((4, 9), dtype)
    x[1, 3] = x[1, 7] = x[2, 0] = x[3, 8] = np.nan
    for op in ("amax", "amin", "max.dim", "min.dim", "argmax", "argmin", "any.dims", "prod.dim_int", "var.dim"):
        for attrs in dim_attrs(REDUCTIONS[op][1], 2):
            check_reduction(REDUCTIONS, op, x, attrs)


def test_extreme_ties_take_the_first_index():
    x = np.array([[1, 3, 3, 0, 3], [2, 2, 2, 2, 2]], np.int64)
    assert call("aten::argmax", x, dim=1).tolist() == [1, 0]
    assert call("aten::argmin", x, dim=None).tolist() == 3
    values, indices = call("aten::min.dim", x, dim=1)
    assert values.tolist() == [0, 2] and indices.tolist() == [3, 0]


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
