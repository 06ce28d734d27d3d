"""The gradient ops linked as OpDef::backward for the elementwise,
broadcasting binary and reshape ops, against torch.autograd and their
reference implementations."""

import numpy as np
import pytest
import torch

import opgraph
from opgraph.ops import call, call_reference


def autograd(fn, *inputs, grad):
    tensors = [torch.from_numpy(x).requires_grad_() for x in inputs]
    fn(*tensors).backward(torch.from_numpy(grad))
    return [t.grad.numpy() for t in tensors]


def check(backward, inputs, expected, **attrs):
    for run in (call, call_reference):
        got = run(backward, *inputs, **attrs)
        got = got if isinstance(got, tuple) else (got,)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == e.shape
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "forward, fn",
    [
        ("aten::relu", torch.relu),
        ("aten::sigmoid", torch.sigmoid),
        ("aten::tanh", torch.tanh),
        ("aten::gelu", torch.nn.functional.gelu),
        ("aten::silu", torch.nn.functional.silu),
    ],
)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 17), (2, 0, 5)])
def test_activation_gradients(forward, fn, shape):
    rng = np.random.default_rng(0)
    x, grad = rng.standard_normal(shape) * 3, rng.standard_normal(shape)
    check(opgraph.op_backward(forward), [grad, x], autograd(fn, x, grad=grad))


@pytest.mark.parametrize(
    "op, fn, attrs",
    [
        ("aten::add.Tensor", lambda a, b: torch.add(a, b, alpha=2.5), {"alpha": 2.5}),
        ("aten::add.Tensor", torch.add, {}),
        ("aten::sub.Tensor", lambda a, b: torch.sub(a, b, alpha=3), {"alpha": 3}),
        ("aten::mul.Tensor", torch.mul, {}),
    ],
)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 5), (3, 1)), ((1,), (2, 3)), ((), (4,)), ((5, 1), (1, 0))],
)
def test_broadcasting_binary_gradients(op, fn, attrs, a_shape, b_shape):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    grad = rng.standard_normal(out_shape)
    check(opgraph.op_backward(op), [grad, a, b], autograd(fn, a, b, grad=grad), **attrs)


@pytest.mark.parametrize(
    "op, fn, attrs",
    [
        ("aten::view", lambda x: x.view(6, 4), {"size": [6, 4]}),
        ("aten::reshape", lambda x: x.reshape(-1), {"shape": [-1]}),
        ("aten::flatten.using_ints", lambda x: x.flatten(1), {"start_dim": 1}),
    ],
)
def test_reshape_gradients(op, fn, attrs):
    x = np.random.default_rng(2).standard_normal((2, 3, 4))
    grad = np.random.default_rng(3).standard_normal(fn(torch.from_numpy(x)).shape)
    check(opgraph.op_backward(op), [grad, x], autograd(fn, x, grad=grad), **attrs)


def test_gradient_shape_errors_name_the_op_and_the_expected_shape():
    with pytest.raises(
        opgraph.Error,
        match=r"opgraph::add_backward: grad_output: expected float64\[3, 4\] \(the "
        r"output of aten::add.Tensor for self float64\[3, 4\] and other "
        r"float64\[4\]\), got float64\[4\]",
    ):
        call("opgraph::add_backward", np.ones(4), np.ones((3, 4)), np.ones(4))
    with pytest.raises(
        opgraph.Error,
        match=r"opgraph::reshape_backward: grad_output: expected float64 with 6 "
        r"elements like self float64\[2, 3\], got float64\[5\]",
    ):
        call("opgraph::reshape_backward", np.ones(5), np.ones((2, 3)), shape=[6])
    with pytest.raises(opgraph.Error, match=r"opgraph::mul_backward: self: expected float32 or float64"):
        call("opgraph::mul_backward", np.ones(2, np.int64), np.ones(2, np.int64), np.ones(2, np.int64))
