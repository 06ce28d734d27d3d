"""opgraph.ops family modules: require(), forward/backward against torch, errors."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph
from opgraph import ops


def test_require_returns_the_family_module():
    for name in ops.FAMILIES:
        module = ops.require(name)
        assert module is getattr(ops, name) and callable(module.forward) and callable(module.backward)
    with pytest.raises(opgraph.Error, match=r"unknown op family 'gemm2'; expected one of activation, conv2d"):
        ops.require("gemm2")


def grads(fn, *inputs, grad_output):
    tensors = [torch.from_numpy(x).requires_grad_() if x.dtype.kind == "f" else torch.from_numpy(x) for x in inputs]
    out = fn(*tensors)
    out.backward(torch.from_numpy(grad_output))
    return out.detach().numpy(), [t.grad.numpy() if t.grad is not None else None for t in tensors]


@pytest.mark.parametrize("act", [None, "relu", "gelu", "sigmoid", "tanh"])
def test_gemm_forward_backward(act):
    rng = np.random.default_rng(0)
    a, b, bias = rng.standard_normal((5, 7)), rng.standard_normal((7, 3)), rng.standard_normal(3)
    y = ops.gemm.forward(a, b, bias, act=act)
    gy = rng.standard_normal(y.shape)
    f = {None: lambda z: z, "relu": torch.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid, "tanh": torch.tanh}[act]
    want, (da, db, dbias) = grads(lambda a, b, bias: f(a @ b + bias), a, b, bias, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    for got, expected in zip(ops.gemm.backward(a, b, gy, y, bias, act=act), (da, db, dbias)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_gemm_writes_into_out():
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    out = np.empty((2, 4), np.float32)
    assert ops.gemm.forward(a, b, out=out) is out
    np.testing.assert_array_equal(out, 3)


def test_conv2d_forward_backward():
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((2, 4, 9, 8)), rng.standard_normal((6, 2, 3, 3)), rng.standard_normal(6)
    geometry = dict(stride=2, padding=1, dilation=1, groups=2)
    y = ops.conv2d.forward(x, w, b, act="relu", **geometry)
    gy = rng.standard_normal(y.shape)
    want, expected = grads(lambda x, w, b: torch.relu(F.conv2d(x, w, b, 2, 1, 1, 2)), x, w, b, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    for got, e in zip(ops.conv2d.backward(x, w, gy, y, b, act="relu", **geometry), expected):
        np.testing.assert_allclose(got, e, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_forward_backward(kind):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    y = ops.pool2d.forward(x, kind, kernel_size=3, stride=2, padding=1)
    gy = np.ones_like(y)
    torch_pool = F.max_pool2d if kind == "max" else F.avg_pool2d
    want, (dx,) = grads(lambda x: torch_pool(x, 3, 2, 1), x, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    np.testing.assert_allclose(ops.pool2d.backward(x, gy, kind, kernel_size=3, stride=2, padding=1), dx, rtol=1e-12)
    with pytest.raises(opgraph.Error, match=r"pool2d: kind: expected 'max' or 'avg', got 'min'"):
        ops.pool2d.forward(x, "min")


@pytest.mark.parametrize("log", [False, True])
def test_softmax_forward_backward(log):
    x = np.random.default_rng(0).standard_normal((4, 9))
    y = ops.softmax.forward(x, dim=1, log=log)
    gy = np.random.default_rng(1).standard_normal(y.shape)
    want, (dx,) = grads(lambda x: (torch.log_softmax if log else torch.softmax)(x, 1), x, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12)
    np.testing.assert_allclose(ops.softmax.backward(y, gy, dim=1, log=log), dx, rtol=1e-10, atol=1e-14)


def test_cross_entropy_forward_backward():
    rng = np.random.default_rng(0)
    logits, target = rng.standard_normal((6, 5)), rng.integers(0, 5, 6)
    loss, probabilities = ops.cross_entropy.forward(logits, target)
    tl = torch.from_numpy(logits).requires_grad_()
    want = F.cross_entropy(tl, torch.from_numpy(target))
    want.backward(torch.tensor(2.0, dtype=torch.float64))
    assert float(loss) == pytest.approx(want.item(), rel=1e-12)
    np.testing.assert_allclose(probabilities, torch.softmax(tl, 1).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        ops.cross_entropy.backward(probabilities, target, grad_loss=2.0), tl.grad.numpy(), rtol=1e-10, atol=1e-14
    )


@pytest.mark.parametrize("act", ["relu", "gelu", "sigmoid", "tanh", "silu"])
def test_activation_forward_backward(act):
    x = np.random.default_rng(0).standard_normal((3, 8))
    y = ops.activation.forward(x, act)
    gy = np.random.default_rng(1).standard_normal(y.shape)
    f = {"relu": torch.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu}[act]
    want, (dx,) = grads(f, x, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ops.activation.backward(x, y, gy, act), dx, rtol=1e-10, atol=1e-14)


def test_shape_errors_name_the_op_and_argument():
    with pytest.raises(opgraph.Error, match=r"opgraph::gemm"):
        ops.gemm.forward(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(opgraph.Error, match=r"opgraph::conv2d.*weight"):
        ops.conv2d.forward(np.ones((1, 3, 5, 5), np.float32), np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(opgraph.Error, match=r"unknown activation 'swish'"):
        ops.activation.forward(np.ones(3, np.float32), "swish")
