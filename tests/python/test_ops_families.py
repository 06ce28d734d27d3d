"""opgraph.ops family modules: require(), forward/backward against torch, errors."""

import inspect

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
    for got, expected in zip(ops.gemm.backward(a, b, bias, gy, y, act=act), (da, db, dbias)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    if act is None:  # the output is read only through an activation
        for got, expected in zip(ops.gemm.backward(a, b, bias, grad_output=gy), (da, db, dbias)):
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
    for got, e in zip(ops.conv2d.backward(x, w, b, gy, y, act="relu", **geometry), expected):
        np.testing.assert_allclose(got, e, rtol=1e-10, atol=1e-12)
    attrs = ops.conv2d.Conv2DAttrs(**geometry, act="relu")
    for got, e in zip(ops.conv2d.backward(x, w, b, gy, ops.conv2d.forward(x, w, b, attrs), attrs), expected):
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
    np.testing.assert_allclose(ops.softmax.backward(gy, y, dim=1, log=log), dx, rtol=1e-10, atol=1e-14)


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
        ops.cross_entropy.backward(target, 2.0, probabilities), tl.grad.numpy(), rtol=1e-10, atol=1e-14
    )


@pytest.mark.parametrize("act", ["relu", "gelu", "sigmoid", "tanh", "silu"])
def test_activation_forward_backward(act):
    x = np.random.default_rng(0).standard_normal((3, 8))
    y = ops.activation.forward(x, act)
    gy = np.random.default_rng(1).standard_normal(y.shape)
    f = {"relu": torch.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid, "tanh": torch.tanh, "silu": F.silu}[act]
    want, (dx,) = grads(f, x, grad_output=gy)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ops.activation.backward(x, gy, y, act), dx, rtol=1e-10, atol=1e-14)


def test_shape_errors_name_the_op_and_argument():
    with pytest.raises(opgraph.Error, match=r"opgraph::gemm"):
        ops.gemm.forward(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(opgraph.Error, match=r"opgraph::conv2d.*weight"):
        ops.conv2d.forward(np.ones((1, 3, 5, 5), np.float32), np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(opgraph.Error, match=r"unknown activation 'swish'"):
        ops.activation.forward(np.ones(3, np.float32), "swish")


def test_backward_takes_inputs_then_parameters_then_grad_output():
    """Each backward lists the forward's inputs and parameters it reads in the
    forward's order, then grad_output, then the forward results it reads."""
    orders = {
        "gemm": ["A", "B", "bias", "grad_output", "output"],
        "conv2d": ["X", "W", "b", "grad_output", "output"],
        "pool2d": ["X", "grad_output"],
        "softmax": ["grad_output", "output"],
        "cross_entropy": ["target", "grad_output", "probabilities"],
        "activation": ["X", "grad_output", "output"],
    }
    for family, order in orders.items():
        module = ops.require(family)
        forward = list(inspect.signature(module.forward).parameters)
        backward = list(inspect.signature(module.backward).parameters)
        assert backward[: len(order)] == order, family
        read = [name for name in order if name in forward]
        assert read == [name for name in forward if name in read], family
        assert "act" in backward if "act" in forward else "act" not in backward, family


@pytest.mark.parametrize(
    "backward, act",
    [
        (lambda act: ops.gemm.backward(np.ones((2, 3)), np.ones((3, 4)), None, np.ones((2, 4)), act=act), "relu"),
        (
            lambda act: ops.conv2d.backward(
                np.ones((1, 1, 3, 3)), np.ones((1, 1, 2, 2)), None, np.ones((1, 1, 2, 2)), act=act
            ),
            "tanh",
        ),
        (lambda act: ops.activation.backward(np.ones(3), np.ones(3), act=act), "sigmoid"),
    ],
)
def test_backward_without_the_output_it_reads(backward, act):
    with pytest.raises(
        opgraph.Error, match=rf"output: expected the forward's output, which the gradient of act='{act}'"
    ):
        backward(act)
