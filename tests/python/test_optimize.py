"""The graph rewrites a Session makes at load (SessionOptions::optimize):
batch norms folded into convolutions, activations fused into the convolution,
linear layer or biased product before them. The rewritten graph gives the outputs of the
graph as written and of PyTorch."""

import json
import math

import ir_models
import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir

# Folding rounds the weights once more; sums of a few hundred float32 products.
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-5)
# Whether the Session keeps convolutions' activations in channel blocks (AVX2 or AVX-512).
BLOCKED = opgraph.get_cpu_capability() != "default"


def nodes(session):
    return json.loads(session.graph.to_json())["nodes"]


def op_types(session):
    return [node["op_type"] for node in nodes(session)]


def activation(node):
    """A fused product's activation ("none" where the node gives none)."""
    return node["attrs"].get("activation", {}).get("value", "none")


def linears_given(session, input_index):
    """The session's opgraph::linear nodes that are given input `input_index` (3: a residual, 4: a multiplier)."""
    return [
        node
        for node in nodes(session)
        if node["op_type"] == "opgraph::linear" and node["inputs"][input_index] is not None
    ]


def assert_outputs_agree(got, plain, model, *inputs):
    """The optimized session's outputs against the unoptimized one's and PyTorch's."""
    with torch.no_grad():
        expected = model(*inputs)
    for a, b, want in zip(got, plain, expected, strict=True):
        np.testing.assert_allclose(a, b, **FLOAT32_SUMS)
        np.testing.assert_allclose(a, want.numpy(), **FLOAT32_SUMS)


def run_both(ir, *inputs):
    """The outputs of the optimized session and of the one that runs the graph as written."""
    arrays = [x.numpy() for x in inputs]
    optimized, plain = ir.to_session(), ir.to_session(optimize=False)
    return optimized, optimized.run(*arrays), plain.run(*arrays)


def test_cnn_folds_batch_norms_and_fuses_relus():
    model, inputs = ir_models.cnn(batch=3)
    ir = extract_ir(model, inputs)
    session, (got,), (plain,) = run_both(ir, *inputs)
    # On channel blocks (test_nchwc_layout.py), the convolutions and the pooling between them.
    blocks = ["opgraph::conv2d_nchwc", "opgraph::max_pool2d_nchwc", "opgraph::conv2d_nchwc", "opgraph::nchwc_to_nchw"]
    plain_layout = ["opgraph::conv2d", "aten::max_pool2d", "opgraph::conv2d"]
    tail = ["aten::adaptive_avg_pool2d", "aten::view", "aten::linear"]
    assert op_types(session) == (blocks if BLOCKED else plain_layout) + tail
    convolutions = [node for node in nodes(session) if node["op_type"].startswith("opgraph::conv2d")]
    assert [node["name"] for node in convolutions] == ["conv2d", "conv2d_1"]
    assert all(node["attrs"]["activation"] == {"type": "str", "value": "relu"} for node in convolutions)
    constants = {c["name"] for c in json.loads(session.graph.to_json())["constants"]}
    assert not any("running" in name or name.endswith(".0.weight") for name in constants), constants
    assert sum(name.endswith(".folded_weight") for name in constants) == 2
    assert sum(name.endswith(".folded_bias") for name in constants) == 2
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, model(*inputs).detach().numpy(), **FLOAT32_SUMS)


def test_resnet18_folds_every_batch_norm():
    model, inputs = ir_models.resnet18(batch=2)
    session, (got,), (plain,) = run_both(extract_ir(model, inputs), *inputs)
    types = op_types(session)
    # conv-bn-relu, not conv-bn-add (convolutions on channel blocks or not: test_nchwc_layout.py)
    convolutions = [node for node in nodes(session) if node["op_type"] in ("opgraph::conv2d", "opgraph::conv2d_nchwc")]
    assert "aten::batch_norm" not in types
    # conv-bn-relu (9), and on channel blocks the relu after each block's add, which folds into the convolution
    # before it (8).
    assert sum(node["attrs"]["activation"]["value"] == "relu" for node in convolutions) == (17 if BLOCKED else 9)
    assert types.count("aten::relu") == (0 if BLOCKED else 8)
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, model(*inputs).detach().numpy(), **FLOAT32_SUMS)


