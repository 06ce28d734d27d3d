"""aten group_norm and native_group_norm against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op
from test_aten_norm import AFFINE, DTYPES, LAYOUTS, affine, make, tolerance

import opgraph
from opgraph.ops import call

aten = torch.ops.aten

# (input shape, groups)
GROUP_NORM_CASES = [
    ((2, 6, 5), 3),
    ((1, 4), 2),
    ((3, 6, 7, 5), 1),
    ((2, 12, 1, 1), 12),
    ((0, 6, 3), 2),
    ((5, 3, 11), 3),
    ((2, 10, 3, 2, 3), 5),
    ((1, 4, 4099), 2),
    ((4, 32, 17, 17), 8),
]


def test_schemas_are_atens():
    for name, overload in [
        ("native_group_norm", "default"),
        ("group_norm", "default"),
    ]:
        assert_schema_is_aten(name, overload)


def group_sizes(shape, groups):
    return dict(N=shape[0], C=shape[1], HxW=int(np.prod(shape[2:], dtype=np.int64)), group=groups)


@pytest.mark.parametrize("affine_kind", AFFINE)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, groups", GROUP_NORM_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_group_norm(dtype, shape, groups, layout, affine_kind):
    x = make(shape, dtype, layout)
    weight, bias = affine([shape[1]], dtype, affine_kind)
    sizes = group_sizes(shape, groups)
    check_op(
        "aten::native_group_norm",
        lambda t, w, b: aten.native_group_norm(t.contiguous(), w, b, *sizes.values(), 1e-3),
        x,
        weight,
        bias,
        **sizes,
        eps=1e-3,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("affine_kind", ["none", "both"])
@pytest.mark.parametrize("shape, groups", GROUP_NORM_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm(dtype, shape, groups, affine_kind):
    x = make(shape, dtype, "transposed")
    weight, bias = affine([shape[1]], dtype, affine_kind)
    check_op(
        "aten::group_norm",
        lambda t, w, b: F.group_norm(t, groups, w, b, eps=1e-5),
        x,
        weight,
        bias,
        num_groups=groups,
        tolerance=tolerance(dtype),
    )


def test_group_norm_errors():
    x = np.ones((2, 6, 4), np.float32)
    with pytest.raises(opgraph.Error, match=r"aten::group_norm: groups: expected a divisor of the 6 channels, got 4"):
        call("aten::group_norm", x, num_groups=4)
    with pytest.raises(
        opgraph.Error,
        match=r"group_norm: input: expected rank 2 or more \(N, C, ...\), got "
        r"float32\[6\]",
    ):
        call("aten::group_norm", np.ones(6, np.float32), num_groups=2)
    with pytest.raises(
        opgraph.Error,
        match=r"weight: expected float32\[6\] to match input float32\[2, 6, 4\], "
        r"got float32\[4\]",
    ):
        call("aten::group_norm", x, np.ones(4, np.float32), num_groups=2)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::native_group_norm: input: expected N=2 x C=6 x HxW=5 elements, "
        r"got float32\[2, 6, 4\]",
    ):
        call("aten::native_group_norm", x, None, None, N=2, C=6, HxW=5, group=2, eps=1e-5)
    with pytest.raises(opgraph.Error, match=r"native_group_norm: group: expected at least 1, got 0"):
        call("aten::native_group_norm", x, None, None, N=2, C=6, HxW=4, group=0, eps=1e-5)
