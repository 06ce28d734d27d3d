"""Models quantized by torchao's configs and by its pt2e flow (the
X86Inductor quantizer), exported and run as they are: each graph extracts,
its dequantized linear layers become opgraph::quantized_linear (the
fuse_quantized_linears pass), the other quantization ops run on kernels of
their own, and the outputs equal torch's execution of the same quantized
model."""

import warnings

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir

pytestmark = pytest.mark.skipif(
    opgraph.get_cpu_capability() == "default", reason="the integer panels need AVX2 or AVX-512, which this CPU lacks"
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from torchao.quantization import (
        Int8DynamicActivationIntxWeightConfig,
        Int8WeightOnlyConfig,
        IntxWeightOnlyConfig,
        MappingType,
        quantize_,
    )
    from torchao.quantization.granularity import PerAxis, PerGroup
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )


class Block(nn.Module):
    """A SwiGLU MLP and a head, 64 and 96 inputs (whole groups of 32)."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(64, 96, bias=False)
        self.up = nn.Linear(64, 96)
        self.down = nn.Linear(96, 64)
        self.head = nn.Linear(64, 40)

    def forward(self, x):
        return self.head(x + self.down(nn.functional.silu(self.gate(x)) * self.up(x)))


CONFIGS = {
    "int8_weight_only": (lambda: Int8WeightOnlyConfig(), 8),
    "int4_weight_only_group32": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)), 4),
    "int8_weight_only_per_channel": (lambda: IntxWeightOnlyConfig(weight_dtype=torch.int8, granularity=PerAxis(0)), 8),
    "8da4w": (
        lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32)),
        4,
    ),
    "8da8w": (
        lambda: Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)),
        8,
    ),
    # Zero points, which quantized_linear takes as they are.
    "int4_asymmetric_group32": (
        lambda: IntxWeightOnlyConfig(
            weight_dtype=torch.int4, granularity=PerGroup(32), mapping_type=MappingType.ASYMMETRIC
        ),
        4,
    ),
    "int8_asymmetric_per_channel": (
        lambda: IntxWeightOnlyConfig(
            weight_dtype=torch.int8, granularity=PerAxis(0), mapping_type=MappingType.ASYMMETRIC
        ),
        8,
    ),
    "8da4w_asymmetric": (
        lambda: Int8DynamicActivationIntxWeightConfig(
            weight_dtype=torch.int4, weight_granularity=PerGroup(32), weight_mapping_type=MappingType.ASYMMETRIC
        ),
        4,
    ),
}


def quantized_block(config):
    torch.manual_seed(0)
    model = Block().eval()
    quantize_(model, config)
    return model


def fused_layers(session):
    report = next(report for report in session.pass_reports if report.name == "fuse_quantized_linears")
    return sorted(node for node in report.rewritten if node.endswith("opgraph::quantized_linear"))


@pytest.mark.parametrize("name", CONFIGS)
def test_a_torchao_quantized_model_runs_on_the_integer_levels(name):
    make_config, bits = CONFIGS[name]
    model = quantized_block(make_config())
    rows = torch.export.Dim("rows", min=1, max=128)
    ir = extract_ir(model, (torch.randn(3, 64),), dynamic_shapes={"x": {0: rows}})
    session = opgraph.Session(ir.graph, weights=ir.weights)
    assert len(fused_layers(session)) == 4, session.pass_reports
    fused = [node for node in session.graph.nodes if node.op_type == "opgraph::quantized_linear"]
    assert [node.attrs["bits"] for node in fused] == [bits] * 4
    zero_points = [
        name for node in fused for input in node.inputs for name in input.values if name.endswith(".zero_points")
    ]
    assert len(zero_points) == (4 if "asymmetric" in name else 0)
    for rows in (1, 7, 100):
        x = torch.randn(rows, 64)
        with torch.no_grad():
            want = model(x).numpy()
        np.testing.assert_allclose(session.run(x.numpy())[0], want, rtol=2e-5, atol=2e-5)
    # Unfused, the torchao ops run on kernels of their own, to the same outputs.
    unfused = opgraph.Session(ir.graph, weights=ir.weights, disabled_passes=["fuse_quantized_linears"])
    assert fused_layers(unfused) == []
    x = torch.randn(5, 64)
    with torch.no_grad():
        np.testing.assert_allclose(unfused.run(x.numpy())[0], model(x).numpy(), rtol=2e-5, atol=2e-5)


def test_zero_points_that_are_not_integers_keep_their_dequantization_and_still_run():
    """quantized_linear's zero points are int8: float ones holding fractions
    leave their layer torchao::dequantize_affine -> linear, which runs as
    torchao's kernel does (a float zero point truncated, as int32())."""
    rng = np.random.default_rng(0)
    weights = {
        "q": rng.integers(-8, 8, (40, 64)).astype(np.int8),
        "scale": rng.uniform(0.01, 0.1, (40, 2)).astype(np.float32),
        "zero_point": rng.integers(-4, 4, (40, 2)).astype(np.float32) + 0.5,
    }
    graph = opgraph.Graph()
    graph.add_input("x", "float32", [3, 64])
    for name, array in weights.items():
        graph.add_constant(name, str(array.dtype), list(array.shape))
    graph.add_node(
        "torchao::dequantize_affine", ["q", "scale", "zero_point"], ["w"], block_size=[1, 32], input_dtype="int8"
    )
    graph.add_node("aten::linear", ["x", "w", None], ["y"])
    graph.add_output("y")
    session = opgraph.Session(graph, weights=weights)
    assert fused_layers(session) == []
    x = rng.standard_normal((3, 64)).astype(np.float32)
    levels = weights["q"].reshape(40, 2, 32) - np.trunc(weights["zero_point"])[:, :, None]
    want = x @ (levels * weights["scale"][:, :, None]).reshape(40, 64).T
    np.testing.assert_allclose(session.run(x)[0], want, rtol=1e-5, atol=1e-5)
    # Integers, in a float tensor, fuse.
    integers = {**weights, "zero_point": np.trunc(weights["zero_point"])}
    fused = opgraph.Session(graph, weights=integers)
    assert len(fused_layers(fused)) == 1, fused.pass_reports
    np.testing.assert_allclose(fused.run(x)[0], want, rtol=1e-5, atol=1e-5)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8 * 6 * 6, 64)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.relu(self.fc(torch.relu(self.conv(x)).flatten(1))))