def test_mlp_fuses_linear_relu_and_exact_gelu():
    model, inputs = ir_models.mlp(batch=4)
    session, (got,), (plain,) = run_both(extract_ir(model, inputs), *inputs)
    fused = [node for node in nodes(session) if node["op_type"] == "opgraph::linear"]
    assert [node["attrs"]["activation"]["value"] for node in fused] == ["relu", "gelu"]
    assert "aten::relu" not in op_types(session) and "aten::gelu" not in op_types(session)
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)


def test_dynamic_batch_runs_the_rewritten_graph_at_every_size():
    model, inputs = ir_models.cnn(batch=2)
    batch = torch.export.Dim("batch", min=1, max=64)
    session = extract_ir(model, inputs, dynamic_shapes={"x": {0: batch}}).to_session()
    for size in (1, 17):
        x = torch.randn(size, 3, 16, 16)
        np.testing.assert_allclose(session.run(x.numpy())[0], model(x).detach().numpy(), **FLOAT32_SUMS)


class Shared(nn.Module):
    """A convolution whose output is also read by another node, a linear
    layer whose output is a graph output, and an activation no product
    applies (hardswish): none fuse."""

    def __init__(self):
        super().__init__()
        self.conv, self.norm = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        c = self.conv(x)
        y = self.fc((torch.relu(c) + c).mean((2, 3)))
        return y, torch.relu(y), nn.functional.hardswish(self.fc(self.norm(c).mean((2, 3))))


def test_nodes_whose_output_is_read_elsewhere_are_left_alone():
    torch.manual_seed(0)
    model, x = Shared().eval(), torch.randn(2, 3, 8, 8)
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    types = op_types(session)
    assert types.count("aten::relu") == 2 and "aten::_native_batch_norm_legit_no_training" in types
    assert "aten::hardswish" in types
    assert not any(t.startswith("opgraph::") for t in types)
    for a, b in zip(got, plain):
        np.testing.assert_array_equal(a, b)


def test_float64_batch_norm_folds_in_double():
    torch.manual_seed(0)
    model = (
        ir_models._randomize_batch_norm(
            nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3)), torch.Generator().manual_seed(1)
        )
        .double()
        .eval()
    )
    x = torch.randn(2, 2, 6, 6, dtype=torch.float64)
    session, (got,), _ = run_both(extract_ir(model, (x,)), x)
    assert op_types(session) == ["aten::conv2d"]
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-12, atol=1e-12)


def test_decomposed_batch_norm_folds_too():
    torch.manual_seed(0)
    model = ir_models._randomize_batch_norm(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()), torch.Generator().manual_seed(1)
    ).eval()
    x = torch.randn(2, 3, 8, 8)
    ir = extract_ir(model, (x,), decompose=True)
    assert "aten::_native_batch_norm_legit_no_training" in [node.op_type for node in ir.nodes]
    session, (got,), (plain,) = run_both(ir, x)
    assert op_types(session) == ["opgraph::conv2d"]
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, model(x).detach().numpy(), **FLOAT32_SUMS)


@pytest.mark.parametrize("kind", ["transposed", "3-D"])
def test_only_2d_convolutions_fold_and_fuse(kind):
    """aten::convolution becomes aten::conv2d (into which a batch norm folds and an activation fuses) only where
    it is a 2-D one: a transposed or 3-D convolution stays as it is, and so do the nodes after it."""
    torch.manual_seed(0)
    if kind == "transposed":
        layers = [nn.ConvTranspose2d(3, 4, 3, stride=2, output_padding=1), nn.BatchNorm2d(4)]
        x = torch.randn(2, 3, 5, 6)
    else:
        layers, x = [nn.Conv3d(3, 4, 3, padding=1), nn.BatchNorm3d(4)], torch.randn(2, 3, 4, 5, 6)
    model = nn.Sequential(*layers, nn.ReLU()).eval()
    with torch.no_grad():
        layers[1].running_mean.copy_(torch.randn(4) * 0.1)
        layers[1].running_var.copy_(torch.rand(4) + 0.5)
    ir = extract_ir(model, (x,), decompose=True)
    session, (got,), (plain,) = run_both(ir, x)
    assert op_types(session) == ["aten::convolution", "aten::_native_batch_norm_legit_no_training", "aten::relu"]
    np.testing.assert_array_equal(got, plain)
    np.testing.assert_allclose(got, model(x).detach().numpy(), **FLOAT32_SUMS)


