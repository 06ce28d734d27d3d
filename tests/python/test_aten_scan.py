"""cumsum and diff against their references and PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op

import opgraph
from opgraph.ops import call


def sample(shape, dtype, seed=0):
    values = np.random.default_rng(seed).integers(-3, 4, size=shape)
    return values.astype(dtype) if dtype != np.bool_ else np.asarray(values > 0)


CASES = {
    "(2,7) dim -1": ((2, 7), -1),
    "(2,7) dim 0": ((2, 7), 0),
    "(3,4,5) dim 1": ((3, 4, 5), 1),
    "(0,3) dim 1": ((0, 3), 1),
    "(5,) dim 0": ((5,), 0),
    "() dim 0": ((), 0),
    "(300,300) dim 1": ((300, 300), 1),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("case", CASES)
def test_cumsum_matches_torch(case, dtype):
    shape, dim = CASES[case]
    tolerance = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else None
    check_op("aten::cumsum", lambda t: torch.cumsum(t, dim), sample(shape, dtype), dim=dim, tolerance=tolerance)


def test_cumsum_dtype_and_strided_input():
    x = sample((6, 8), np.int32)[::2, 1::2]
    check_op("aten::cumsum", lambda t: torch.cumsum(t, 1, dtype=torch.float64), x, dim=1, dtype="float64")


DIFFS = {
    "gpt2-positions": ((2, 7), dict(n=1, dim=-1), (2, 1), None),
    "plain": ((3, 5), dict(n=1, dim=0), None, None),
    "second-order": ((4, 6), dict(n=2, dim=1), None, (4, 2)),
    "order-past-length": ((2, 3), dict(n=5, dim=1), None, None),
    "both": ((2, 3, 4), dict(n=1, dim=1), (2, 2, 4), (2, 1, 4)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("case", DIFFS)
def test_diff_matches_torch(case, dtype):
    shape, attrs, prepend, append = DIFFS[case]
    x = sample(shape, dtype, 1)
    before = sample(prepend, dtype, 2) if prepend else None
    after = sample(append, dtype, 3) if append else None
    check_op(
        "aten::diff", lambda t, p=None, a=None: torch.diff(t, prepend=p, append=a, **attrs), x, before, after, **attrs
    )


@pytest.mark.parametrize("name", ["cumsum", "diff"])
def test_schema_is_aten(name):
    assert_schema_is_aten(name)


BAD = {
    "cumsum-dim": ("aten::cumsum", (sample((2, 3), np.float32),), dict(dim=2), r"dim: expected a dim in \[-2, 1\]"),
    "cumsum-bool-dtype": (
        "aten::cumsum",
        (sample((2, 3), np.float32),),
        dict(dim=0, dtype="bool"),
        r"dtype: expected a numeric dtype for a sum, got bool",
    ),
    "diff-prepend": (
        "aten::diff",
        (sample((2, 3), np.float32), sample((3, 1), np.float32)),
        {},
        r"prepend: expected 2 in dim 0 like self",
    ),
    "diff-dtype": (
        "aten::diff",
        (sample((2, 3), np.float32), sample((2, 1), np.int64)),
        {},
        r"prepend: expected a float32 tensor of rank 2 like self",
    ),
    "diff-order": ("aten::diff", (sample((2, 3), np.float32),), dict(n=-1), r"n: expected a non-negative order"),
    "diff-scalar": ("aten::diff", (sample((), np.float32),), {}, r"self: expected a tensor of rank 1 or more"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    name, inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{name}: {message}"):
        call(name, *inputs, **attrs)