def test_a_pt2e_quantized_model_runs_with_its_quantize_dequantize_pairs():
    """X86Inductor's static int8: uint8 activations quantized and dequantized
    per tensor around each layer, int8 weights per output channel. The linear
    layers' weights go to the integer panels; the activations' pairs and the
    convolution's weight run on quantized_decomposed's kernels."""
    torch.manual_seed(0)
    example = (torch.randn(2, 3, 8, 8),)
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(torch.export.export(ConvNet().eval(), example).module(), quantizer)
    for _ in range(4):
        prepared(torch.randn(2, 3, 8, 8))
    model = convert_pt2e(prepared)
    ir = extract_ir(model, example)
    ops = {node.op_type for node in ir.graph.nodes}
    assert {"quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_channel"} <= ops
    session = opgraph.Session(ir.graph, weights=ir.weights)
    assert len(fused_layers(session)) == 2
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(session.run(x.numpy())[0], want, rtol=1e-5, atol=1e-5)


def test_dequantize_affine_refuses_blocks_that_do_not_divide_the_input():
    graph = opgraph.Graph("bad")
    graph.add_input("q", "int8", [4, 48])
    graph.add_constant("scale", "float32", [4, 2])
    graph.add_node(
        "torchao::dequantize_affine",
        ["q", "scale", None],
        ["w"],
        name="dequantize",
        block_size=[1, 32],
        input_dtype="int8",
    )
    graph.add_output("w")
    message = (
        r"node 'dequantize' \(torchao::dequantize_affine\): block_size: 32 does not divide dim 1 of input int8\[4, 48\]"
    )
    with pytest.raises(opgraph.Error, match=message):
        opgraph.Session(graph, weights={"scale": np.ones((4, 2), np.float32)})
