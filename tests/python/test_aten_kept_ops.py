"""Non-core ops that extraction keeps whole once they have kernels:
pixel_shuffle and pixel_unshuffle, prelu and baddbmm, against their
references and PyTorch, with their errors; and a model using them, whose
extracted graph holds them and runs on the Session as in PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op
from torch import nn

import opgraph
from opgraph.ir import extract_ir
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64]
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-4)


def random(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES + [np.int64])
@pytest.mark.parametrize("shape, factor", [((1, 4, 3, 5), 2), ((2, 3, 18, 1, 2), 3), ((8, 2, 2), 2), ((2, 5, 3, 3), 1)])
def test_pixel_shuffle_and_unshuffle(shape, factor, dtype):
    x = random(shape, np.float64).astype(dtype) if dtype != np.int64 else np.arange(np.prod(shape)).reshape(shape)
    shuffled = check_op("aten::pixel_shuffle", lambda t: aten.pixel_shuffle(t, factor), x, upscale_factor=factor)
    check_op("aten::pixel_unshuffle", lambda t: aten.pixel_unshuffle(t, factor), shuffled, downscale_factor=factor)
    np.testing.assert_array_equal(call("aten::pixel_unshuffle", shuffled, downscale_factor=factor), x)


def test_empty_pixel_shuffles_keep_their_shapes():
    """An empty batch shuffles to the shapes of any other batch (PyTorch 2.13's pixel_unshuffle returns an empty
    input as it is, [0, 1, 4, 4] here, where pixel_shuffle of the same tensors gives the shuffled shape)."""
    shuffled = call("aten::pixel_shuffle", np.zeros((0, 4, 2, 2), np.float32), upscale_factor=2)
    assert shuffled.shape == (0, 1, 4, 4)
    assert call("aten::pixel_unshuffle", shuffled, downscale_factor=2).shape == (0, 4, 2, 2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape, weights",
    [((2, 3, 4, 5), 3), ((2, 3, 4, 5), 1), ((4, 6), 6), ((7,), 1), ((), 1), ((0, 3, 2), 3), ((1, 2, 3, 2, 2), 2)],
)
def test_prelu(shape, weights, dtype):
    x, weight = random(shape, dtype), random((weights,), dtype, seed=1)
    check_op("aten::prelu", aten.prelu, x, weight)
    check_op("aten::prelu", aten.prelu, x[::2] if x.ndim else x, weight)  # a strided view


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("self_shape", [(3, 4, 6), (4, 6), (6,), (1, 4, 1), ()])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2.0), (0, 1)])
def test_baddbmm(self_shape, beta, alpha, dtype):
    b1, b2, self = random((3, 4, 5), dtype, 1), random((3, 5, 6), dtype, 2), random(self_shape, dtype, 3)
    tolerance = None if dtype == np.float64 else FLOAT32_SUMS
    check_op(
        "aten::baddbmm",
        lambda s, a, b: aten.baddbmm(s, a, b, beta=beta, alpha=alpha),
        self,
        b1,
        b2,
        beta=beta,
        alpha=alpha,
        tolerance=tolerance,
    )


def test_beta_zero_ignores_self():
    """As in PyTorch, beta=0 does not read self: a NaN there stays out."""
    b1, b2 = random((2, 3, 4)), random((2, 4, 5))
    got = call("aten::baddbmm", np.full((2, 3, 5), np.nan, np.float32), b1, b2, beta=0)
    np.testing.assert_allclose(got, b1 @ b2, **FLOAT32_SUMS)


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        (
            "aten::pixel_shuffle",
            [random((1, 6, 2, 2))],
            dict(upscale_factor=2),
            r"self: expected channels divisible by upscale_factor\^2 = 4, got float32\[1, 6, 2, 2\]",
        ),
        ("aten::pixel_shuffle", [random((6, 2))], dict(upscale_factor=1), r"self: expected rank 3 or more"),
        (
            "aten::pixel_unshuffle",
            [random((1, 1, 4, 5))],
            dict(downscale_factor=2),
            r"self: expected height and width divisible by downscale_factor 2",
        ),
        (
            "aten::pixel_unshuffle",
            [random((1, 1, 4, 4))],
            dict(downscale_factor=0),
            r"downscale_factor: expected at least 1",
        ),
        (
            "aten::prelu",
            [random((2, 3, 4)), random((2,))],
            {},
            r"weight: expected 1 value or one per channel \(3 for self",
        ),
        ("aten::prelu", [random((2, 3)), random((3,), np.float64)], {}, r"weight: expected float32 like self"),
        (
            "aten::prelu",
            [np.ones((2, 3), np.int64), np.ones(3, np.int64)],
            {},
            r"self: expected float32 or float64, got int64\[2, 3\]",
        ),
        (
            "aten::baddbmm",
            [random((3, 3)), random((2, 3, 4)), random((2, 4, 5))],
            {},
            r"self: float32\[3, 3\] does not broadcast to the product's shape \[2, 3, 5\]",
        ),
        (
            "aten::baddbmm",
            [random((3, 5)), random((2, 3, 4)), random((3, 4, 5))],
            {},
            r"mat2: expected batch 2 like self",
        ),
        (
            "aten::baddbmm",
            [random((1, 2, 3, 5)), random((2, 3, 4)), random((2, 4, 5))],
            {},
            r"self: expected rank 3 or less, got float32\[1, 2, 3, 5\]",
        ),
    ],
)
def test_errors_name_the_argument(op, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=rf"{op}: {message}"):
        call(op, *inputs, **attrs)


@pytest.mark.parametrize("op", ["pixel_shuffle", "pixel_unshuffle", "prelu", "baddbmm"])
def test_schema_is_aten(op):
    assert_schema_is_aten(op)


class SuperResolution(nn.Module):
    """An ESPCN-style upsampler with PReLU, and a baddbmm (BLOOM's alibi
    scores) on its pixels."""

    def __init__(self):
        super().__init__()
        self.conv, self.act, self.up = nn.Conv2d(3, 12, 3, padding=1), nn.PReLU(12), nn.PixelShuffle(2)

    def forward(self, x):
        y = self.up(self.act(self.conv(x)))  # [N, 3, 2H, 2W]
        rows = y.flatten(2)  # [N, 3, 4HW]
        return torch.baddbmm(rows[:, :, :3], rows, rows.transpose(1, 2)[:, :, :3], beta=0.5, alpha=0.25), y


def test_models_keep_them_whole_and_run_on_the_session():
    torch.manual_seed(0)
    model, x = SuperResolution().eval(), torch.randn(2, 3, 5, 4)
    ir = extract_ir(model, (x,))
    kept = {node.op_type for node in ir.nodes}
    assert {"aten::prelu", "aten::pixel_shuffle", "aten::baddbmm"} <= kept, kept
    with torch.no_grad():
        expected = model(x)
    for got, want in zip(ir.to_session().run(x.numpy()), expected):
        np.testing.assert_allclose(got, want.numpy(), **FLOAT32_SUMS)
