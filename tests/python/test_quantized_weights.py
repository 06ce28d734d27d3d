"""Sessions and Generators that keep their products' weights as int8 or
int4 (Session(quantize=...), Generator(weights=...), the command line's
--weights): outputs equal PyTorch's with the weights dequantized as opgraph
quantizes them, a scale per output channel or per group of inputs, at one
row, a few and many; bad options are errors that say what was expected."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import repo_modules
import torch
from test_llm_export import MAX_SEQ_LEN, PROMPT, small_model
from torch import nn

import opgraph
from opgraph.ir import extract_ir
from opgraph.llm import Generator, export

pytestmark = pytest.mark.skipif(
    opgraph.get_cpu_capability() == "default", reason="quantized weights need AVX2 or AVX-512, which this CPU lacks"
)


# Each format's bits, and whether it is symmetric.
FORMATS = {"int8": (8, True), "int4": (4, True), "int8_asym": (8, False), "int4_asym": (4, False)}


def dequantized(weight, bits, group_size, symmetric=True):
    """A linear layer's [out, in] weight as its levels times their scales,
    per output channel and group of `group_size` inputs (0: all), rounded to
    nearest even: int8 scales a group to [-127, 127]; int4 (llama.cpp's
    Q4_0) puts its weight of largest magnitude at -8, the others in [-8, 7].
    Not symmetric, as torchao's ASYMMETRIC mapping: the group's range, zero
    included, over [-128, 127] or [-8, 7], with an integer zero point."""
    out, inputs = weight.shape
    group = group_size or inputs
    grouped = weight.detach().reshape(out, inputs // group, group)
    if not symmetric:
        low, high = (-128, 127) if bits == 8 else (-8, 7)
        smallest = grouped.amin(dim=2, keepdim=True).clamp(max=0)
        scale = (grouped.amax(dim=2, keepdim=True).clamp(min=0) - smallest) / (high - low)
        inverse = torch.where(scale > 0, 1 / scale, 0)
        zero = torch.where(scale > 0, torch.clamp(low - torch.round(smallest / scale), low, high), 0)
        levels = torch.clamp(torch.round(grouped * inverse) + zero, low, high)
        return ((levels - zero) * scale).reshape(out, inputs)
    largest = torch.gather(grouped, 2, grouped.abs().argmax(dim=2, keepdim=True))
    if bits == 8:
        scale, low, high = largest.abs() / 127, -127, 127
        inverse = torch.where(largest != 0, 127 / largest.abs(), 0)
    else:
        scale, low, high = largest / -8, -8, 7
        inverse = torch.where(scale != 0, 1 / scale, 0)
    return (torch.round(grouped * inverse).clamp(low, high) * scale).reshape(out, inputs)


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


@pytest.mark.parametrize(
    "weights, group_size", [("int8", 0), ("int8", 32), ("int4", 32), ("int4", 0), ("int8_asym", 0), ("int4_asym", 32)]
)
def test_quantized_weights_give_the_dequantized_products(layers, weights, group_size):
    model, ir = layers
    reference = Layers().eval()
    reference.load_state_dict(model.state_dict())
    bits, symmetric = FORMATS[weights]
    for linear in (reference.gate, reference.up, reference.down, reference.head):
        linear.weight.data = dequantized(linear.weight, bits, group_size, symmetric)
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize=weights, group_size=group_size)
    plain = opgraph.Session(ir.graph, weights=ir.weights)
    for rows in (1, 5, 200, 1):  # one row, a few, 64 at a time
        x = torch.randn(rows, 64)
        with torch.no_grad():
            want = reference(x).numpy()
        got = session.run(x.numpy())[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        assert not np.allclose(got, plain.run(x.numpy())[0], rtol=1e-6, atol=1e-6), "the weights should be integers"


def row_quantized(x):
    """x quantized per row to uint8 with a zero point and back, as ONNX
    Runtime's DynamicQuantizeLinear quantizes a tensor: the range of the row
    and zero over 255 levels, rounded half to even."""
    low, high = np.minimum(x.min(axis=1, keepdims=True), 0), np.maximum(x.max(axis=1, keepdims=True), 0)
    scale = ((high - low) / np.float32(255)).astype(np.float32)
    zero = np.clip(np.round(-low / scale), 0, 255)
    return ((np.clip(np.round(x * (np.float32(1) / scale)) + zero, 0, 255) - zero) * scale).astype(np.float32)


def layers_with_quantized_inputs(model, bits, group_size, quantized_input, x, symmetric=True):
    """Layers' output for x, their weights dequantized as opgraph quantizes
    them and each layer's input passed through quantized_input."""
    weights = {
        name: dequantized(getattr(model, name).weight, bits, group_size, symmetric)
        for name in ("gate", "up", "down", "head")
    }

    def layer(name, h):
        return nn.functional.linear(
            torch.from_numpy(quantized_input(h.numpy())), weights[name], getattr(model, name).bias
        )

    with torch.no_grad():
        return layer("head", x + layer("down", nn.functional.silu(layer("gate", x)) * layer("up", x))).numpy()


