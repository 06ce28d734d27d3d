"""aten any (and any.dim, any.dims), prod (and prod.dim_int) and mean against their references and PyTorch: every
way each takes its dims, keepdim, float, integer and bool inputs, integer overflow and the dtype arguments."""

import numpy as np
import torch
from oracle import INTEGERS, check_reduction, reduction_sample, reduction_tests

# name: (overload, how the schema takes dim, dtypes beyond the floats, whether no elements is an error)
OPS = {
    "any": ("default", "none", INTEGERS, False),
    "any.dim": ("dim", "int", INTEGERS, False),
    "any.dims": ("dims", "optlist", INTEGERS, False),
    "mean": ("default", "none", [], False),
    "prod": ("default", "none", INTEGERS, False),
    "prod.dim_int": ("dim_int", "int", INTEGERS, False),
}
test_matches_torch, test_strided_inputs, test_schema_is_aten = reduction_tests(OPS)


def test_prod_overflow_wraps_like_torch():
    x = np.full(70, 3, np.int64)
    check_reduction(OPS, "prod", x, {})
    check_reduction(OPS, "prod.dim_int", x.astype(np.int32).reshape(7, 10), dict(dim=1))


def test_prod_and_mean_dtype_arguments():
    check_reduction(OPS, "prod", reduction_sample((3, 4), np.int32), {}, dtype=torch.int64)
    check_reduction(OPS, "prod.dim_int", reduction_sample((3, 4), np.float64), dict(dim=0), dtype=torch.float64)
    check_reduction(OPS, "mean", reduction_sample((3, 4), np.float32), {}, dtype=torch.float32)
