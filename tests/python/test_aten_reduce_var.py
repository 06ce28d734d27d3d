"""aten var.correction and var.dim against their references and PyTorch: every way each takes its dims, keepdim and
the corrections."""

import numpy as np
import pytest
from oracle import check_reduction, reduction_sample, reduction_tests

# name: (overload, how the schema takes dim, dtypes beyond the floats, whether no elements is an error)
OPS = {
    "var.correction": ("correction", "optlist", [], False),
    "var.dim": ("dim", "optlist", [], False),
}
test_matches_torch, test_strided_inputs, test_schema_is_aten = reduction_tests(OPS)


@pytest.mark.parametrize("correction", [0, 2, 0.5, 7])
def test_var_corrections(correction):
    x = reduction_sample((3, 8), np.float64)
    for dim in (None, [1], [0, 1]):
        check_reduction(OPS, "var.correction", x, dict(dim=dim), correction=correction)
    for unbiased in (False, True):
        check_reduction(OPS, "var.dim", x, dict(dim=[0]), unbiased=unbiased)