def test_int8_activations_quantize_each_product_input_per_row(layers):
    """From 16 rows on, each product multiplies its input quantized per row
    by the int8 weights."""
    model, ir = layers
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", activations="int8")
    weights_only = opgraph.Session(ir.graph, weights=ir.weights, quantize="int8")
    # Without VNNI, where oneDNN's u8 x s8 sums saturate, they take the few rows' path (per block of 32).
    vnni = opgraph.cpu_has_vnni()
    for rows in (16, 200):
        x = torch.randn(rows, 64)
        x[0] *= 30  # an outlier row costs the others no precision
        want = layers_with_quantized_inputs(model, 8, 0, row_quantized if vnni else block_quantized, x)
        got = session.run(x.numpy())[0]
        # The second layer's input is the first's output, summed in another order than torch's: where a value
        # of it lies on a rounding boundary of its block's levels, its level may differ by one, and its row's
        # outputs by about that level's scale times the weights.
        rows_alike = np.isclose(got, want, rtol=1e-5, atol=1e-4).all(axis=1)
        assert rows_alike.mean() >= 0.99, f"{np.flatnonzero(~rows_alike)} of {rows} rows differ"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-2)
        assert not np.allclose(got, weights_only.run(x.numpy())[0], rtol=1e-4, atol=1e-4)
    engine = (
        "oneDNN int8 (int8 activations, 16 rows or more)" if vnni else "opgraph dot-product panels (int8 activations)"
    )
    assert set(session.node_engines) - {""} == {engine}


def block_quantized(x):
    """x quantized per row and block of 32 values to int8 and back, as
    llama.cpp's Q8_0: symmetric, the block's largest magnitude at 127,
    rounded half to even, in float32."""
    blocks = x.reshape(x.shape[0], -1, 32)
    largest = np.abs(blocks).max(axis=2, keepdims=True)
    inverse = np.where(largest > 0, np.float32(127) / np.where(largest > 0, largest, 1), 0).astype(np.float32)
    return (np.rint(blocks * inverse) * (largest / np.float32(127))).reshape(x.shape).astype(np.float32)


@pytest.mark.parametrize(
    "weights, group_size", [("int8", 0), ("int8", 32), ("int4", 32), ("int4", 0), ("int8_asym", 0), ("int4_asym", 32)]
)
def test_int8_activations_quantize_a_few_rows_per_block_of_32(layers, weights, group_size):
    """A few rows (a decoding step), and any rows by int4, grouped or
    asymmetric weights, multiply their input quantized per row and block of
    32 by the integer weights."""
    model, ir = layers
    bits, symmetric = FORMATS[weights]
    quantize = dict(quantize=weights, group_size=group_size)
    session = opgraph.Session(ir.graph, weights=ir.weights, activations="int8", **quantize)
    weights_only = opgraph.Session(ir.graph, weights=ir.weights, **quantize)
    for rows in (1, 7) if weights == "int8" and group_size == 0 else (1, 7, 70):
        x = torch.randn(rows, 64)
        want = layers_with_quantized_inputs(model, bits, group_size, block_quantized, x, symmetric)
        got = session.run(x.numpy())[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert not np.allclose(got, weights_only.run(x.numpy())[0], rtol=1e-4, atol=1e-4)
    assert set(session.node_engines) - {""} == {"opgraph dot-product panels (int8 activations)"}


@pytest.mark.parametrize("bits, rows", [(8, 3), (8, 20), (4, 20)])
def test_int8_activations_keep_a_nan_in_its_row(layers, bits, rows):
    """A NaN in a row's input makes that row's output NaN, as in float32,
    not a finite value from levels that lost it; the other rows keep theirs."""
    _, ir = layers
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize=f"int{bits}", activations="int8")
    x = np.random.default_rng(2).standard_normal((rows, 64)).astype(np.float32)
    x[1, 40] = np.nan
    out = session.run(x)[0]
    assert np.isnan(out[1]).all()
    assert np.isfinite(np.delete(out, 1, axis=0)).all()