def graph_json(stats_input):
    """conv -> batch_norm with its statistics a constant or a graph input."""
    constants = [
        {"name": n, "dtype": "float32", "shape": s}
        for n, s in [("w", [2, 1, 1, 1]), ("mean", [2]), ("var", [2])]
        if not (stats_input and n == "var")
    ]
    inputs = [{"name": "x", "dtype": "float32", "shape": [1, 1, 2, 2]}]
    if stats_input:
        inputs.append({"name": "var", "dtype": "float32", "shape": [2]})
    return {
        "name": "g",
        "inputs": inputs,
        "outputs": [{"name": "y"}],
        "constants": constants,
        "nodes": [
            {"name": "conv", "op_type": "aten::conv2d", "inputs": ["x", "w", None], "outputs": ["c"]},
            {
                "name": "bn",
                "op_type": "aten::batch_norm",
                "inputs": ["c", None, None, "mean", "var"],
                "outputs": ["y"],
                "attrs": {
                    "training": {"type": "bool", "value": False},
                    "momentum": {"type": "float", "value": 0.1},
                    "eps": {"type": "float", "value": 1e-5},
                    "cudnn_enabled": {"type": "bool", "value": False},
                },
            },
        ],
    }


@pytest.mark.parametrize("stats_input", [False, True])
def test_batch_norm_folds_only_with_constant_statistics(stats_input):
    weights = {
        "w": np.array([1, -2], np.float32).reshape(2, 1, 1, 1),
        "mean": np.array([0.5, -1], np.float32),
        "var": np.array([4, 0.25], np.float32),
    }
    inputs = [np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)]
    if stats_input:
        inputs.append(weights.pop("var"))
    session = opgraph.Session(opgraph.Graph.from_json(json.dumps(graph_json(stats_input))), weights=weights)
    assert op_types(session) == (["aten::conv2d", "aten::batch_norm"] if stats_input else ["aten::conv2d"])
    x = inputs[0]
    expected = (np.concatenate([x, -2 * x], axis=1) - np.array([0.5, -1]).reshape(1, 2, 1, 1)) / np.sqrt(
        np.array([4, 0.25]).reshape(1, 2, 1, 1) + 1e-5
    )
    np.testing.assert_allclose(session.run(*inputs)[0], expected, rtol=1e-6)


def test_errors_name_the_graph_as_written():
    graph = graph_json(False)
    graph["nodes"][1]["inputs"][0] = "missing"
    weights = {"w": np.ones((2, 1, 1, 1), np.float32), "mean": np.zeros(2, np.float32), "var": np.ones(2, np.float32)}
    with pytest.raises(opgraph.Error, match="'missing'"):
        opgraph.Session(opgraph.Graph.from_json(json.dumps(graph)), weights=weights)
    del weights["var"]
    with pytest.raises(opgraph.Error, match="var"):
        opgraph.Session(opgraph.Graph.from_json(json.dumps(graph_json(False))), weights=weights)


def test_relu6_fuses_and_other_hardtanh_ranges_do_not():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU6(), nn.Conv2d(8, 8, 3), nn.Hardtanh(-1.0, 1.0)).eval()
    x = torch.randn(2, 3, 10, 10) * 4  # well past 6 and -1 .. 1
    session, (got,), (plain,) = run_both(extract_ir(model, (x,)), x)
    convolutions = [node for node in nodes(session) if "conv2d" in node["op_type"]]
    assert [activation(node) for node in convolutions] == ["relu6", "none"]
    assert op_types(session).count("aten::hardtanh") == 1
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, model(x).detach().numpy(), **FLOAT32_SUMS)


