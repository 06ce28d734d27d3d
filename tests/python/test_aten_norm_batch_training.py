"""aten batch_norm in training: _native_batch_norm_legit (with running statistics and its no_stats form) and
_native_batch_norm_legit_functional, against the reference and PyTorch; and an exported training graph that updates
the running statistics."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op
from test_aten_norm import AFFINE, DTYPES, LAYOUTS, batch_norm_inputs, tolerance

import opgraph
from opgraph.ops import call

aten = torch.ops.aten


def test_schemas_are_atens():
    for name, overload in [
        ("_native_batch_norm_legit", "default"),
        ("_native_batch_norm_legit", "no_stats"),
        ("_native_batch_norm_legit_functional", "default"),
    ]:
        assert_schema_is_aten(name, overload)


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


def test_exported_training_graph_updates_the_running_statistics():
    """torch.export of a model in training mode functionalizes batch_norm's in-place update of its running
    statistics: _native_batch_norm_legit_functional returns them, and the graph keeps them as state, which
    each run updates as each call updates the model's buffers."""
    from copy import deepcopy

    from torch import nn

    from opgraph.ir import extract_ir

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, momentum=0.3), nn.GroupNorm(2, 4), nn.ReLU()).train()
    x = torch.randn(2, 3, 6, 6)
    ir = extract_ir(deepcopy(model), (x,), decompose=True)
    ops = [node.op_type for node in ir.nodes]
    assert "aten::_native_batch_norm_legit_functional" in ops and "aten::native_group_norm" in ops
    assert sorted(s.value.name for s in ir.graph.states) == ["1.num_batches_tracked", "1.running_mean", "1.running_var"]
    session = ir.to_session()
    state = session.new_state()
    for step in range(2):
        batch = x + step
        (got,) = session.run(batch.numpy(), state=state)
        want = model(batch).detach().numpy()  # updates the model's running statistics
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(state["1.running_mean"], model[1].running_mean.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state["1.running_var"], model[1].running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert state["1.num_batches_tracked"] == 2
