"""aten group_norm, instance_norm, training-mode batch_norm (_native_batch_norm_legit and its functional
and no_stats forms) and the layer_norm and group_norm gradients, against the reference and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op
from test_aten_norm import AFFINE, DTYPES, LAYOUTS, affine, make, tolerance

import opgraph
from opgraph.ops import call, call_reference

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
MASKS = [[True, True, True], [True, False, False], [False, True, True], [False, False, True], [False, False, False]]


def test_schemas_are_atens():
    for name, overload in [
        ("native_group_norm", "default"),
        ("group_norm", "default"),
        ("native_group_norm_backward", "default"),
        ("native_layer_norm_backward", "default"),
        ("_native_batch_norm_legit", "default"),
        ("_native_batch_norm_legit", "no_stats"),
        ("_native_batch_norm_legit_functional", "default"),
        ("instance_norm", "default"),
    ]:
        assert_schema_is_aten(name, overload)


def group_sizes(shape, groups):
    return dict(N=shape[0], C=shape[1], HxW=int(np.prod(shape[2:], dtype=np.int64)), group=groups)


# ---- group_norm ---------------------------------------------------------------


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


# ---- instance_norm ----------------------------------------------------------------


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


# ---- batch_norm in training ------------------------------------------------------

BATCH_NORM_SHAPES = [
    (2, 5),
    (1, 1, 3),
    (2, 7),
    (3, 1001),
    (2, 3, 5, 7),
    (2, 3, 17),
    (4, 1001, 3),
    (2, 2, 35001),
    (3, 4, 2, 3, 5),
]


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


def cloned(fn):
    """fn on copies of the running statistics (inputs 3 and 4), which torch updates in place."""
    return lambda x, w, b, m, v: fn(x, w, b, m.clone(), v.clone())


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine_kind", AFFINE)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_batch_norm_legit(dtype, shape, layout, affine_kind, training):
    inputs = batch_norm_inputs(shape, dtype, layout, affine_kind)
    check_op(
        "aten::_native_batch_norm_legit",
        cloned(lambda *t: aten._native_batch_norm_legit(*t, training, 0.1, 1e-5)),
        *inputs,
        training=training,
        momentum=0.1,
        eps=1e-5,
        tolerance=tolerance(dtype),
    )


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_batch_norm_legit_functional(dtype, shape, training):
    inputs = batch_norm_inputs(shape, dtype, "transposed", "both")
    check_op(
        "aten::_native_batch_norm_legit_functional",
        lambda *t: aten._native_batch_norm_legit_functional(*t, training, 0.3, 1e-3),
        *inputs,
        training=training,
        momentum=0.3,
        eps=1e-3,
        tolerance=tolerance(dtype),
    )


def test_native_batch_norm_legit_leaves_its_running_statistics():
    """ATen updates them in place; opgraph's kernels write only their outputs (the functional form returns them)."""
    x, weight, bias, mean, var = batch_norm_inputs((4, 3, 5), np.float64, "contiguous", "both")
    before = mean.copy(), var.copy()
    call("aten::_native_batch_norm_legit", x, weight, bias, mean, var, training=True, momentum=0.1, eps=1e-5)
    np.testing.assert_array_equal(mean, before[0])
    np.testing.assert_array_equal(var, before[1])


