"""Session(..., precision="bf16"): the products with a weight (linear,
addmm, mm, matmul, convolutions) round their operands to bfloat16 (a
one-row product its weight only) and sum in float32; everything else stays
float32. Each product is held to the same
product in float64 of its operands rounded to bfloat16, which float32
misses by far more than the sums' rounding."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import opgraph
from opgraph.ir import extract_ir

needs_bf16 = pytest.mark.skipif(
    not opgraph.cpu_has_bf16(), reason="this CPU does not multiply bfloat16 (AVX-512 BF16 or AMX)"
)


def rounded(t):
    """``t``'s values rounded to bfloat16, in float64."""
    return t.detach().to(torch.bfloat16).to(torch.float64)


def run(model, inputs, precision):
    session = extract_ir(model, inputs).to_session(precision=precision)
    return session.run(*inputs)[0]


class Linear3d(nn.Module):
    """A linear layer on [batch, tokens, features], a transformer's."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(96, 40)

    def forward(self, x):
        return self.fc(x)

    def reference(self, x):
        return rounded(x) @ rounded(self.fc.weight).T + self.fc.bias.double()


class OneRow(nn.Module):
    """A decode step's product: one row, whose weight streams in bfloat16
    (a full panel of 128 columns and padded strips) while the row itself is
    multiplied as it is."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(96, 200)

    def forward(self, x):
        return self.fc(x)

    def reference(self, x):
        return x.double() @ rounded(self.fc.weight).T + self.fc.bias.double()


class Conv1dGpt2(nn.Module):
    """GPT-2's Conv1D: addmm with a [K, N] weight, then a gelu the product applies."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(64, 48) / 8)
        self.bias = nn.Parameter(torch.randn(48))

    def forward(self, x):
        return F.gelu(torch.addmm(self.bias, x, self.weight))

    def reference(self, x):
        return F.gelu(self.bias.double() + rounded(x) @ rounded(self.weight))


class MatmulByConstant(nn.Module):
    """matmul of a batch of matrices by a constant one, no bias."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(72, 24) / 8)

    def forward(self, x):
        return torch.matmul(x, self.weight)

    def reference(self, x):
        return rounded(x) @ rounded(self.weight)


class ResidualLinears(nn.Module):
    """Two linear layers, the second adding the shortcut as it writes: its
    input is the first's float32 output, rounded again."""

    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(32, 128), nn.Linear(128, 32)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))

    def reference(self, x):
        hidden = torch.relu(rounded(x) @ rounded(self.up.weight).T + self.up.bias.double())
        hidden = rounded(hidden.float())  # the first product's float32 output, as the second reads it
        return x.double() + hidden @ rounded(self.down.weight).T + self.down.bias.double()


class ConvChain(nn.Module):
    """Convolutions a Session chains on blocks of channels: a 3x3 one with a
    relu, a 1x1 one, a depthwise one and a residual add."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, padding=1)
        self.pointwise = nn.Conv2d(32, 32, 1)
        self.depthwise = nn.Conv2d(32, 32, 3, padding=1, groups=32)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        return h + self.depthwise(self.pointwise(h))

    def reference(self, x):
        def conv(layer, v, groups=1):
            return F.conv2d(
                rounded(v), rounded(layer.weight), layer.bias.double(), padding=layer.padding, groups=groups
            )

        h = torch.relu(conv(self.conv, x))
        p = conv(self.pointwise, h.float())
        return h + conv(self.depthwise, p.float(), groups=32)


class Conv1dAudio(nn.Module):
    """A 1-D convolution (Whisper's stem), which a Session runs as a 2-D one."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(20, 48, 3, padding=1)

    def forward(self, x):
        return self.conv(x)

    def reference(self, x):
        return F.conv1d(rounded(x), rounded(self.conv.weight), self.conv.bias.double(), padding=1)


CASES = {
    "linear-3d": (Linear3d, (2, 7, 96)),
    "one-row": (OneRow, (1, 96)),
    "addmm-gelu": (Conv1dGpt2, (19, 64)),
    "matmul": (MatmulByConstant, (3, 5, 72)),
    "residual-linears": (ResidualLinears, (33, 32)),
    "conv-chain": (ConvChain, (2, 16, 12, 12)),
    "conv1d": (Conv1dAudio, (2, 20, 50)),
}


@needs_bf16
@pytest.mark.parametrize("case", CASES)
def test_bf16_products_sum_bfloat16_operands_in_float32(case):
    torch.manual_seed(0)
    make, shape = CASES[case]
    model = make().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        expected = model.reference(x).numpy()
        float32 = run(model, (x,), "f32")
    got = run(model, (x,), "bf16")
    scale = np.abs(expected).max()
    # float32 sums of a few hundred products: well under 1e-5 of the scale.
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5 * scale)
    # float32 operands miss the rounded ones by bfloat16's rounding.
    assert np.abs(float32 - expected).max() > 1e-4 * scale