@pytest.mark.parametrize("weights, rows", [("int8", 40), ("int8", 3), ("int4", 3)])
def test_int8_activations_serve_a_quantized_file_too(layers_file, tmp_path, weights, rows):
    out = tmp_path / f"{weights}.opg"
    opgraph.quantize(layers_file, out, weights=weights)
    graph, tensors = opgraph.load_opg(layers_file)
    at_load = opgraph.Session(graph, weights=tensors, quantize=weights, activations="int8")
    from_file = opgraph.Session(out, activations="int8")
    x = np.random.default_rng(1).standard_normal((rows, 64)).astype(np.float32)
    np.testing.assert_allclose(from_file.run(x)[0], at_load.run(x)[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(from_file.run(x)[0], opgraph.Session(out).run(x)[0], rtol=1e-4, atol=1e-4)


def test_bad_quantization_options_are_errors(layers):
    _, ir = layers
    with pytest.raises(
        opgraph.Error, match="quantize: expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got 'int3'"
    ):
        opgraph.Session(ir.graph, weights=ir.weights, quantize="int3")
    with pytest.raises(opgraph.Error, match="group_size: 32 given without quantize='int8' or 'int4'"):
        opgraph.Session(ir.graph, weights=ir.weights, group_size=32)
    with pytest.raises(opgraph.Error, match="group size expected 0 .* or a positive multiple of 32, got 48"):
        opgraph.Session(ir.graph, weights=ir.weights, quantize="int4", group_size=48)
    with pytest.raises(opgraph.Error, match="activations: expected None or 'int8', got 'int4'"):
        opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", activations="int4")
    with pytest.raises(opgraph.Error, match="activations: expected None or 'int8', got 'uint8'"):
        Generator(ir.graph, weights="int4", activations="uint8")
    session = opgraph.Session(ir.graph, weights=ir.weights, quantize="int8", group_size=64)
    message = r"node '\w+' \(opgraph::linear\): weights int8: the group size 64 does not divide the input dimension 96"
    with pytest.raises(opgraph.Error, match=message):
        session.run(np.ones((1, 64), np.float32))


@pytest.fixture(scope="module")
def layers_file(layers, tmp_path_factory):
    path = tmp_path_factory.mktemp("layers") / "layers.opg"
    layers[1].save(path)
    return path


def test_quantized_weights_without_avx2_are_refused(layers_file):
    """OPGRAPH_CPU_CAPABILITY=default runs what a CPU without AVX2 would: no integer panels."""
    script = f"import opgraph; opgraph.Session({str(layers_file)!r}, quantize='int8')"
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "OPGRAPH_CPU_CAPABILITY": "default"},
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "weights int8: needs a CPU with AVX2 and FMA or with AVX-512; this one runs default" in result.stderr


@pytest.mark.parametrize(
    "weights, group_size", [("int8", None), ("int8", 32), ("int4", None), ("int4", 64), ("int4_asym", None)]
)
def test_a_quantized_file_runs_as_a_session_quantizing_at_load(layers, layers_file, weights, group_size, tmp_path):
    """opgraph.quantize stores the levels a Session quantizing at load would
    compute; the int4 levels with group_size 64 do not divide the down
    projection's 96 inputs, so that layer is excluded."""
    _, ir = layers
    bits, symmetric = FORMATS[weights]
    exclude = ["down.*"] if group_size == 64 else []
    out = tmp_path / "quantized.opg"
    report = opgraph.quantize(layers_file, out, weights=weights, group_size=group_size, exclude=exclude)
    quantized = {node: (weight, inputs, outputs) for node, weight, inputs, outputs in report["quantized"]}
    assert quantized["linear_3"] == ("head.weight", 64, 140)
    assert len(quantized) == (3 if exclude else 4)
    assert report["kept"] == ([("linear_2", "excluded")] if exclude else [])
    graph, tensors = opgraph.load_opg(out)
    ops = [node.op_type for node in graph.nodes if "linear" in node.op_type]
    assert ops.count("opgraph::quantized_linear") == len(quantized)
    assert ("down.weight" in tensors) == bool(exclude) and "gate.weight" not in tensors
    assert tensors["gate.weight.levels"].dtype == (np.int8 if bits == 8 else np.uint8)
    assert ("gate.weight.zero_points" in tensors) == (not symmetric)
    assert out.stat().st_size < layers_file.stat().st_size / (2 if exclude else 3 if bits == 8 else 4)

    session = opgraph.Session(out)
    plain = opgraph.Session(ir.graph, weights=ir.weights)
    for rows in (1, 5, 200):
        x = np.random.default_rng(rows).standard_normal((rows, 64)).astype(np.float32)
        if exclude:
            # The down projection stays float32: against PyTorch on the others' dequantized levels.
            model = Layers().eval()
            model.load_state_dict(layers[0].state_dict())
            for linear in (model.gate, model.up, model.head):
                linear.weight.data = dequantized(linear.weight, bits, group_size, symmetric)
            with torch.no_grad():
                want = model(torch.from_numpy(x)).numpy()
            tolerance = 1e-4
        else:
            at_load = opgraph.Session(ir.graph, weights=ir.weights, quantize=weights, group_size=group_size)
            want, tolerance = at_load.run(x)[0], 1e-5
        got = session.run(x)[0]
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
        assert not np.allclose(got, plain.run(x)[0], rtol=1e-6, atol=1e-6), "the weights should be integers"


def test_quantizing_a_file_refuses_what_it_cannot_pack(layers_file, tmp_path):
    out = tmp_path / "out.opg"
    message = (
        r"layer 'linear_2' \(weight 'down.weight', 64 outputs of 96 inputs\): the group size 64 does not divide "
        r"its 96 inputs; exclude it or choose another group size"
    )
    with pytest.raises(opgraph.Error, match=message):
        opgraph.quantize(layers_file, out, weights="int4", group_size=64)
    assert not out.exists()
    with pytest.raises(
        opgraph.Error, match="weights: expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got 'int3'"
    ):
        opgraph.quantize(layers_file, out, weights="int3")
    with pytest.raises(
        opgraph.Error, match=r"quantize: expected a group size of 0 \(all of a layer's inputs\) or more, got -32"
    ):
        opgraph.quantize(layers_file, out, weights="int8", group_size=-32)
    odd = extract_ir(nn.Linear(33, 4).eval(), (torch.randn(2, 33),))
    odd.save(tmp_path / "odd.opg")
    with pytest.raises(opgraph.Error, match="int4 packs inputs in pairs, and it has an odd count of them"):
        opgraph.quantize(tmp_path / "odd.opg", out, weights="int4", group_size=33)
    with pytest.raises(opgraph.Error, match="the group size 32 does not divide its 33 inputs"):
        opgraph.quantize(tmp_path / "odd.opg", out, weights="int4")
    report = opgraph.quantize(tmp_path / "odd.opg", out, weights="int8")  # one group of all 33
    assert [layer[2:] for layer in report["quantized"]] == [(33, 4)]


class Conv1DAndMatmul(nn.Module):
    """GPT-2's Conv1D (addmm by a [in, out] weight) and a product by a constant
    matrix: quantized as linear layers of the transposed weight."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(64, 48))
        self.bias = nn.Parameter(torch.randn(48))
        self.other = nn.Parameter(torch.randn(48, 32))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.weight) @ self.other


def test_addmm_and_matmul_by_a_constant_are_quantized_too(tmp_path):
    torch.manual_seed(1)
    model = Conv1DAndMatmul().eval()
    extract_ir(model, (torch.randn(3, 64),)).save(tmp_path / "model.opg")
    report = opgraph.quantize(tmp_path / "model.opg", tmp_path / "int8.opg", weights="int8")
    assert [layer[1:] for layer in report["quantized"]] == [("weight", 64, 48), ("other", 48, 32)]
    x = torch.randn(3, 64)
    with torch.no_grad():
        weight, other = (dequantized(w.T, 8, 0).T for w in (model.weight, model.other))
        want = torch.addmm(model.bias, x, weight) @ other
    got = opgraph.Session(tmp_path / "int8.opg").run(x.numpy())[0]
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


class TiedLM(nn.Module):
    """An embedding tied to its LM head, as small LLMs have them."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 64)
        self.mix = nn.Linear(64, 64)
        self.head = nn.Linear(64, 50, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens):
        return self.head(torch.relu(self.mix(self.embed(tokens))))


@pytest.mark.parametrize("weights", ["int8", "int4", "int4_asym"])
def test_embeddings_quantize_with_the_head_they_are_tied_to(tmp_path, weights):
    torch.manual_seed(2)
    model = TiedLM().eval()
    tokens = torch.randint(0, 50, (2, 7))
    extract_ir(model, (tokens,)).save(tmp_path / "model.opg")
    out = tmp_path / "quantized.opg"
    report = opgraph.quantize(tmp_path / "model.opg", out, weights=weights, embeddings=True)
    bits, symmetric = FORMATS[weights]
    # One table, which torch.export names after the head, for both.
    assert sorted(layer[1] for layer in report["quantized"]) == ["head.weight", "head.weight", "mix.weight"]
    graph, weights = opgraph.load_opg(out)
    assert {node.op_type for node in graph.nodes} >= {"opgraph::quantized_embedding", "opgraph::quantized_linear"}
    assert all(array.dtype != np.float32 or array.size <= 64 * 64 for array in weights.values()), "no float table"
    group = 0 if bits == 8 else 32
    table = dequantized(model.embed.weight, bits, group, symmetric)
    with torch.no_grad():
        hidden = torch.relu(
            nn.functional.linear(table[tokens], dequantized(model.mix.weight, bits, group, symmetric), model.mix.bias)
        )
        want = nn.functional.linear(hidden, table).numpy()
    np.testing.assert_allclose(opgraph.Session(out).run(tokens.numpy())[0], want, rtol=1e-4, atol=1e-4)
    with pytest.raises(opgraph.Error, match="indices: index 50 at position 0 is out of range for 50 embeddings"):
        opgraph.Session(out).run(np.full((2, 7), 50, np.int64))


def test_the_command_line_quantizes_a_file(layers_file, tmp_path, opgraph_cli):
    out = tmp_path / "quantized.opg"
    command = [str(opgraph_cli), "quantize", str(layers_file), str(out), "--weights", "int4", "--exclude", "head*"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "quantized (3 layers, int4):" in result.stdout
    assert re.search(r"kept as they are \(1\):\n\s+layer\s+why\n\s+linear_3\s+excluded", result.stdout)
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    by_python = tmp_path / "by_python.opg"
    opgraph.quantize(layers_file, by_python, weights="int4", exclude=["head*"])
    np.testing.assert_array_equal(opgraph.Session(out).run(x)[0], opgraph.Session(by_python).run(x)[0])


def test_a_trained_classifier_keeps_its_accuracy_with_quantized_weights_and_activations():
    accuracies = repo_modules.load("bench/quantized_classifier.py").accuracies(threads=2)
    float32 = accuracies.pop("float32")
    assert float32 > 0.95, "the classifier should have learned the digits"
    for name, accuracy in accuracies.items():
        assert accuracy >= float32 - (0.02 if "int4" in name else 0.01), (name, accuracies)


@pytest.mark.parametrize("weights", ["int8", "int4", "int4_asym"])
def test_generation_with_quantized_weights_gives_transformers_tokens_on_those_weights(weights, tmp_path, opgraph_cli):
    bits, symmetric = FORMATS[weights]
    model = small_model("llama")
    folder = export(model, tmp_path / "llama", max_seq_len=MAX_SEQ_LEN)
    # The LM head shares the embedding's weight: only the product is quantized, the lookup stays float32.
    model.lm_head.weight = nn.Parameter(model.lm_head.weight.detach().clone())
    for module in model.modules():
        if isinstance(module, nn.Linear):
            module.weight.data = dequantized(module.weight, bits, 0 if bits == 8 else 32, symmetric)
    with torch.no_grad():
        want = model.generate(torch.tensor([PROMPT]), max_new_tokens=16, do_sample=False, min_new_tokens=16)
    got = Generator(folder, weights=weights).generate(PROMPT, max_new_tokens=16)
    assert got == want[0, len(PROMPT) :].tolist()
    result = subprocess.run(
        [str(opgraph_cli), "generate", str(folder), "--prompt-ids", ",".join(map(str, PROMPT)), "-n", "16"]
        + ["--weights", weights],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert [int(t) for t in result.stdout.split()] == got
    with pytest.raises(
        opgraph.Error, match="weights: expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got 'int3'"
    ):
        Generator(folder, weights="int3")
    with pytest.raises(
        opgraph.Error,
        match="opgraph.llm.export: weights: expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got 'q4'",
    ):
        export(model, tmp_path / "bad", max_seq_len=MAX_SEQ_LEN, weights="q4")
    with pytest.raises(
        opgraph.Error, match="opgraph.llm.export: group_size: 32 given without weights='int8' or 'int4'"
    ):
        export(model, tmp_path / "bad", max_seq_len=MAX_SEQ_LEN, group_size=32)
    # Exported with its weights quantized: the same tokens from a smaller file.
    quantized = export(small_model("llama"), tmp_path / "quantized", max_seq_len=MAX_SEQ_LEN, weights=weights)
    assert Generator(quantized).generate(PROMPT, max_new_tokens=16) == got
    assert (quantized / "model.opg").stat().st_size < (folder / "model.opg").stat().st_size
    assert sorted(path.name for path in quantized.iterdir()) == ["generation_config.json", "model.opg"]
