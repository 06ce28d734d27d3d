"""The conv1d example package against NumPy, PyTorch and finite differences."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph
from opgraph.ops import call

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = {np.float32: dict(rtol=1e-5, atol=1e-4), np.float64: dict(rtol=1e-12, atol=1e-10)}


@pytest.fixture(autouse=True)
def _load(conv1d_package):
    pass


def reference(x, kernel):
    """The definition, one output at a time."""
    n, k = len(x), len(kernel)
    return np.array([sum(x[i + j] * kernel[j] for j in range(k) if i + j < n) for i in range(n)], dtype=x.dtype)


def conv1d(x, kernel, **kwargs):
    return call("examples::conv1d", x, kernel, input_size=len(x), conv_size=len(kernel), **kwargs)


def test_seed_example():
    result = conv1d(np.arange(15, dtype=np.float32), np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(result, [14, 20, 26, 32, 38, 44, 50, 56, 62, 68, 74, 80, 41, 14, 0])


SIZES = [
    (0, 1),
    (1, 1),
    (1, 4),
    (3, 4),
    (7, 7),
    (15, 4),
    (17, 31),
    (64, 1),
    (101, 255),
    (1001, 31),
    (4099, 4),
    (10007, 255),
    (300_007, 17),
]


@pytest.mark.parametrize("n, k", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_numpy_and_reference(n, k, dtype):
    rng = np.random.default_rng(n * 1000 + k)
    x, kernel = rng.standard_normal(n).astype(dtype), rng.standard_normal(k).astype(dtype)
    result = conv1d(x, kernel)
    assert result.dtype == dtype and result.shape == (n,)
    expected = np.correlate(np.pad(x, (0, k - 1)), kernel, mode="valid") if n else np.zeros(0, dtype)
    np.testing.assert_allclose(result, expected, **TOLERANCE[dtype])
    if n * k <= 50_000:
        np.testing.assert_allclose(result, reference(x, kernel), **TOLERANCE[dtype])


@pytest.mark.parametrize("threads", [1, 2])
def test_matches_torch(threads):
    previous = opgraph.get_num_threads()
    opgraph.set_num_threads(threads)
    try:
        x, kernel = torch.randn(200_003), torch.randn(31)
        expected = F.conv1d(F.pad(x.view(1, 1, -1), (0, 30)), kernel.view(1, 1, -1)).view(-1)
        torch.testing.assert_close(torch.from_numpy(conv1d(x, kernel)), expected, rtol=1e-4, atol=1e-4)
    finally:
        opgraph.set_num_threads(previous)


def test_strided_input_is_correct():
    base = np.random.default_rng(0).standard_normal(200).astype(np.float32)
    x, kernel = base[::2], np.ones(5, np.float32)
    np.testing.assert_allclose(conv1d(x, kernel), reference(np.ascontiguousarray(x), kernel), rtol=1e-5, atol=1e-5)


def test_destination_passing():
    x, kernel = np.arange(15, dtype=np.float64), np.arange(4, dtype=np.float64)
    out = np.full_like(x, np.nan)
    assert conv1d(x, kernel, out=out) is out
    np.testing.assert_array_equal(out, reference(x, kernel))


@pytest.mark.parametrize(
    "x, kernel, attrs, message",
    [
        (
            np.ones(15, np.float32),
            np.ones(4, np.float32),
            dict(input_size=16, conv_size=4),
            r"input: expected shape \[16\] \(input_size=16\), got float32\[15\]",
        ),
        (
            np.ones(15, np.float32),
            np.ones(4, np.float32),
            dict(input_size=15, conv_size=3),
            r"kernel: expected shape \[3\] \(conv_size=3\), got float32\[4\]",
        ),
        (
            np.ones((3, 5), np.float32),
            np.ones(4, np.float32),
            dict(input_size=3, conv_size=4),
            r"input: expected rank 1, got float32\[3, 5\]",
        ),
        (
            np.ones(15, np.int32),
            np.ones(4, np.int32),
            dict(input_size=15, conv_size=4),
            r"input: expected float32 or float64, got int32\[15\]",
        ),
        (
            np.ones(15, np.float32),
            np.ones(4, np.float64),
            dict(input_size=15, conv_size=4),
            r"kernel: expected float32 like input, got float64\[4\]",
        ),
        (
            np.ones(15, np.float32),
            np.ones(0, np.float32),
            dict(input_size=15, conv_size=0),
            r"conv_size: expected at least 1, got 0",
        ),
    ],
)
def test_bad_input_is_a_clear_error(x, kernel, attrs, message):
    with pytest.raises(opgraph.Error, match=r"^examples::conv1d: " + message):
        call("examples::conv1d", x, kernel, **attrs)


def test_missing_attribute():
    with pytest.raises(opgraph.Error, match=r"examples::conv1d: missing required attribute 'conv_size' \(int\)"):
        call("examples::conv1d", np.ones(3, np.float32), np.ones(2, np.float32), input_size=3)


def backward(grad, x, kernel):
    return call("examples::conv1d_backward", grad, x, kernel, input_size=len(x), conv_size=len(kernel))


def test_backward_is_registered():
    assert opgraph.op_backward("examples::conv1d") == "examples::conv1d_backward"


@pytest.mark.parametrize("n, k", [(1, 1), (5, 3), (15, 4), (40, 41), (257, 31)])
def test_backward_matches_torch_autograd(n, k):
    x = torch.randn(n, dtype=torch.float64, requires_grad=True)
    kernel = torch.randn(k, dtype=torch.float64, requires_grad=True)
    y = F.conv1d(F.pad(x.view(1, 1, -1), (0, k - 1)), kernel.view(1, 1, -1)).view(-1)
    grad = torch.randn(n, dtype=torch.float64)
    y.backward(grad)
    grad_x, grad_kernel = backward(grad, x.detach(), kernel.detach())
    np.testing.assert_allclose(grad_x, x.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_kernel, kernel.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_backward_matches_finite_differences():
    rng = np.random.default_rng(7)
    x, kernel, grad = rng.standard_normal(12), rng.standard_normal(5), rng.standard_normal(12)
    grad_x, grad_kernel = backward(grad, x, kernel)
    eps = 1e-6

    def numeric(wrt):
        result = np.zeros_like(wrt)
        for i in range(len(wrt)):
            saved = wrt[i]
            wrt[i] = saved + eps
            plus = grad @ conv1d(x, kernel)
            wrt[i] = saved - eps
            minus = grad @ conv1d(x, kernel)
            wrt[i] = saved
            result[i] = (plus - minus) / (2 * eps)
        return result

    np.testing.assert_allclose(grad_x, numeric(x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad_kernel, numeric(kernel), rtol=1e-6, atol=1e-7)


def test_run_script_prints_the_expected_result():
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "conv1d" / "run.py")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[14. 20. 26. 32. 38. 44. 50. 56. 62. 68. 74. 80. 41. 14.  0.]" in result.stdout
    assert result.stdout.count("verification PASSED") == 3