class NewGelu(nn.Module):
    """transformers' NewGELUActivation (GPT-2's MLP) between two products,
    and near misses: another cube coefficient, and an intermediate value the
    model also returns."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)

    @staticmethod
    def gelu(x, coefficient=0.044715):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + coefficient * torch.pow(x, 3.0))))

    def forward(self, x):
        h = self.fc(x)
        inner = torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * torch.pow(h, 3.0)))
        return self.gelu(h), self.gelu(h, coefficient=0.05), 0.5 * h * (1.0 + inner), inner


def test_written_out_tanh_gelu_becomes_one_node():
    torch.manual_seed(0)
    model, x = NewGelu().eval(), torch.randn(4, 16) * 3
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    types = op_types(session)
    gelus = [node for node in nodes(session) if node["op_type"] == "aten::gelu"]
    assert len(gelus) == 1 and gelus[0]["attrs"]["approximate"]["value"] == "tanh"
    assert types.count("aten::tanh") == 2  # the other coefficient's and the returned one's
    assert_outputs_agree(got, plain, model, x)


class Conv1DMlp(nn.Module):
    """GPT-2's MLP: transformers' Conv1D layers (addmm with an [in, out]
    weight, its rows viewed back into the input's leading shape) around the
    tanh GELU written out; and a near miss, an addmm whose bias is scaled
    (beta 0.5), which keeps its activation apart."""

    def __init__(self):
        super().__init__()
        self.w_fc, self.b_fc = nn.Parameter(torch.randn(16, 64) * 0.3), nn.Parameter(torch.randn(64))
        self.w_proj, self.b_proj = nn.Parameter(torch.randn(64, 16) * 0.3), nn.Parameter(torch.randn(16))

    def forward(self, x):
        rows = x.view(-1, 16)
        h = NewGelu.gelu(torch.addmm(self.b_fc, rows, self.w_fc).view(*x.shape[:-1], 64))
        scaled = nn.functional.gelu(torch.addmm(self.b_fc, rows, self.w_fc, beta=0.5), approximate="tanh")
        return torch.addmm(self.b_proj, h.view(-1, 64), self.w_proj).view(x.shape), scaled


def test_conv1d_product_applies_the_tanh_gelu_after_it():
    torch.manual_seed(0)
    model, x = Conv1DMlp().eval(), torch.randn(2, 5, 16)
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    gemms = [node for node in nodes(session) if node["op_type"] == "opgraph::gemm"]
    assert [node["attrs"]["activation"]["value"] for node in gemms] == ["gelu_tanh"]
    types = op_types(session)
    assert types.count("aten::addmm") == 2  # the projection, with no activation after it, and the scaled bias's
    assert types.count("aten::gelu") == 1 and "aten::tanh" not in types
    assert_outputs_agree(got, plain, model, x)


@pytest.mark.parametrize("kind", ["bert", "gpt2", "vit"])
def test_attention_reads_heads_where_the_linear_layers_wrote_them(kind):
    model, inputs = getattr(ir_models, kind)(batch=3)
    session, (got,), (plain,) = run_both(extract_ir(model, inputs), *inputs)
    types = op_types(session)
    assert types.count("opgraph::attention_bshd") == 2, types
    assert "aten::scaled_dot_product_attention" not in types
    # ViT's patch embedding keeps its own, flatten(2).transpose(1, 2).
    assert types.count("aten::transpose.int") == (1 if kind == "vit" else 0), types
    assert "aten::cat" not in types or kind == "vit"  # GPT-2's empty key-value cache is dropped
    with torch.no_grad():
        expected = model(*inputs)
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


class AttentionNearMisses(nn.Module):
    """Attention the rewrite leaves alone: a key transposed on other dims,
    and an output read before its transpose; and one it takes, between them."""

    def forward(self, x):
        def heads():  # a transpose of its own for each operand
            return x.view(2, 5, 4, 8).transpose(1, 2)

        attend = nn.functional.scaled_dot_product_attention
        kept = attend(heads(), x.view(2, 4, 5, 8), heads())
        output_read = attend(heads(), heads(), heads())
        taken = attend(heads(), heads(), heads(), is_causal=True)
        return kept.transpose(1, 2), output_read.sum(), output_read.transpose(1, 2), taken.transpose(1, 2)


def test_attention_keeps_its_layout_where_the_pattern_is_not_whole():
    x = torch.randn(2, 5, 32)
    model = AttentionNearMisses().eval()
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    types = op_types(session)
    assert types.count("aten::scaled_dot_product_attention") == 2 and types.count("opgraph::attention_bshd") == 1
    assert_outputs_agree(got, plain, model, x)


class ResidualLinears(nn.Module):
    """Residual connections around linear layers: a transformer's sublayer
    (dropout's copy between the product and the add, the shortcut first or
    second), one whose sum is activated, one whose shortcut is read again
    after the add; and near misses that keep their add: alpha 2, an activated
    product, a shortcut that broadcasts."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(7))
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        a, b, c, d, e, f, g = self.layers
        h = x + self.dropout(a(x))
        h = torch.relu(b(h) + h)
        reread = c(h) + h
        h = reread * h
        kept = [torch.add(d(h), h, alpha=2.0), torch.relu(e(h)) + h, f(h) + g.bias]
        return h, *kept


def test_residual_adds_fold_into_linear_layers():
    torch.manual_seed(0)
    model, x = ResidualLinears().eval(), torch.randn(3, 5, 16)
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    assert [activation(node) for node in linears_given(session, 3)] == ["none", "relu", "none"]
    assert op_types(session).count("aten::add.Tensor") == 3
    assert_outputs_agree(got, plain, model, x)


def test_llama_norms_rotary_embeddings_and_grouped_attention_fuse():
    model, inputs = ir_models.llama(batch=3)
    ir = extract_ir(model, inputs)
    session, (got,), (plain,) = run_both(ir, *inputs)
    types = op_types(session)
    # Two layers: two norms each and the last one; q and k rotated in each.
    assert types.count("aten::rms_norm") == 5 and types.count("opgraph::rotary_embedding") == 4, types
    assert types.count("opgraph::attention_bshd") == 2 and "aten::scaled_dot_product_attention" not in types
    for written_out in ("aten::pow.Tensor_Scalar", "aten::rsqrt", "aten::neg", "aten::silu"):
        assert written_out not in types, written_out
    assert types.count("aten::slice.Tensor") == 1  # the positions'; the rotations' halves are gone
    # repeat_kv's copies of k and v are gone, two per layer; the mask's and the positions' expands stay.
    assert types.count("aten::expand") == op_types(ir.to_session(optimize=False)).count("aten::expand") - 4
    attention = [node for node in nodes(session) if node["op_type"] == "opgraph::attention_bshd"]
    assert all(node["attrs"]["enable_gqa"]["value"] for node in attention)
    gates = [node for node in nodes(session) if activation(node) == "silu"]
    assert len(gates) == 2
    # Each up projection multiplies by its layer's gate as it writes: no mul is left in the MLPs.
    assert [node["inputs"][4] for node in linears_given(session, 4)] == [gate["outputs"][0] for gate in gates]
    products = {node["outputs"][0] for node in nodes(session) if node["op_type"].endswith("::linear")}
    muls = [node for node in nodes(session) if node["op_type"] == "aten::mul.Tensor"]
    assert not any(value in products for node in muls for value in node["inputs"]), muls
    norms = [node for node in nodes(session) if node["op_type"] == "aten::rms_norm"]
    assert all(node["inputs"][1] is not None for node in norms)  # each took its weight
    with torch.no_grad():
        expected = model(*inputs)
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


class RmsNormNearMisses(nn.Module):
    """RMS norms written out (and one as torch.nn.functional.rms_norm), and near
    misses the rewrite leaves alone: a mean over another dim, a cube, a square
    of another tensor, and a weight of another shape (normalized, its weight
    kept as a mul)."""

    def __init__(self):
        super().__init__()
        self.weight, self.other_weight = nn.Parameter(torch.randn(16)), nn.Parameter(torch.randn(5, 1))

    @staticmethod
    def normalize(x, squared, dim=-1, eps=1e-6):
        return x * torch.rsqrt(squared.mean(dim, keepdim=True) + eps)

    def forward(self, x, y):
        taken = self.weight * self.normalize(x, x.pow(2))
        decomposed = nn.functional.rms_norm(y, [16], self.weight, eps=1e-5)  # aten::rms_norm as extracted
        other_dim = self.normalize(x, x.pow(2), dim=1)
        cube = self.normalize(x, x.pow(3))
        other_tensor = self.normalize(x, y.pow(2))
        other_weight = self.normalize(y, y.pow(2)) * self.other_weight
        return taken, decomposed, other_dim, cube, other_tensor, other_weight


def test_rms_norms_fuse_where_the_whole_pattern_is_there():
    torch.manual_seed(0)
    model, x, y = RmsNormNearMisses().eval(), torch.randn(3, 5, 16), torch.randn(3, 5, 16)
    session, got, plain = run_both(extract_ir(model, (x, y)), x, y)
    norms = [node for node in nodes(session) if node["op_type"] == "aten::rms_norm"]
    assert [node["inputs"][1] is not None for node in norms] == [True, True, False], norms
    assert op_types(session).count("aten::rsqrt") == 3
    assert_outputs_agree(got, plain, model, x, y)


class RotaryNearMisses(nn.Module):
    """The rotary embedding written out, either way round, and near misses:
    halves rotated the other way, and a rotated half read elsewhere."""

    @staticmethod
    def halves(x):
        return x[..., :4], x[..., 4:]

    def forward(self, x, cos, sin):
        x1, x2 = self.halves(x)
        taken = x * cos + torch.cat((-x2, x1), dim=-1) * sin
        x1, x2 = self.halves(x)
        swapped = sin * torch.cat((-x2, x1), dim=-1) + cos * x
        x1, x2 = self.halves(x)
        other_way = x * cos + torch.cat((x2, -x1), dim=-1) * sin
        x1, x2 = self.halves(x)
        minus = -x2
        read_elsewhere = x * cos + torch.cat((minus, x1), dim=-1) * sin
        return taken, swapped, other_way, read_elsewhere, minus


def test_rotary_embeddings_fuse_where_the_whole_pattern_is_there():
    torch.manual_seed(0)
    x, cos, sin = torch.randn(2, 3, 5, 8), torch.randn(2, 1, 5, 8), torch.randn(2, 1, 5, 8)
    model = RotaryNearMisses().eval()
    session, got, plain = run_both(extract_ir(model, (x, cos, sin)), x, cos, sin)
    assert op_types(session).count("opgraph::rotary_embedding") == 2
    assert op_types(session).count("aten::cat") == 2
    assert_outputs_agree(got, plain, model, x, cos, sin)


class RepeatedKeyValueHeads(nn.Module):
    """Grouped-query attention through transformers' repeat_kv, with no
    transposes around it: the attention stays aten, and reads k and v once."""

    @staticmethod
    def repeat_kv(x, times):
        batch, heads, sequence, features = x.shape
        return x[:, :, None].expand(batch, heads, times, sequence, features).reshape(batch, -1, sequence, features)

    def forward(self, q, k, v):
        grouped = nn.functional.scaled_dot_product_attention(q, self.repeat_kv(k, 3), self.repeat_kv(v, 3))
        mixed = nn.functional.scaled_dot_product_attention(q, self.repeat_kv(k, 3), v.repeat(1, 3, 1, 1))
        return grouped, mixed


def test_repeated_key_value_heads_are_read_once():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 6, 5, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)
    model = RepeatedKeyValueHeads().eval()
    session, got, plain = run_both(extract_ir(model, (q, k, v)), q, k, v)
    attention = [node for node in nodes(session) if node["op_type"] == "aten::scaled_dot_product_attention"]
    assert [node["attrs"].get("enable_gqa", {}).get("value", False) for node in attention] == [True, False]
    assert op_types(session).count("aten::expand") == 1  # the mixed attention's key
    assert_outputs_agree(got, plain, model, q, k, v)


