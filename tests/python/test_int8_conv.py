"""Convolutions of a Session that quantizes its activations
(activations="int8"): the input per tensor at run time, the weight per output
channel, on oneDNN's int8 convolutions; against a plain reference of that
arithmetic and against PyTorch's float32 model."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import opgraph
from opgraph.ir import extract_ir

INT8_CONV = "oneDNN int8 convolution (int8 activations)"
pytestmark = pytest.mark.skipif(
    opgraph.get_cpu_capability() == "default",
    reason="int8 convolutions run on oneDNN's AVX2 or AVX-512 kernels; this CPU or OPGRAPH_CPU_CAPABILITY has neither",
)


class TwoConvs(nn.Module):
    """A first convolution (plain input: float32) whose ReLU output the second quantizes."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 24, 3, padding=1)
        self.second = nn.Conv2d(24, 40, 3, stride=2, padding=1)

    def forward(self, x):
        return torch.relu(self.second(torch.relu(self.first(x))))


class ResidualBlocks(nn.Module):
    """ResNet's pieces: a residual added before the ReLU, a 1x1 and a strided
    convolution, and one whose input has negative values (no ReLU before it)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.conv1 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 1)
        self.down = nn.Conv2d(32, 48, 3, stride=2, padding=1, bias=False)
        self.signed = nn.Conv2d(48, 48, 3, padding=1)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))) + x)
        return self.signed(self.down(x)).mean((2, 3))


class Depthwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(3, 32, 1)
        self.depthwise = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.project = nn.Conv2d(32, 16, 1)

    def forward(self, x):
        return self.project(torch.relu(self.depthwise(torch.relu(self.expand(x)))))


def sessions(model, x):
    torch.manual_seed(0)
    ir = extract_ir(model.eval(), (torch.from_numpy(x),))
    int8 = opgraph.Session(ir.graph, weights=ir.weights, activations="int8")
    return int8, opgraph.Session(ir.graph, weights=ir.weights)


def images(batch=2, size=16, seed=1):
    return np.random.default_rng(seed).standard_normal((batch, 3, size, size)).astype(np.float32)


def int8_conv_reference(x, conv):
    """conv(x) for a non-negative x quantized per tensor to uint8 (up to 127
    without VNNI), the weight per output channel to symmetric int8, summed
    exactly, rescaled, the bias added."""
    highest = 255 if opgraph.cpu_has_vnni() else 127
    x = torch.from_numpy(x).double()
    scale = x.max() / highest
    levels = torch.clamp(torch.round(x / scale), 0, highest)
    w = conv.weight.detach().double()
    w_scale = w.abs().amax((1, 2, 3)) / 127
    w_levels = torch.round(w / w_scale[:, None, None, None])
    sums = F.conv2d(levels, w_levels, stride=conv.stride, padding=conv.padding)
    return (sums * scale * w_scale[None, :, None, None] + conv.bias.detach().double()[None, :, None, None]).numpy()


def test_int8_conv_matches_the_reference_of_its_arithmetic():
    torch.manual_seed(0)
    model = TwoConvs().eval()
    x = images()
    int8, _ = sessions(model, x)
    got = int8.run(x)[0]
    with torch.no_grad():
        first = torch.relu(model.first(torch.from_numpy(x))).numpy()
        exact = torch.relu(model(torch.from_numpy(x))).numpy()
    want = np.maximum(int8_conv_reference(first, model.second), 0)
    # The first convolution's float32 result may put a few inputs on the
    # other side of a rounding boundary: one level of one input each.
    assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max()
    # The quantization's own error is far larger: the int8 kernel ran.
    assert np.abs(got - exact).max() > 1e-3 * np.abs(exact).max()
    assert int8.node_engines.count(INT8_CONV) == 1  # the second; the first reads the plain input


def test_int8_convs_with_residuals_and_signed_inputs_stay_near_float32():
    torch.manual_seed(0)
    model = ResidualBlocks().eval()
    x = images(batch=3)
    int8, float32 = sessions(model, x)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    got = int8.run(x)[0]
    np.testing.assert_allclose(float32.run(x)[0], want, rtol=1e-4, atol=1e-5)
    assert np.abs(got - want).max() <= 3e-2 * np.abs(want).max()
    assert int8.node_engines.count(INT8_CONV) == 4  # all but the stem
    # Every convolution after the stem runs channels-last: a block of all its channels.
    blocks = [(n.attrs["block"], n.op_type) for n in int8.graph.nodes if n.op_type == "opgraph::conv2d_nchwc"]
    assert [block for block, _ in blocks[1:]] == [32, 32, 48, 48]


def test_a_nan_or_infinity_runs_the_float32_convolution_that_carries_it():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)).eval()
    x = images(batch=1)
    int8, float32 = sessions(model, x)
    before = int8.run(x)[0]
    assert int8.node_engines.count(INT8_CONV) == 1
    for bad in (np.nan, np.inf):
        given = x.copy()
        given[0, 1, 5, 7] = bad
        got, want = int8.run(given)[0], float32.run(given)[0]
        assert not np.isfinite(got).all()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(int8.run(x)[0], before)  # and the next call quantizes again


def test_chains_with_a_grouped_convolution_keep_float32():
    torch.manual_seed(0)
    model = Depthwise().eval()
    x = images()
    int8, float32 = sessions(model, x)
    np.testing.assert_array_equal(int8.run(x)[0], float32.run(x)[0])
    assert INT8_CONV not in int8.node_engines
