"""opgraph.layers on GPU data: CuPy arrays (as the layers of seed 003 hold
their weights) train on the CUDA kernels, match the same model on the CPU step
for step, and the digits CNN reaches its target accuracy. Skipped, saying why,
where there is no GPU or no CuPy; `make test-gpu` runs this file."""

import sys
from pathlib import Path

import numpy as np
import pytest

import opgraph
from opgraph import layers
from opgraph.ops import gemm

cupy = pytest.importorskip("cupy", reason="the layers' GPU arithmetic needs CuPy (pip install cupy-cuda13x)")
if not opgraph.cuda.is_available():
    pytest.skip(f"needs a CUDA device: {opgraph.cuda.unavailable_reason()}", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "digits"))
from model import load_digits_split, opgraph_cnn  # noqa: E402


@pytest.fixture(scope="module")
def digits():
    return load_digits_split()


def test_weights_are_made_on_the_device_of_the_first_input(digits):
    model = opgraph_cnn()
    logits = model(cupy.asarray(digits[0][:4]))
    assert isinstance(logits, cupy.ndarray) and logits.shape == (4, 10)
    assert all(isinstance(w, cupy.ndarray) for w in model.parameters().values())
    built_here = opgraph_cnn()
    built_here.build((1, 1, 8, 8), device="cuda")
    assert all(isinstance(w, cupy.ndarray) for w in built_here.parameters().values())


def test_a_training_step_on_the_gpu_matches_the_cpu(digits):
    x, y = digits[0][:64], digits[2][:64]
    on_cpu, on_gpu = opgraph_cnn(seed=3), opgraph_cnn(seed=3)
    for model in (on_cpu, on_gpu):
        model.compile(optimizer=layers.Adam(lr=2e-3))
    for step in range(3):  # the same weights, dropout masks and batches on both
        cpu_loss, cpu_accuracy = on_cpu.train_on_batch(x, y)
        gpu_loss, gpu_accuracy = on_gpu.train_on_batch(cupy.asarray(x), y)
        assert gpu_loss == pytest.approx(cpu_loss, rel=1e-4) and gpu_accuracy == cpu_accuracy
        if step == 0:
            for name, gradient in on_gpu.gradients().items():
                expected = on_cpu.gradients()[name]
                np.testing.assert_allclose(
                    cupy.asnumpy(gradient), expected, rtol=1e-3, atol=1e-4 * np.abs(expected).max(), err_msg=name
                )
    for name, weight in on_gpu.parameters().items():
        assert isinstance(weight, cupy.ndarray), name
        np.testing.assert_allclose(cupy.asnumpy(weight), on_cpu.parameters()[name], rtol=1e-3, atol=5e-4)


class SeedDense(layers.Layer):
    """A layer written as seed 003 writes them: its weights made with CuPy in build()."""

    weight_names = ("W", "b")

    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.W = cupy.random.randn(input_shape[-1], self.units).astype(cupy.float32)
        self.b = cupy.zeros(self.units, dtype=cupy.float32)
        self.built = True

    def call(self, x):
        return gemm.forward(x, self.W, self.b, act="relu")


def test_a_layer_written_over_cupy_runs_its_op_on_the_gpu():
    layer = SeedDense(5)
    x = cupy.random.randn(3, 7).astype(cupy.float32)
    y = layer(x)
    assert isinstance(y, cupy.ndarray)
    cupy.testing.assert_allclose(y, cupy.maximum(x @ layer.W + layer.b, 0), rtol=1e-5, atol=1e-5)


def test_the_digits_cnn_trains_to_its_target_on_the_gpu(digits, tmp_path):
    x_train, x_test, y_train, y_test = digits
    model = opgraph_cnn()
    model.compile(optimizer=layers.Adam(lr=2e-3))
    model.fit(cupy.asarray(x_train), cupy.asarray(y_train), epochs=30, batch_size=32, verbose=False)
    loss, accuracy = model.evaluate(cupy.asarray(x_test), y_test)
    assert accuracy >= 0.97, f"test accuracy {accuracy:.2%}, loss {loss:.4f}"
    predictions = model.predict(cupy.asarray(x_test))
    assert isinstance(predictions, cupy.ndarray)
    model.save_weights(tmp_path / "weights.safetensors")  # copied to the host
    reloaded = opgraph_cnn()
    reloaded.build((1, 1, 8, 8), device="cuda")
    reloaded.load_weights(tmp_path / "weights.safetensors")
    cupy.testing.assert_allclose(reloaded.predict(cupy.asarray(x_test)), predictions, rtol=1e-5, atol=1e-5)


def test_data_on_another_device_than_the_weights_is_refused_by_name():
    dense = layers.Dense(3, name="head")
    dense(cupy.zeros((2, 4), cupy.float32))
    with pytest.raises(opgraph.Error, match=r"head: the weights are on cuda but the input is on cpu"):
        dense(np.zeros((2, 4), np.float32))
    with pytest.raises(opgraph.Error, match=r"SGD.step: w: the gradient is on cpu but the parameter is on cuda"):
        layers.SGD().step({"w": cupy.zeros(2)}, {"w": np.zeros(2)})
