"""opgraph.layers: every layer's forward and gradients against torch.autograd
on the same weights and against finite differences, and bad input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph
from opgraph import layers

TORCH_ACTIVATIONS = {
    None: lambda y: y,
    "relu": torch.relu,
    "gelu": F.gelu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "silu": F.silu,
}


def torch_forward(layer, x, weights):
    """The layer's function in torch, with the layer's weights given as tensors."""
    if isinstance(layer, layers.Dense):
        return TORCH_ACTIVATIONS[layer.activation](x @ weights["W"] + weights["b"])
    if isinstance(layer, layers.Conv2D):
        y = F.conv2d(x, weights["W"], weights["b"], layer.stride, layer.padding, layer.dilation, layer.groups)
        return TORCH_ACTIVATIONS[layer.activation](y)
    if isinstance(layer, layers.MaxPool2D):
        return F.max_pool2d(x, layer.pool_size, layer.stride, layer.padding)
    if isinstance(layer, layers.AvgPool2D):
        return F.avg_pool2d(x, layer.pool_size, layer.stride, layer.padding)
    if isinstance(layer, layers.Flatten):
        return x.reshape(x.shape[0], -1)
    if isinstance(layer, layers.Activation):
        return TORCH_ACTIVATIONS[layer.act](x)
    raise AssertionError(f"no torch equivalent for {layer}")


LAYERS = [
    ("dense relu", lambda: layers.Dense(7, dtype=np.float64), (5, 11)),
    ("dense none", lambda: layers.Dense(1, activation=None, initializer="xavier", dtype=np.float64), (1, 3)),
    ("dense gelu", lambda: layers.Dense(13, activation="gelu", dtype=np.float64), (4, 6)),
    ("dense tanh", lambda: layers.Dense(5, activation="tanh", dtype=np.float64), (3, 4)),
    ("conv", lambda: layers.Conv2D(4, 3, dtype=np.float64), (2, 3, 7, 6)),
    ("conv same relu", lambda: layers.Conv2D(5, 3, padding="same", activation="relu", dtype=np.float64), (1, 2, 5, 5)),
    (
        "conv stride groups",
        lambda: layers.Conv2D(4, (3, 2), stride=2, padding=1, groups=2, dtype=np.float64),
        (2, 4, 9, 8),
    ),
    (
        "conv sigmoid dilated",
        lambda: layers.Conv2D(3, 3, dilation=2, activation="sigmoid", dtype=np.float64),
        (1, 2, 8, 9),
    ),
    ("max pool", lambda: layers.MaxPool2D(2), (2, 3, 6, 7)),
    ("max pool stride 1", lambda: layers.MaxPool2D(3, stride=1, padding=1), (1, 2, 5, 5)),
    ("avg pool", lambda: layers.AvgPool2D(2), (2, 3, 6, 6)),
    ("flatten", lambda: layers.Flatten(), (3, 2, 4, 5)),
    ("relu", lambda: layers.ReLU(), (4, 9)),
    ("gelu", lambda: layers.Activation("gelu"), (4, 9)),
    ("sigmoid", lambda: layers.Activation("sigmoid"), (2, 3, 5)),
]


def run_layer(make, shape, seed=0):
    rng = np.random.default_rng(seed)
    layer = make()
    layer.rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    y = layer(x)
    grad = rng.standard_normal(y.shape)
    return layer, x, y, grad, layer.backward(grad)


@pytest.mark.parametrize("label, make, shape", LAYERS, ids=[row[0] for row in LAYERS])
def test_matches_torch_autograd(label, make, shape):
    layer, x, y, grad, dx = run_layer(make, shape)
    tx = torch.from_numpy(x).requires_grad_()
    weights = {name: torch.from_numpy(value.copy()).requires_grad_() for name, value in layer.parameters().items()}
    ty = torch_forward(layer, tx, weights)
    ty.backward(torch.from_numpy(grad))
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-9, atol=1e-10)
    for name, value in layer.gradients().items():
        np.testing.assert_allclose(value, weights[name].grad.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)


def finite_difference(f, array, index, step=1e-6):
    saved = array[index]
    array[index] = saved + step
    plus = f()
    array[index] = saved - step
    minus = f()
    array[index] = saved
    return (plus - minus) / (2 * step)


@pytest.mark.parametrize("label, make, shape", LAYERS, ids=[row[0] for row in LAYERS])
def test_matches_finite_differences(label, make, shape):
    layer, x, _, grad, dx = run_layer(make, shape)
    gradients = {name: value.copy() for name, value in layer.gradients().items()}
    objective = lambda: float(np.sum(layer(x) * grad))  # noqa: E731
    rng = np.random.default_rng(1)
    for target, analytic in [(x, dx), *[(layer.parameters()[n], g) for n, g in gradients.items()]]:
        for flat in rng.choice(target.size, size=min(6, target.size), replace=False):
            index = np.unravel_index(flat, target.shape)
            numeric = finite_difference(objective, target, index)
            # Max pooling and ReLU have kinks; a random normal input lands on one with probability ~0.
            assert numeric == pytest.approx(analytic[index], rel=1e-5, abs=1e-6), f"{label}: d/d{index}"


def test_dropout_trains_with_a_scaled_mask_and_is_identity_in_inference():
    layer = layers.Dropout(0.25)
    layer.rng = np.random.default_rng(0)
    x = np.ones((64, 50), np.float32)
    y = layer(x)
    kept = y != 0
    assert 0.65 < kept.mean() < 0.85
    np.testing.assert_array_equal(y[kept], np.float32(1 / 0.75))
    np.testing.assert_array_equal(layer.backward(x), y)
    layer.training = False
    np.testing.assert_array_equal(layer(x), x)


def test_float32_layers_accept_torch_tensors():
    dense = layers.Dense(4)
    y = dense(torch.randn(3, 5))
    assert y.shape == (3, 4) and y.dtype == np.float32


@pytest.mark.parametrize(
    "make, shape, message",
    [
        (
            lambda: layers.Dense(3),
            (2, 3, 4),
            r"dense: expected input of rank 2 \(batch, features\), got shape \(2, 3, 4\)",
        ),
        (lambda: layers.Conv2D(3, 3), (2, 3), r"conv2d: expected input of rank 4"),
        (lambda: layers.MaxPool2D(2), (2, 3, 4), r"maxpool2d: expected input of rank 4"),
        (lambda: layers.Conv2D(4, 3, groups=3), (1, 3, 5, 5), r"groups=3 must divide"),
    ],
)
def test_build_rejects_wrong_input(make, shape, message):
    with pytest.raises(opgraph.Error, match=message):
        make()(np.zeros(shape, np.float32))


def test_built_layer_rejects_an_incompatible_input():
    dense = layers.Dense(3)
    dense(np.zeros((2, 4), np.float32))
    with pytest.raises(opgraph.Error, match=r"dense: built for input shape \(N, 4\), got \(2, 5\)"):
        dense(np.zeros((2, 5), np.float32))


def test_call_before_build_and_backward_before_forward():
    with pytest.raises(opgraph.Error, match=r"dense: call\(\) before build\(\)"):
        layers.Dense(3).call(np.zeros((2, 4), np.float32))
    dense = layers.Dense(3)
    dense.build((2, 4))
    with pytest.raises(opgraph.Error, match=r"dense: backward\(\) needs a forward call in training mode"):
        dense.backward(np.zeros((2, 3), np.float32))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: layers.Dense(3, initializer="glorot"), r"unknown initializer 'glorot'; expected one of he, xavier"),
        (lambda: layers.Activation("swish"), r"unknown activation 'swish'"),
        (lambda: layers.Dropout(1.0), r"dropout: rate: expected a value in \[0, 1\)"),
        (lambda: layers.Conv2D(3, 2, padding="same"), r"padding='same' needs stride 1 and odd kernel sizes"),
        (lambda: layers.Dense(0), r"units: expected at least 1"),
    ],
)
def test_bad_configuration(make, message):
    with pytest.raises(opgraph.Error, match=message):
        make()


def test_initializers_have_their_documented_scale():
    rng = np.random.default_rng(0)
    he = layers.initializers.he((400, 300), 400, 300, rng)
    assert he.dtype == np.float32 and abs(he.std() - np.sqrt(2 / 400)) < 2e-3
    xavier = layers.initializers.xavier((400, 300), 400, 300, rng)
    limit = np.sqrt(6 / 700)
    assert np.abs(xavier).max() <= limit and abs(xavier.std() - limit / np.sqrt(3)) < 2e-3
    assert not layers.initializers.zeros((3, 2), 3, 2, rng).any()
