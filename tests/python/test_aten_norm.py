"""aten layer_norm, native_layer_norm, rms_norm and batch_norm against PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import check_op

import opgraph
from opgraph.ops import call

DTYPES = [np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed", "sliced"]
# (input shape, normalized_shape)
LAYER_NORM_CASES = [
    ((0, 5), [5]),
    ((1, 1), [1]),
    ((7,), [7]),
    ((4, 15), [15]),
    ((3, 17), [17]),
    ((3, 1001), [1001]),
    ((2, 3, 5, 7), [7]),
    ((2, 3, 5, 7), [5, 7]),
    ((2, 3, 5, 7), [2, 3, 5, 7]),
    ((2, 70001), [70001]),
    ((70001, 3), [3]),
]
BATCH_NORM_SHAPES = [
    (0, 5),
    (1, 1),
    (2, 7),
    (3, 1001),
    (2, 3, 5, 7),
    (2, 3, 15),
    (2, 3, 17),
    (4, 1001, 3),
    (2, 2, 35001),
]


def make(shape, dtype, layout="contiguous", seed=0, low=None):
    rng = np.random.default_rng(seed)
    if layout == "transposed":
        values = rng.standard_normal(shape[::-1]).T
    elif layout == "sliced":
        values = rng.standard_normal((*shape[:-1], 2 * shape[-1]))[..., ::2]
    else:
        values = rng.standard_normal(shape)
    if low is not None:  # positive values, e.g. variances
        values = low + np.abs(values)
    return (values + 0.5).astype(dtype)


def affine(shape, dtype, affine_kind):
    weight = make(shape, dtype, seed=1) if affine_kind in ("weight", "both") else None
    bias = make(shape, dtype, seed=2) if affine_kind in ("bias", "both") else None
    return weight, bias


AFFINE = ["none", "weight", "bias", "both"]


def tolerance(dtype):
    """PyTorch takes float32 statistics in float32 (opgraph in double): on rows
    of nearly equal values rstd (up to 1/sqrt(eps)) magnifies that rounding."""
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else None


@pytest.mark.parametrize("affine_kind", AFFINE)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, normalized", LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm(dtype, shape, normalized, layout, affine_kind):
    x = make(shape, dtype, layout)
    weight, bias = affine(normalized, dtype, affine_kind)
    check_op(
        "aten::layer_norm",
        lambda t, w, b: F.layer_norm(t, normalized, w, b, eps=1e-5),
        x,
        weight,
        bias,
        normalized_shape=normalized,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("affine_kind", ["none", "both"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, normalized", LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_layer_norm(dtype, shape, normalized, layout, affine_kind):
    x = make(shape, dtype, layout)
    weight, bias = affine(normalized, dtype, affine_kind)
    eps = 1e-3
    check_op(
        "aten::native_layer_norm",
        lambda t, w, b: torch.ops.aten.native_layer_norm(t, normalized, w, b, eps),
        x,
        weight,
        bias,
        normalized_shape=normalized,
        eps=eps,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("eps", [None, 1e-6])
@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape, normalized", LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm(dtype, shape, normalized, layout, with_weight, eps):
    x = make(shape, dtype, layout)
    weight = make(normalized, dtype, seed=1) if with_weight else None
    attrs = {} if eps is None else {"eps": eps}  # None: the dtype's machine epsilon
    check_op(
        "aten::rms_norm",
        lambda t, w: F.rms_norm(t, normalized, w, eps=eps),
        x,
        weight,
        normalized_shape=normalized,
        **attrs,
        tolerance=tolerance(dtype),
    )


def test_rms_norm_refuses_a_weight_of_another_shape():
    x, weight = make((2, 3, 4), np.float32), make((3,), np.float32)
    with pytest.raises(opgraph.Error, match=r"weight: expected float32\[4\] to match input float32\[2, 3, 4\]"):
        call("aten::rms_norm", x, weight, normalized_shape=[4])


def batch_norm_inputs(shape, dtype, layout, affine_kind):
    channels = [shape[1]]
    weight, bias = affine(channels, dtype, affine_kind)
    return (
        make(shape, dtype, layout),
        weight,
        bias,
        make(channels, dtype, seed=3),
        make(channels, dtype, seed=4, low=0.1),
    )


@pytest.mark.parametrize("affine_kind", AFFINE)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_batch_norm_legit_no_training(dtype, shape, layout, affine_kind):
    inputs = batch_norm_inputs(shape, dtype, layout, affine_kind)
    check_op(
        "aten::_native_batch_norm_legit_no_training",
        lambda *t: torch.ops.aten._native_batch_norm_legit_no_training(*t, 0.1, 1e-5),
        *inputs,
        momentum=0.1,
        eps=1e-5,
    )


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("affine_kind", AFFINE)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm(dtype, shape, layout, affine_kind, training):
    if training and shape[0] * int(np.prod(shape[2:])) < 2:
        pytest.skip("training takes more than one value per channel")
    x, weight, bias, mean, var = batch_norm_inputs(shape, dtype, layout, affine_kind)
    # In training torch updates the running statistics in place: it gets copies.
    check_op(
        "aten::batch_norm",
        lambda t, w, b, m, v: F.batch_norm(t, m.clone(), v.clone(), w, b, training=training, eps=1e-3),
        x,
        weight,
        bias,
        mean,
        var,
        training=training,
        momentum=0.1,
        eps=1e-3,
        cudnn_enabled=True,
        tolerance=tolerance(dtype) if training else None,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_training_without_running_statistics(dtype):
    x = make((3, 4, 5), dtype, "transposed")
    check_op(
        "aten::batch_norm",
        lambda t, *_: F.batch_norm(t, None, None, training=True),
        x,
        None,
        None,
        None,
        None,
        training=True,
        momentum=0.1,
        eps=1e-5,
        cudnn_enabled=False,
        tolerance=tolerance(dtype),
    )


def test_layer_norm_errors():
    x = np.ones((2, 3, 4), np.float32)
    with pytest.raises(
        opgraph.Error,
        match=r"aten::layer_norm: normalized_shape: expected a non-empty shape that "
        r"ends the input's shape \[2, 3, 4\], got \[3\]",
    ):
        call("aten::layer_norm", x, normalized_shape=[3])
    with pytest.raises(opgraph.Error, match=r"normalized_shape: expected a non-empty shape.*got \[1, 2, 3, 4\]"):
        call("aten::layer_norm", x, normalized_shape=[1, 2, 3, 4])
    with pytest.raises(
        opgraph.Error,
        match=r"weight: expected float32\[4\] to match input float32\[2, 3, 4\], "
        r"got float32\[3\]",
    ):
        call("aten::layer_norm", x, np.ones(3, np.float32), normalized_shape=[4])
    with pytest.raises(opgraph.Error, match=r"native_layer_norm: bias: expected float32\[3, 4\].*got float64\[3, 4\]"):
        call("aten::native_layer_norm", x, None, np.ones((3, 4)), normalized_shape=[3, 4], eps=1e-5)
    with pytest.raises(opgraph.Error, match=r"input: expected float32 or float64, got int64"):
        call("aten::layer_norm", np.ones((2, 3), np.int64), normalized_shape=[3])


def test_batch_norm_errors():
    x = np.ones((2, 3, 4), np.float32)
    stats = np.ones(3, np.float32)
    attrs = dict(momentum=0.1, eps=1e-5, cudnn_enabled=False)
    with pytest.raises(opgraph.Error, match=r"running_mean, running_var: expected tensors in inference mode"):
        call("aten::batch_norm", x, None, None, None, None, training=False, **attrs)
    with pytest.raises(
        opgraph.Error,
        match=r"running_var: expected float32\[3\] to match input float32\[2, 3, 4\], "
        r"got float32\[4\]",
    ):
        call("aten::batch_norm", x, None, None, stats, np.ones(4, np.float32), training=False, **attrs)
    with pytest.raises(opgraph.Error, match=r"_native_batch_norm_legit_no_training: input: expected rank 2 or more"):
        call(
            "aten::_native_batch_norm_legit_no_training",
            np.ones(3, np.float32),
            None,
            None,
            stats,
            stats,
            momentum=0.1,
            eps=1e-5,
        )
