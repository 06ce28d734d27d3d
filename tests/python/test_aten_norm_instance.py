"""aten instance_norm against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op
from test_aten_norm import DTYPES, affine, make, tolerance

import opgraph
from opgraph.ops import call

aten = torch.ops.aten


def test_schemas_are_atens():
    assert_schema_is_aten("instance_norm", "default")


@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 7, 3), (3, 4), (2, 5, 2, 3, 2), (1, 3, 1), (2, 2, 4099)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_instance_norm(dtype, shape, use_input_stats):
    x = make(shape, dtype, "sliced")
    weight, bias = affine([shape[1]], dtype, "both")
    mean, var = make([shape[1]], dtype, seed=3), make([shape[1]], dtype, seed=4, low=0.1)
    # torch updates the running statistics in place when it uses the input's: it gets copies.
    check_op(
        "aten::instance_norm",
        lambda t, w, b, m, v: aten.instance_norm(t, w, b, m.clone(), v.clone(), use_input_stats, 0.1, 1e-5, False),
        x,
        weight,
        bias,
        mean,
        var,
        use_input_stats=use_input_stats,
        momentum=0.1,
        eps=1e-5,
        cudnn_enabled=False,
        tolerance=tolerance(dtype),
    )


def test_instance_norm_without_statistics():
    x = make((2, 3, 5), np.float32)
    check_op(
        "aten::instance_norm",
        lambda t, *_: F.instance_norm(t),
        x,
        None,
        None,
        None,
        None,
        use_input_stats=True,
        momentum=0.1,
        eps=1e-5,
        cudnn_enabled=False,
        tolerance=tolerance(np.float32),
    )
    with pytest.raises(
        opgraph.Error,
        match=r"running_mean, running_var: expected tensors when use_input_stats is "
        r"False, got None",
    ):
        call(
            "aten::instance_norm",
            x,
            None,
            None,
            None,
            None,
            use_input_stats=False,
            momentum=0.1,
            eps=1e-5,
            cudnn_enabled=False,
        )