class AudioFrontEnd(nn.Module):
    """Whisper's encoder front end: two 1-D convolutions, each followed by a
    GELU, the second with stride 2, then frames first. A third convolution's
    output is read as it is and returned; a convolution by a weight given as
    an input stays 1-D."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(6, 16, 3, padding=1), nn.Conv1d(16, 16, 3, stride=2, padding=1)
        self.conv3 = nn.Conv1d(6, 4, 1, bias=False)

    def forward(self, x, weight):
        frames = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(x)))).permute(0, 2, 1)
        plain = self.conv3(x)
        return frames, plain.sum(-1), plain, nn.functional.conv1d(x, weight)


def test_1d_convolutions_run_as_2d_ones():
    torch.manual_seed(0)
    model, x, weight = AudioFrontEnd().eval(), torch.randn(2, 6, 21), torch.randn(5, 6, 3)
    session, got, plain = run_both(extract_ir(model, (x, weight)), x, weight)
    types = op_types(session)
    assert types.count("aten::conv1d") == 1 and "aten::gelu" not in types, types
    convolutions = [node for node in nodes(session) if node["op_type"].startswith("opgraph::conv2d")]
    assert [activation(node) for node in convolutions] == ["gelu", "gelu"]
    if BLOCKED:  # the two chained convolutions keep their activations in blocks between them
        assert [node["op_type"] for node in convolutions] == ["opgraph::conv2d_nchwc"] * 2
    assert types.count("aten::conv2d") == 1  # the lone one, with no activation after it
    assert_outputs_agree(got, plain, model, x, weight)


class GatedLinears(nn.Module):
    """SwiGLU MLPs: the up projection after the gate (Llama's order), and
    before it (the gate's product then multiplies by it); near misses: a
    gate that broadcasts, and a product read elsewhere."""

    def __init__(self):
        super().__init__()
        self.gate, self.up, self.other = nn.Linear(16, 24), nn.Linear(16, 24, bias=False), nn.Linear(16, 24)
        self.scale = nn.Parameter(torch.randn(24))

    def forward(self, x):
        llama_order = nn.functional.silu(self.gate(x)) * self.up(x)
        up = self.up(x)
        up_first = nn.functional.silu(self.gate(x)) * up
        broadcast = self.other(x) * self.scale
        read_elsewhere = self.other(x)
        return llama_order, up_first, broadcast, read_elsewhere * llama_order, read_elsewhere


def test_gates_multiply_linear_layers_as_they_write():
    torch.manual_seed(0)
    model, x = GatedLinears().eval(), torch.randn(3, 5, 16)
    session, got, plain = run_both(extract_ir(model, (x,)), x)
    assert [activation(node) for node in linears_given(session, 4)] == ["none", "silu"]
    assert op_types(session).count("aten::mul.Tensor") == 2  # the broadcast scale's, and the read product's
    assert_outputs_agree(got, plain, model, x)


@pytest.mark.parametrize(
    "kind, norms",
    [
        ("Qwen2", 5),
        ("Mistral", 5),
        ("Phi3", 5),  # its q, k and v are slices of one product; it rotates all of q's features
        ("Gemma", 5),  # its norms multiply by 1 + weight
        ("Qwen3", 9),  # and q and k normalized per head
    ],
)
def test_decoder_families_fuse_like_llama(kind, norms):
    import transformers

    torch.manual_seed(0)
    config = ir_models._transformers_config(
        f"{kind}Config", vocab_size=100, num_key_value_heads=2, head_dim=8, pad_token_id=0
    )
    model = ir_models.LastHiddenState(getattr(transformers, f"{kind}Model")(config)).eval()
    x = torch.randint(0, 100, (2, 9))
    session, (got,), (plain,) = run_both(extract_ir(model, (x,)), x)
    types = op_types(session)
    assert types.count("aten::rms_norm") == norms and types.count("opgraph::rotary_embedding") == 4, types
    assert types.count("opgraph::attention_bshd") == 2 and "aten::scaled_dot_product_attention" not in types
    assert "aten::neg" not in types and "aten::rsqrt" not in types
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, plain, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)
