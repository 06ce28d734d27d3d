"""extract_ir hands the runtime a functional graph: in-place ops and grad-mode
regions gone, every op without a kernel decomposed (and only those), sizes
from symbolic dimensions spelled without them, control flow refused with the
model's line; nodes keep the model line behind them through .opg files; and
verify(per_node=True) finds the first node where the Session goes wrong."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.cli import executable
from opgraph.ir import IRExecutor, decompose, extract_ir, load, verify
from opgraph.ir import registry as ir_registry
from opgraph.ir.names import runtime_name


class InPlaceAndNoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("scale", torch.full((8,), 0.5))

    def forward(self, x):
        y = self.fc(x)
        with torch.no_grad():  # how rotary embeddings are written: a set_grad_enabled region in the export
            angles = torch.arange(8, dtype=torch.float32) * 0.1
        y.add_(angles).mul_(self.scale)
        y = torch.relu_(y)
        with torch.autocast("cpu", enabled=False):
            y = y * 2
        return y


def op_types(ir):
    return {node.op_type for node in ir.nodes}


def test_in_place_ops_and_grad_mode_regions_become_a_functional_graph():
    model, x = InPlaceAndNoGrad().eval(), torch.randn(3, 8)
    ir = extract_ir(model, (x,))
    assert not [op for op in op_types(ir) if op.partition("::")[2].split(".")[0].endswith("_")], op_types(ir)
    (actual,) = ir.to_session().run(x)
    np.testing.assert_allclose(actual, model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_ops_with_a_kernel_are_kept_whole_and_only_those_are():
    table = decompose.decomposition_table()
    registered = set(opgraph.list_ops())
    for op in torch.export.default_decompositions().keys():
        has_kernel = runtime_name(str(op)) in registered
        assert (op in table) != has_kernel, f"{op}: kernel {has_kernel}, decomposed {op in table}"
    model, x = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.GELU()).eval(), torch.randn(2, 8)
    assert {"aten::linear", "aten::layer_norm", "aten::gelu"} <= op_types(extract_ir(model, (x,)))


def test_decompose_chooses_the_table():
    model, x = nn.Sequential(nn.Linear(8, 8)).eval(), torch.randn(2, 8)
    assert "aten::linear" in op_types(extract_ir(model, (x,), decompose=False))
    core = op_types(extract_ir(model, (x,), decompose=True))
    assert "aten::linear" not in core and "aten::addmm" in core
    with pytest.raises(
        opgraph.Error,
        match=r"decompose: expected None, 'auto', True, 'core', False, 'none' or a "
        r"decomposition table \(dict\), got 'all'",
    ):
        extract_ir(model, (x,), decompose="all")


class Branching(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t * 2, lambda t: t - 1, (x,))


def test_control_flow_is_refused_naming_the_op_the_node_and_the_model_line():
    with pytest.raises(
        opgraph.Error,
        match=r"Branching: node 'cond' calls the higher-order op cond, which the IR "
        r"cannot hold.*model line: .*test_extraction.py:\d+ return torch.cond",
    ):
        extract_ir(Branching(), (torch.randn(4),))


def test_nodes_keep_the_model_line_through_an_opg_file(tmp_path):
    model, x = InPlaceAndNoGrad().eval(), torch.randn(3, 8)
    ir = extract_ir(model, (x,))
    (linear,) = [node for node in ir.nodes if node.op_type == "aten::linear"]
    assert linear.source.endswith("y = self.fc(x)") and "test_extraction.py:" in linear.source
    ir.save(tmp_path / "model.opg")
    assert [n.source for n in load(tmp_path / "model.opg").nodes] == [n.source for n in ir.nodes]
    listing = subprocess.run(
        [str(executable()), "inspect", str(tmp_path / "model.opg")], capture_output=True, text=True, check=True
    ).stdout
    assert "test_extraction.py:" in listing and "y = self.fc(x)" in listing


class Heads(nn.Module):
    def forward(self, x):
        batch = x.shape[0]
        return x.view(batch, 4, 2).transpose(1, 2).reshape(batch, 8)


class Sizes(nn.Module):
    """Sizes computed from the batch, as attention masks and padding compute them."""

    def forward(self, x):
        batch = x.shape[0]
        mask = torch.ones(batch, 8).expand(batch * 2 // 2, 8)
        return x * mask + torch.arange(batch * 8, dtype=torch.float32).view(batch, 8) % (batch + 1)


@pytest.mark.parametrize("model", [Heads(), Sizes()], ids=["view", "arithmetic"])
def test_sizes_computed_from_a_symbolic_batch_follow_each_run(tmp_path, model):
    ir = extract_ir(model, (torch.randn(3, 8),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert "symint" in ir.to_graph().to_json()
    ir.save(tmp_path / "model.opg")
    session = opgraph.Session(str(tmp_path / "model.opg"))
    executor = IRExecutor(load(tmp_path / "model.opg"))
    for batch in (1, 2, 5):
        x = torch.randn(batch, 8)
        np.testing.assert_allclose(session.run(x)[0], model(x).numpy(), rtol=1e-6)
        np.testing.assert_allclose(executor.run(x)[0], model(x).numpy(), rtol=1e-6)


def test_the_session_names_aten_ops_it_has_no_kernel_for():
    ir = extract_ir(nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval(), (torch.randn(2, 4),))
    graph = opgraph.Graph.from_json(ir.to_graph().to_json().replace("aten::relu", "aten::no_such_op"))
    with pytest.raises(
        opgraph.Error,
        match=r"missing ops: \[1\] aten::no_such_op \(node relu\); opgraph has no "
        r"kernel for these ATen ops: extract the model again",
    ):
        opgraph.Session(graph, weights={k: v.detach().numpy() for k, v in ir.weights.items()})


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(torch.sigmoid(self.fc1(x)) * x)


def test_per_node_verify_names_the_first_node_that_diverges(monkeypatch):
    model, x = Gate().eval(), torch.randn(4, 6)
    clean = verify(model, (x,), per_node=True)
    assert clean.ok and clean.first_divergence is None, str(clean)
    # The Session and PyTorch disagree from the sigmoid on: make PyTorch's sigmoid the wrong one.
    monkeypatch.setitem(
        ir_registry._EXECUTION_REGISTRY, "aten::sigmoid", lambda inputs, attrs: [torch.sigmoid(inputs[0]) + 0.01]
    )
    report = verify(model, (x,), per_node=True)
    divergence = report.first_divergence
    assert not report.ok and divergence.node == "sigmoid" and divergence.op_type == "aten::sigmoid"
    assert divergence.inputs == ["linear: float32[4, 6]"]
    assert 0.009 < divergence.max_abs_error < 0.011
    assert "torch.sigmoid(self.fc1(x))" in divergence.source
    assert "first divergent node 'sigmoid'" in str(report)


def test_the_verify_command_runs_a_saved_model_node_by_node(tmp_path):
    model, x = Gate().eval(), torch.randn(4, 6)
    extract_ir(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},)).save(tmp_path / "gate.opg")
    command = [sys.executable, "-m", "opgraph.ir", "verify", str(tmp_path / "gate.opg")]
    missing = subprocess.run(command, capture_output=True, text=True)
    assert missing.returncode == 2 and "give its size with --dim s0=N" in missing.stderr
    ok = subprocess.run(command + ["--dim", "s0=3"], capture_output=True, text=True)
    assert ok.returncode == 0 and "every node's output on the Session matches PyTorch" in ok.stdout, ok.stderr


class MixedDtypes(nn.Module):
    """Operands of two dtypes, which ATen promotes (BLOOM's alibi slopes, position masks)."""

    def forward(self, x):
        powers = torch.arange(1, 9, dtype=torch.int32)
        return torch.pow(x.abs() + 1, powers) * (torch.arange(8) < x)


def test_operands_of_two_dtypes_are_converted_as_aten_promotes_them():
    model, x = MixedDtypes(), torch.randn(3, 8)
    ir = extract_ir(model, (x,))
    conversions = [node for node in ir.nodes if node.op_type == "aten::_to_copy"]
    assert {node.attrs["dtype"] for node in conversions} == {"float32"}
    np.testing.assert_allclose(ir.to_session().run(x)[0], model(x).numpy(), rtol=1e-5)


def test_a_decoder_returning_its_cache_is_refused_saying_use_cache_false():
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=32,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    with pytest.raises(
        opgraph.Error,
        match=r"cannot export LlamaForCausalLM \(what usually helps: the model "
        r"returns a key/value cache object .*use_cache=False",
    ):
        extract_ir(model, (torch.randint(0, 64, (1, 5)),))


class ScaledByBatch(nn.Module):
    def forward(self, x):
        return x * (x.shape[0] / 2)


class AtLeastFour(nn.Module):
    def forward(self, x):
        return x.new_zeros(max(x.shape[0], 4), 3)


class FilledWithAFraction(nn.Module):
    def forward(self, x):
        return torch.full((2,), x.shape[0] / 3)


@pytest.mark.parametrize(
    "model, message",
    [
        (
            ScaledByBatch(),
            r"ScaledByBatch: node 'mul' \(aten.mul.Tensor\) gives the tensor argument 'other' a number "
            r"computed from symbolic sizes \(IntTrueDiv\(s\d+, 2\)\), which the graph cannot hold",
        ),
        (
            AtLeastFour(),
            r"AtLeastFour: node 'new_zeros' \(aten.new_zeros.default\) gives argument 'size' the size "
            r"Max\(4, s0\), which uses Max; the graph's size expressions hold \+ - \* // % only",
        ),
        (
            FilledWithAFraction(),
            r"FilledWithAFraction: node 'full' \(aten.full.default\) gives argument 'fill_value' "
            r"the value IntTrueDiv\(s\d+, 3\), computed from symbolic sizes; the graph holds integer "
            r"sizes only",
        ),
    ],
    ids=["tensor-argument", "max", "float"],
)
def test_a_size_the_graph_cannot_spell_is_an_error_naming_the_node_and_line(model, message):
    with pytest.raises(opgraph.Error, match=message + r".*; model line: .*test_extraction.py:\d+"):
        extract_ir(model, (torch.randn(5, 3),), dynamic_shapes=({0: torch.export.Dim("batch", min=2)},))


def test_an_attribute_that_is_not_a_size_expression_is_an_error():
    from opgraph import arguments
    from opgraph.ir import symbolic

    (size,) = [a for a in arguments.of_ir_op("aten.view.default") if a.name == "size"]
    assert symbolic.evaluate(size, ["(s0)*(2)", -1], {"s0": 3}) == [6, -1]
    with pytest.raises(opgraph.Error, match=r"argument 'size': 's0; import os' is not a size expression"):
        symbolic.evaluate(size, ["s0; import os"], {"s0": 3})


def test_the_verify_command_names_a_malformed_option(tmp_path):
    model, x = Gate().eval(), torch.randn(4, 6)
    extract_ir(model, (x,)).save(tmp_path / "gate.opg")
    result = subprocess.run(
        [sys.executable, "-m", "opgraph.ir", "verify", str(tmp_path / "gate.opg"), "--dim", "s0"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "--dim 's0': expected NAME=VALUE" in result.stderr


class BranchesOnAValue(nn.Module):
    def forward(self, x):
        return x * 2 if x.sum() > 0 else x


class FixesItsBatch(nn.Module):
    def forward(self, x):
        return x.view(4, -1)


class ReturnsAnObject(nn.Module):
    def forward(self, x):
        return Gate  # a class, which torch.export cannot flatten into tensors


@pytest.mark.parametrize(
    "model, shape, dynamic, hint",
    [
        (
            BranchesOnAValue(),
            (3,),
            None,
            r"the model branches or sizes something on a tensor's value: compute both "
            r"branches and select with torch.where",
        ),
        (
            FixesItsBatch(),
            (4, 3),
            ({0: torch.export.Dim("batch")},),
            r"a dimension declared dynamic is fixed by the model .*: declare it torch.export.Dim.AUTO",
        ),
        (
            ReturnsAnObject(),
            (2,),
            None,
            r"the model returns an object torch.export cannot flatten: wrap it in a module "
            r"that returns tensors only",
        ),
    ],
    ids=["data-dependent", "specialized", "object"],
)
def test_a_model_torch_export_refuses_is_named_with_what_usually_helps(model, shape, dynamic, hint):
    with pytest.raises(opgraph.Error, match=rf"cannot export {type(model).__name__} \(what usually helps: {hint}"):
        extract_ir(model, (torch.randn(*shape),), dynamic_shapes=dynamic)