@needs_bf16
def test_bf16_chains_run_channels_last():
    """oneDNN's bfloat16 convolutions on AMX take channels-last only: the
    chain that float32 keeps in blocks of 16 (it has a depthwise convolution)
    takes a block of every channel in bf16, and its outputs stay held to the
    rounded operands' (test_bf16_products_sum_bfloat16_operands_in_float32)."""
    torch.manual_seed(0)
    model, x = ConvChain().eval(), torch.randn(2, 16, 12, 12)
    graph = extract_ir(model, (x,))

    def blocks(precision):
        nodes = json.loads(graph.to_session(precision=precision).graph.to_json())["nodes"]
        return {node["attrs"]["block"]["value"] for node in nodes if node["op_type"] == "opgraph::conv2d_nchwc"}

    assert blocks("f32") == {16}
    assert blocks("bf16") == {32}


@needs_bf16
def test_bf16_leaves_products_of_two_activations_and_other_ops_in_float32():
    """Attention's products multiply two activations, not a weight: with the
    softmax and the layer norm they give float32's output, bit for bit."""

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(16)

        def forward(self, q, k):
            scores = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / 4, dim=-1)
            return self.norm(torch.matmul(scores, k))

    torch.manual_seed(0)
    inputs = (torch.randn(2, 9, 16), torch.randn(2, 9, 16))
    model = Attention().eval()
    np.testing.assert_array_equal(run(model, inputs, "bf16"), run(model, inputs, "f32"))


@needs_bf16
def test_bf16_transformer_stays_close_to_float32():
    """A small BERT end to end: off float32 by about bfloat16's rounding (2^-9), not more."""
    sys.path.insert(0, os.path.dirname(__file__))
    import ir_models

    model, inputs = ir_models.bert(batch=2)
    session = extract_ir(model, inputs)
    float32 = session.to_session().run(*inputs)[0]
    got = session.to_session(precision="bf16").run(*inputs)[0]
    error = np.abs(got - float32).max() / np.abs(float32).max()
    assert 1e-5 < error < 2e-2


def test_an_unknown_precision_is_refused():
    model = Linear3d().eval()
    with pytest.raises(opgraph.Error, match=r"precision: expected 'f32' or 'bf16', got 'fp16'"):
        extract_ir(model, (torch.randn(1, 2, 96),)).to_session(precision="fp16")


def test_bf16_without_the_instructions_is_refused(tmp_path):
    """OPGRAPH_CPU_CAPABILITY=avx2 runs what a CPU without AVX-512 would: no bfloat16."""
    model = Linear3d().eval()
    path = tmp_path / "linear.opg"
    extract_ir(model, (torch.randn(1, 2, 96),)).save(path)
    script = f"import opgraph; opgraph.Session({str(path)!r}, precision='bf16')"
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "OPGRAPH_CPU_CAPABILITY": "avx2"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "precision bf16: needs a CPU that multiplies bfloat16 (AVX-512 BF16 or AMX); this one runs avx2" in (
        result.stderr
    )
