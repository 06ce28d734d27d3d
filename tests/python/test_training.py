"""opgraph.layers training: optimizers against torch.optim, Sequential's
fit/evaluate/predict, and weights in safetensors."""

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import opgraph
from opgraph import layers

OPTIMIZERS = [
    (lambda: layers.SGD(lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
    (lambda: layers.SGD(lr=0.05, momentum=0.9), lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9)),
    (lambda: layers.Adam(lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
    (
        lambda: layers.Adam(lr=0.003, beta1=0.8, beta2=0.99, eps=1e-6),
        lambda p: torch.optim.Adam(p, lr=0.003, betas=(0.8, 0.99), eps=1e-6),
    ),
]


@pytest.mark.parametrize("ours, theirs", OPTIMIZERS)
def test_optimizer_matches_torch_optim(ours, theirs):
    rng = np.random.default_rng(0)
    weights = {"w": rng.standard_normal((4, 3)), "b": rng.standard_normal(3)}
    torch_weights = {n: torch.tensor(v, requires_grad=True) for n, v in weights.items()}
    optimizer, torch_optimizer = ours(), theirs(list(torch_weights.values()))
    for _ in range(5):
        grads = {n: rng.standard_normal(v.shape) for n, v in weights.items()}
        optimizer.step(weights, grads)
        for n, t in torch_weights.items():
            t.grad = torch.from_numpy(grads[n])
        torch_optimizer.step()
    for n, t in torch_weights.items():
        np.testing.assert_allclose(weights[n], t.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_optimizer_errors():
    with pytest.raises(opgraph.Error, match=r"SGD: lr: expected a positive learning rate, got 0"):
        layers.SGD(lr=0)
    with pytest.raises(opgraph.Error, match=r"Adam.step: no gradient for w"):
        layers.Adam().step({"w": np.zeros(2)}, {})
    with pytest.raises(
        opgraph.Error, match=r"SGD.step: w: gradient shape \(3,\) does not match the parameter's \(2,\)"
    ):
        layers.SGD().step({"w": np.zeros(2)}, {"w": np.zeros(3)})


def small_cnn(seed=0):
    return layers.Sequential(
        [
            layers.Conv2D(4, 3, padding=1, activation="relu"),
            layers.MaxPool2D(2),
            layers.Flatten(),
            layers.Dense(16),
            layers.Dropout(0.1),
            layers.Dense(3, activation=None),
        ],
        seed=seed,
    )


def blobs(n, seed=0):
    """Three classes of 1x8x8 images, each a bright quadrant plus noise: learnable in a few epochs."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32) * 0.3
    for i, label in enumerate(y):
        x[i, 0, (label // 2) * 4 : (label // 2) * 4 + 4, (label % 2) * 4 : (label % 2) * 4 + 4] += 1.5
    return x, y


def test_fit_learns_and_reports_per_epoch(capsys):
    x, y = blobs(300)
    model = small_cnn()
    model.compile(optimizer=layers.Adam(0.01), loss="softmax_cross_entropy")
    history = model.fit(x, y, epochs=4, batch_size=32, validation_data=blobs(90, seed=1))
    printed = capsys.readouterr().out
    assert printed.count("Epoch ") == 4 and "10/10 [" in printed and "val_accuracy:" in printed
    assert len(history.history["loss"]) == 4 and history.history["loss"][-1] < history.history["loss"][0]
    loss, accuracy = model.evaluate(*blobs(90, seed=2))
    assert accuracy > 0.9 and loss < 0.5
    assert model.predict(x[:5]).shape == (5, 3)


def test_evaluate_matches_torch_cross_entropy():
    x, y = blobs(40)
    model = small_cnn()
    model.build(x.shape)
    loss, accuracy = model.evaluate(x, y, batch_size=7)
    logits = torch.from_numpy(model.predict(x, batch_size=13))
    assert loss == pytest.approx(torch.nn.functional.cross_entropy(logits, torch.from_numpy(y)).item(), rel=1e-5)
    assert accuracy == pytest.approx((logits.argmax(1).numpy() == y).mean())


def test_weights_round_trip_through_safetensors(tmp_path):
    x, y = blobs(64)
    model = small_cnn(seed=1)
    model.compile("sgd")
    model.fit(x, y, epochs=1, verbose=False)
    path = tmp_path / "weights.safetensors"
    model.save_weights(path)
    assert (
        sorted(load_file(str(path)))
        == sorted(model.parameters())
        == ["0.conv2d.W", "0.conv2d.b", "3.dense.W", "3.dense.b", "5.dense.W", "5.dense.b"]
    )
    restored = small_cnn(seed=2)
    restored.build(x.shape)
    assert not np.array_equal(restored.predict(x), model.predict(x))
    restored.load_weights(path)
    np.testing.assert_array_equal(restored.predict(x), model.predict(x))


def test_load_weights_checks_names_and_shapes(tmp_path):
    model = small_cnn()
    model.build((1, 1, 8, 8))
    path = tmp_path / "w.safetensors"
    model.save_weights(path)
    wider = small_cnn()
    wider.build((1, 1, 10, 10))
    with pytest.raises(opgraph.Error, match=r"3.dense.W: expected float32\[100, 16\], got float32\[64, 16\]"):
        wider.load_weights(path)
    with pytest.raises(opgraph.Error, match=r"load_weights\(\) needs a built model"):
        small_cnn().load_weights(path)
    shallow = layers.Sequential([layers.Flatten(), layers.Dense(3)])
    shallow.build((1, 1, 8, 8))
    with pytest.raises(opgraph.Error, match=r"missing \['1.dense.W', '1.dense.b'\], unexpected \[.*'0.conv2d.W'"):
        shallow.load_weights(path)


def test_sequential_errors():
    x, y = blobs(10)
    model = small_cnn()
    with pytest.raises(opgraph.Error, match=r"sequential: compile\(\) the model before training it"):
        model.fit(x, y, verbose=False)
    with pytest.raises(opgraph.Error, match=r"sequential.fit: x has 10 rows but y has 9"):
        model.fit(x, y[:9], verbose=False)
    with pytest.raises(opgraph.Error, match=r"optimizer: expected one of adam, sgd or an instance, got 'rmsprop'"):
        model.compile("rmsprop")
    with pytest.raises(opgraph.Error, match=r"softmax_cross_entropy: target: expected integer class indices"):
        layers.SoftmaxCrossEntropy()(np.zeros((2, 3), np.float32), np.zeros(2, np.float32))


def test_build_names_a_device_it_cannot_place_weights_on():
    model = small_cnn()
    with pytest.raises(opgraph.Error, match=r"device: expected 'cpu' or 'cuda', got 'tpu'"):
        model.build((1, 1, 8, 8), device="tpu")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(opgraph.Error, match=r"data on a CUDA device needs CuPy .*pip install cupy-cuda13x"):
            model.build((1, 1, 8, 8), device="cuda")
    model.build((1, 1, 8, 8), device="cpu")
    assert all(isinstance(w, np.ndarray) for w in model.parameters().values())


def test_fit_takes_torch_tensors_and_labels_from_another_kind():
    x = torch.from_numpy(np.random.default_rng(0).random((12, 1, 8, 8), np.float32))
    y = np.arange(12) % 3
    model = small_cnn()
    model.compile(optimizer=layers.SGD(lr=0.01))
    history = model.fit(x, torch.from_numpy(y), epochs=1, batch_size=4, verbose=False)
    assert len(history.history["loss"]) == 1
    assert model.predict(x).shape == (12, 3)