@pytest.mark.parametrize("affine_kind", ["none", "both"])
@pytest.mark.parametrize("shape", BATCH_NORM_SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_batch_norm_legit_no_stats(dtype, shape, affine_kind):
    x, weight, bias, *_ = batch_norm_inputs(shape, dtype, "sliced", affine_kind)
    check_op(
        "aten::_native_batch_norm_legit.no_stats",
        lambda *t: aten._native_batch_norm_legit.no_stats(*t, True, 0.1, 1e-5),
        x,
        weight,
        bias,
        training=True,
        momentum=0.1,
        eps=1e-5,
        tolerance=tolerance(dtype),
    )


def test_batch_norm_training_errors():
    x, stats = np.ones((2, 3, 4), np.float32), np.ones(3, np.float32)
    with pytest.raises(
        opgraph.Error,
        match=r"_native_batch_norm_legit.no_stats: training: expected True without "
        r"running statistics, got False",
    ):
        call("aten::_native_batch_norm_legit.no_stats", x, None, None, training=False, momentum=0.1, eps=1e-5)
    with pytest.raises(
        opgraph.Error,
        match=r"_native_batch_norm_legit: running_var: expected float32\[3\] to match "
        r"input float32\[2, 3, 4\], got float32\[2\]",
    ):
        call(
            "aten::_native_batch_norm_legit",
            x,
            None,
            None,
            stats,
            np.ones(2, np.float32),
            training=True,
            momentum=0.1,
            eps=1e-5,
        )
    with pytest.raises(
        opgraph.Error,
        match=r"_native_batch_norm_legit_functional: input: expected float32 or "
        r"float64, got int32\[2, 3\]",
    ):
        call(
            "aten::_native_batch_norm_legit_functional",
            np.ones((2, 3), np.int32),
            None,
            None,
            stats,
            stats,
            training=True,
            momentum=0.1,
            eps=1e-5,
        )


# ---- gradients --------------------------------------------------------------------


def check_gradients(name, torch_fn, inputs, mask, tol, **attrs):
    """The op's three outputs against torch's where output_mask asks for them; empty where it does not."""
    fast = call(name, *inputs, output_mask=mask, **attrs)
    reference = call_reference(name, *inputs, output_mask=mask, **attrs)
    expected = torch_fn(*[torch.from_numpy(t) if t is not None else None for t in inputs], mask)
    for wanted, got, ref, want in zip(mask, fast, reference, expected):
        if not wanted:
            assert want is None and got.shape == ref.shape == (0,)
            continue
        want = want.numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(ref, want, **tol, err_msg=f"{name}: reference vs torch")
        np.testing.assert_allclose(got, ref, **tol, err_msg=f"{name}: fast kernel vs reference")


def or_ones(weight, shape, like):
    """torch's norm gradients fail without a weight for some masks ("tensor does not have a device"): ones are the
    same."""
    return weight if weight is not None else torch.ones(shape, dtype=like.dtype)


def gradient_tolerance(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


LAYER_NORM_BACKWARD_CASES = [
    ((4, 15), [15]),
    ((3, 1001), [1001]),
    ((2, 3, 5, 7), [5, 7]),
    ((1, 1), [1]),
    ((0, 5), [5]),
    ((7,), [7]),
    ((2, 70001), [70001]),
    ((300, 3), [3]),
]


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("shape, normalized", LAYER_NORM_BACKWARD_CASES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_layer_norm_backward(dtype, shape, normalized, with_weight, mask):
    x, grad = make(shape, dtype, "transposed"), make(shape, dtype, seed=5)
    weight, bias = affine(normalized, dtype, "both" if with_weight else "none")
    _, mean, rstd = aten.native_layer_norm(torch.from_numpy(x), normalized, None, None, 1e-5)
    inputs = [grad, x, mean.numpy(), rstd.numpy(), weight, bias]
    check_gradients(
        "aten::native_layer_norm_backward",
        lambda g, t, m, r, w, b, mask: aten.native_layer_norm_backward(
            g, t, normalized, m, r, or_ones(w, normalized, t), or_ones(b, normalized, t), mask
        ),
        inputs,
        mask,
        gradient_tolerance(dtype),
        normalized_shape=normalized,
    )


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("shape, groups", [c for c in GROUP_NORM_CASES if c[0][0] > 0])
@pytest.mark.parametrize("dtype", DTYPES)
def test_native_group_norm_backward(dtype, shape, groups, with_weight, mask):
    x, grad = make(shape, dtype, "sliced"), make(shape, dtype, seed=5)
    weight = make([shape[1]], dtype, seed=1) if with_weight else None
    sizes = group_sizes(shape, groups)
    _, mean, rstd = aten.native_group_norm(torch.from_numpy(x), None, None, *sizes.values(), 1e-5)
    inputs = [grad, x, mean.numpy(), rstd.numpy(), weight]
    check_gradients(
        "aten::native_group_norm_backward",
        lambda g, t, m, r, w, mask: aten.native_group_norm_backward(
            g, t, m, r, or_ones(w, shape[1], t), *sizes.values(), mask
        ),
        inputs,
        mask,
        gradient_tolerance(dtype),
        **sizes,
    )


def test_norm_gradient_errors():
    x = np.ones((2, 6, 4), np.float32)
    stats = np.ones((2, 3), np.float32)
    sizes = dict(N=2, C=6, HxW=4, group=3)
    with pytest.raises(
        opgraph.Error,
        match=r"native_group_norm_backward: mean: expected float32\[2, 3\] like the "
        r"forward's mean \(N, group\), got float32\[2, 2\]",
    ):
        call(
            "aten::native_group_norm_backward",
            x,
            x,
            np.ones((2, 2), np.float32),
            stats,
            None,
            **sizes,
            output_mask=[True, True, True],
        )
    with pytest.raises(
        opgraph.Error,
        match=r"native_group_norm_backward: grad_out: expected float32\[2, 6, 4\] "
        r"like input, got float32\[2, 6, 2\]",
    ):
        call(
            "aten::native_group_norm_backward",
            x[..., :2].copy(),
            x,
            stats,
            stats,
            None,
            **sizes,
            output_mask=[True, True, True],
        )
    with pytest.raises(
        opgraph.Error,
        match=r"native_layer_norm_backward: rstd: expected float32\[2, 6, 1\] \(one "
        r"value per normalized row of input float32\[2, 6, 4\]\), got "
        r"float32\[3\]",
    ):
        call(
            "aten::native_layer_norm_backward",
            x,
            x,
            np.ones((2, 6, 1), np.float32),
            np.ones(3, np.float32),
            None,
            None,
            normalized_shape=[4],
            output_mask=[True, False, False],
        )
    with pytest.raises(opgraph.Error, match=r"output_mask"):
        call(
            "aten::native_layer_norm_backward",
            x,
            x,
            np.ones((2, 6, 1), np.float32),
            np.ones((2, 6, 1), np.float32),
            None,
            None,
            normalized_shape=[4],
            output_mask=[True, False],
        )


# ---- an exported training graph ---------------------------------------------------


def test_exported_training_graph_updates_the_running_statistics():
    """torch.export of a model in training mode functionalizes batch_norm's in-place update of its running
    statistics: _native_batch_norm_legit_functional returns them, and the graph returns them as outputs."""
    from copy import deepcopy

    from torch import nn

    from opgraph.ir import extract_ir

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=0.3), nn.GroupNorm(2, 4), nn.ReLU()).train()
    x = torch.randn(2, 3, 6, 6)
    ir = extract_ir(deepcopy(model), (x,), decompose=True)
    ops = [node.op_type for node in ir.nodes]
    assert "aten._native_batch_norm_legit_functional.default" in ops and "aten.native_group_norm.default" in ops
    running_mean, running_var, _, got = ir.to_session().run(x.numpy())
    want = model(x).detach().numpy()  # updates the model's running statistics
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(running_mean, model[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(running_var, model[1].running_var.numpy(), rtol=1e-5, atol=1e-6)
