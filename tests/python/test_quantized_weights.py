"""Sessions and Generators that keep their products' weights as int8
(Session(quantize="int8"), Generator(weights="int8"), the command line's
--weights int8): outputs equal PyTorch's with the weights dequantized as
opgraph quantizes them, a scale per output channel or per group of inputs,
at one row, a few and many; bad options are errors that say what was
expected."""

import subprocess

import numpy as np
import pytest
import torch
from test_llm_export import MAX_SEQ_LEN, PROMPT, small_model
from torch import nn

import opgraph
from opgraph.ir import extract_ir
from opgraph.llm import Generator, export

pytestmark = pytest.mark.skipif(
    opgraph.get_cpu_capability() != "avx512", reason="int8 weights need AVX-512, which this CPU lacks"
)


def dequantized(weight, group_size):
    """A linear layer's [out, in] weight as its int8 levels times their
    scales: each output channel's groups of `group_size` inputs (0: all)
    scaled to [-127, 127], rounded to nearest even."""
    out, inputs = weight.shape
    group = group_size or inputs
    grouped = weight.detach().reshape(out, inputs // group, group)
    scale = grouped.abs().amax(dim=2, keepdim=True) / 127
    levels = torch.where(scale > 0, torch.round(grouped / torch.where(scale > 0, scale, 1)), 0).clamp(-127, 127)
    return (levels * scale).reshape(out, inputs)


class Layers(nn.Module):
    """A SwiGLU MLP added to its input, then a head: input dimensions of 64
    and 96 (whole groups of 32), widths of whole panels, strips and a padded
    strip."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(64, 96, bias=False)
        self.up = nn.Linear(64, 96)
        self.down = nn.Linear(96, 64)
        self.head = nn.Linear(64, 140)

    def forward(self, x):
        return self.head(x + self.down(nn.functional.silu(self.gate(x)) * self.up(x)))


@pytest.fixture(scope="module")
def layers():
    torch.manual_seed(0)
    model = Layers().eval()
    rows = torch.export.Dim("rows", min=1, max=256)
    return model, extract_ir(model, (torch.randn(2, 64),), dynamic_shapes={"x": {0: rows}})


@pytest.mark.parametrize("group_size", [0, 32])
def test_int8_weights_give_the_dequantized_products(layers, group_size):
    model, ir = layers
    reference = Layers().eval()
    reference.load_state_dict(model.state_dict())
    for linear in (reference.gate, reference.up, reference.down, reference.head):
        linear.weight.data = dequantized(linear.weight, group_size)
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", group_size=group_size)
    plain = opgraph.Session(ir.graph, weights=ir.weights)
    for rows in (1, 5, 200, 1):  # one row, a few, 64 at a time
        x = torch.randn(rows, 64)
        with torch.no_grad():
            want = reference(x).numpy()
        got = session.run(x.numpy())[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert not np.allclose(got, plain.run(x.numpy())[0], rtol=1e-6, atol=1e-6), "the weights should be int8"


def test_bad_quantization_options_are_errors(layers):
    _, ir = layers
    with pytest.raises(opgraph.Error, match="quantize: expected None or 'int8', got 'int4'"):
        opgraph.Session(ir.graph, weights=ir.weights, quantize="int4")
    with pytest.raises(opgraph.Error, match="group_size: 32 given without quantize='int8'"):
        opgraph.Session(ir.graph, weights=ir.weights, group_size=32)
    with pytest.raises(opgraph.Error, match="group size expected 0 .* or a positive multiple of 32, got 48"):
        opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", group_size=48)
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", group_size=64)
    message = r"node '\w+' \(opgraph::linear\): weights int8: the group size 64 does not divide the input dimension 96"
    with pytest.raises(opgraph.Error, match=message):
        session.run(np.ones((1, 64), np.float32))


def test_generation_with_int8_weights_gives_transformers_tokens_on_those_weights(tmp_path, opgraph_cli):
    model = small_model("llama")
    folder = export(model, tmp_path / "llama", max_seq_len=MAX_SEQ_LEN)
    # The LM head shares the embedding's weight: only the product is quantized, the lookup stays float32.
    model.lm_head.weight = nn.Parameter(model.lm_head.weight.detach().clone())
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight.data = dequantized(module.weight, 0)
    with torch.no_grad():
        want = model.generate(torch.tensor([PROMPT]), max_new_tokens=16, do_sample=False, min_new_tokens=16)
    got = Generator(folder, weights="int8").generate(PROMPT, max_new_tokens=16)
    assert got == want[0, len(PROMPT) :].tolist()
    result = subprocess.run(
        [str(opgraph_cli), "generate", str(folder), "--prompt-ids", ",".join(map(str, PROMPT)), "-n", "16"]
        + ["--weights", "int8"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert [int(t) for t in result.stdout.split()] == got
    with pytest.raises(opgraph.Error, match="weights: expected None or 'int8', got 'int3'"):
        Generator(folder, weights="int3")
