"""opgraph.ir: the runtime's graph that extraction builds, the registries,
.opg round trips and the errors of each step."""

import json

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph import arguments, ir
from opgraph.ir import IR, IRExecutor, OpNode, TensorMeta, attributes, registry
from opgraph.ir.ops import get_conversion_fn, get_execution_fn, register_executor, register_op
from opgraph.ir.packages import packages_of


@pytest.fixture
def clean_registries():
    """Registrations a test makes are removed after it."""
    conversions, executions = dict(registry._CONVERSION_REGISTRY), dict(registry._EXECUTION_REGISTRY)
    yield
    registry._CONVERSION_REGISTRY.clear()
    registry._CONVERSION_REGISTRY.update(conversions)
    registry._EXECUTION_REGISTRY.clear()
    registry._EXECUTION_REGISTRY.update(executions)


class Shapes(nn.Module):
    """Tensor[] arguments, multi-output ops read through getitem, a Python number where the schema
    says Tensor, a dtype and a device attribute."""

    def forward(self, x):
        a, b = torch.split(x, 2, dim=1)
        largest, index = torch.max(x, dim=1)
        return torch.cat([b, a], 1), largest, index, (x + 1.5).to(torch.float64), torch.ones(3, device=x.device)


def nodes_by_op(model_ir):
    return {node.op_type: node for node in model_ir.nodes}


def values_of(model_ir, names):
    return [model_ir.values[name] for name in names]


def graph_document(model_ir):
    """The runtime graph of ``model_ir`` as its JSON document, where every attribute says its type."""
    return json.loads(model_ir.to_graph().to_json())


def graph_nodes(model_ir):
    return {node["name"]: node for node in graph_document(model_ir)["nodes"]}


@pytest.mark.parametrize(
    "op_type, runtime",
    [
        ("aten.conv2d.default", "aten::conv2d"),
        ("aten.add.Tensor", "aten::add.Tensor"),
        ("custom.fused_gate", "custom::fused_gate"),
    ],
)
def test_torch_op_names_map_to_the_graph(op_type, runtime):
    assert ir.runtime_name(op_type) == runtime
    assert ir.runtime_name(runtime) == runtime
    assert ir.runtime_name(torch.ops.aten.conv2d.default) == "aten::conv2d"


def test_a_malformed_op_name_is_an_error():
    with pytest.raises(opgraph.Error, match="'conv2d' is not of the form namespace.name"):
        ir.runtime_name("conv2d")
    with pytest.raises(opgraph.Error, match="'aten::' is not of the form .*namespace::name"):
        ir.runtime_name("aten::")


def test_default_conversion_fills_every_attribute_from_the_schema():
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU()).eval()
    model_ir = ir.extract_ir(model, (torch.randn(1, 3, 8, 8),))
    conv = nodes_by_op(model_ir)["aten::conv2d"]
    # the FX node gives stride and padding; dilation and groups are the schema's defaults
    assert conv.attrs == {"stride": [1, 1], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
    # one input per tensor argument; weights keep the state_dict's names
    assert conv.inputs == [opgraph.NodeInput.value(name) for name in ("input", "0.weight", "0.bias")]
    assert values_of(model_ir, conv.outputs) == [TensorMeta("conv2d", [1, 4, 8, 8], "float32")]
    assert sorted(model_ir.weights) == ["0.bias", "0.weight"]
    assert torch.equal(model_ir.weights["0.weight"], model[0].weight)
    assert [m.name for m in model_ir.outputs] == ["relu"]


def test_tensor_lists_multiple_outputs_numbers_and_dtypes_in_the_ir():
    model_ir = ir.extract_ir(Shapes(), (torch.randn(2, 4),))
    nodes = nodes_by_op(model_ir)
    split, largest, cat = nodes["aten::split.Tensor"], nodes["aten::max.dim"], nodes["aten::cat"]
    assert split.outputs == ["getitem", "getitem_1"]  # named after the getitem nodes
    assert [m.dtype for m in values_of(model_ir, largest.outputs)] == ["float32", "int64"]
    assert cat.inputs == [opgraph.NodeInput.list(["getitem_1", "getitem"])]
    add = nodes["aten::add.Tensor"]
    assert values_of(model_ir, add.inputs[1].values) == [TensorMeta("add_other", [], "float32")]  # 1.5: 0-d
    assert model_ir.weights["add_other"].item() == 1.5
    assert nodes["aten::_to_copy"].attrs["dtype"] == "float64"  # the functional form of .to()
    assert nodes["aten::ones"].attrs["device"] == "cpu"


def test_lowering_gives_the_runtime_inputs_lists_nulls_and_typed_attributes():
    model_ir = ir.extract_ir(Shapes(), (torch.randn(2, 4),))
    nodes = graph_nodes(model_ir)
    assert nodes["cat"]["op_type"] == "aten::cat"
    assert nodes["cat"]["inputs"] == [["getitem_1", "getitem"]]
    assert nodes["max_1"]["outputs"] == ["getitem_2", "getitem_3"]
    assert nodes["_to_copy"]["attrs"]["dtype"] == {"type": "dtype", "value": "float64"}
    assert nodes["_to_copy"]["attrs"]["memory_format"] == {"type": "none"}
    assert nodes["ones"]["attrs"]["device"] == {"type": "str", "value": "cpu"}
    assert nodes["add"]["attrs"]["alpha"] == {"type": "int", "value": 1}
    linear_ir = ir.extract_ir(nn.Linear(4, 3, bias=False).eval(), (torch.randn(2, 4),))
    (linear,) = graph_nodes(linear_ir).values()
    assert linear["inputs"] == ["input", "weight", None]  # Tensor? bias absent


def test_a_list_with_an_absent_tensor_keeps_a_null_and_runs_on_every_path(tmp_path):
    class IndexColumns(nn.Module):
        def forward(self, x, columns):
            return x[:, columns]

    x, columns = torch.randn(3, 5), torch.tensor([4, 0])
    model_ir = ir.extract_ir(IndexColumns(), (x, columns))
    (index,) = graph_nodes(model_ir).values()
    assert index["inputs"] == ["x", [None, "columns"]]
    assert torch.equal(IRExecutor(model_ir).run(x, columns)[0], x[:, columns])
    model_ir.save(tmp_path / "index.opg")
    (result,) = opgraph.Session(tmp_path / "index.opg").run(x.numpy(), columns.numpy())
    np.testing.assert_array_equal(np.asarray(result), x[:, columns].numpy())


def test_the_ir_executor_runs_every_op_through_the_aten_fallback():
    x = torch.randn(2, 4)
    expected = Shapes()(x)
    actual = IRExecutor(ir.extract_ir(Shapes(), (x,))).run(x)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and torch.equal(a, e)


def test_symbolic_batch_becomes_a_graph_dimension():
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU()).eval()
    model_ir = ir.extract_ir(model, (torch.randn(3, 8),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert model_ir.inputs == [TensorMeta("input", ["s0", 8], "float32")]
    assert model_ir.outputs[0].shape == ("s0", 4)
    assert model_ir.to_graph().inputs[0].shape == ("s0", 8)


def test_register_op_replaces_the_default_conversion(clean_registries):
    @register_op("aten.relu.default")
    def relu_as_sigmoid(node_info):
        return OpNode(node_info.name, "aten.sigmoid.default", node_info.input_metas, node_info.output_metas, {})

    assert get_conversion_fn("aten.relu") is relu_as_sigmoid
    x = torch.randn(5)
    model_ir = ir.extract_ir(nn.ReLU(), (x,))
    assert [n.op_type for n in model_ir.nodes] == ["aten::sigmoid"]
    assert torch.equal(IRExecutor(model_ir).run(x)[0], torch.sigmoid(x))


def test_a_conversion_function_may_give_one_input_per_tensor_argument(clean_registries):
    class Joined(nn.Module):
        def forward(self, x, y):
            return torch.cat([x, y])

    @register_op("aten.cat.default")
    def swapped(node_info):
        (tensors,) = node_info.tensor_inputs
        assert node_info.input_metas == tensors  # the same values, flat
        return OpNode(node_info.name, "aten::cat", [tensors[::-1]], node_info.output_metas, node_info.attrs)

    x, y = torch.zeros(1, 2), torch.ones(1, 2)
    model_ir = ir.extract_ir(Joined(), (x, y))
    assert [node.inputs for node in model_ir.nodes] == [[opgraph.NodeInput.list(["y", "x"])]]
    assert torch.equal(IRExecutor(model_ir).run(x, y)[0], torch.cat([y, x]))


def test_a_conversion_function_giving_inputs_its_op_does_not_take_is_named(clean_registries):
    @register_op("aten.relu")
    def twice(node_info):
        return OpNode(node_info.name, "aten.relu", node_info.input_metas * 2, node_info.output_metas, {})

    with pytest.raises(opgraph.Error, match=r"ReLU: .*node 'relu' \(aten::relu\): inputs: expected 1 entries"):
        ir.extract_ir(nn.ReLU(), (torch.randn(3),))

    @register_op("aten.relu")
    def nothing(node_info):
        return None

    with pytest.raises(opgraph.Error, match="conversion function of aten.relu.default returned NoneType"):
        ir.extract_ir(nn.ReLU(), (torch.randn(3),))


def test_register_executor_runs_instead_of_the_fallback(clean_registries):
    @register_executor("aten.relu")
    def doubled_relu(inputs, attrs):
        return [torch.relu(inputs[0]) * 2]

    assert get_execution_fn("aten.relu.default") is doubled_relu
    assert get_execution_fn("aten.gelu.default") is None and get_conversion_fn("aten.gelu.default") is None
    x = torch.randn(5)
    assert torch.equal(IRExecutor(ir.extract_ir(nn.ReLU(), (x,))).run(x)[0], torch.relu(x) * 2)


def test_a_registration_key_must_be_an_op_type():
    with pytest.raises(TypeError, match="register_executor: expected an op type"):
        register_executor(None)


def test_an_op_with_no_executor_is_an_error_saying_how_to_register_one():
    graph = opgraph.Graph("M")
    graph.add_input("x", "float32", [2])
    graph.add_node("mylib::odd", ["x"], ["y"], name="odd")
    graph.add_output("y")
    program = IR(graph, {}, {"x": graph.inputs[0], "y": TensorMeta("y", [2], "float32")})
    with pytest.raises(opgraph.Error, match=r"node 'odd'.*'mylib::odd'.*@register_executor\('mylib::odd'\)"):
        IRExecutor(program).run(torch.zeros(2))
    with pytest.raises(opgraph.Error, match="takes 1 inputs"):
        IRExecutor(program).run()


def test_an_argument_type_the_ir_cannot_hold_names_the_op_and_argument():
    generator = next(a for a in arguments.of_ir_op("aten.bernoulli.p") if a.name == "generator")
    assert attributes.to_ir("aten.bernoulli.p", generator, None) is None  # absent is fine
    with pytest.raises(opgraph.Error, match="aten.bernoulli.p: argument 'generator' of type Optional.Generator"):
        attributes.to_ir("aten.bernoulli.p", generator, torch.Generator())


def test_a_model_torch_export_cannot_export_is_named():
    class DataDependent(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    with pytest.raises(opgraph.Error, match="torch.export cannot export DataDependent"):
        ir.extract_ir(DataDependent(), (torch.randn(3),))


def test_a_size_computed_from_a_symbolic_dimension_follows_the_batch():
    class ViewByBatch(nn.Module):
        def forward(self, x):
            return x.view(x.size(0), -1)

    model_ir = ir.extract_ir(ViewByBatch(), (torch.randn(3, 4, 5),), dynamic_shapes=({0: torch.export.Dim("batch")},))
    assert graph_nodes(model_ir)["view"]["attrs"]["size"] == {"type": "symints", "value": ["s0", -1]}
    (actual,) = model_ir.to_session().run(torch.ones(7, 4, 5))
    assert actual.shape == (7, 20)


@pytest.fixture(scope="module")
def ops_without_kernels():
    """Two torch ops opgraph has no kernel for."""
    library = torch.library.Library("irtest", "DEF")
    for name in ("first", "second"):
        library.define(f"{name}(Tensor x) -> Tensor")
        library.impl(name, lambda x: x + 1, "CompositeExplicitAutograd")
        library.impl(name, lambda x: torch.empty_like(x), "Meta")
    yield
    library._destroy()


class TwoMissingOps(nn.Module):
    def forward(self, x):
        return torch.ops.irtest.second(torch.relu(torch.ops.irtest.first(x)))


def test_a_session_lists_every_missing_op_at_load(ops_without_kernels):
    model_ir = ir.extract_ir(TwoMissingOps(), (torch.randn(3),))
    with pytest.raises(opgraph.Error, match=r"missing ops: \[0\] irtest::first .*\[2\] irtest::second"):
        model_ir.to_session()


def test_verify_says_which_path_failed(ops_without_kernels, clean_registries):
    x = torch.randn(3)
    report = ir.verify(TwoMissingOps(), (x,))
    assert not report.ok and report["IRExecutor"].ok and report["IRExecutor"].errors == [0.0]
    assert "missing ops" in report["Session"].failure and "Session" in str(report)

    @register_executor("irtest.first")
    def wrong(inputs, attrs):
        return [inputs[0] + 2]

    report = ir.verify(TwoMissingOps(), (x,))
    assert "output 0: max abs error 1 >" in report["IRExecutor"].failure
    assert ir.verify(nn.ReLU(), (x,)).ok


def test_save_and_load_round_trip(tmp_path):
    from safetensors.numpy import load_file

    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(16, 2)).eval()
    x = torch.randn(2, 3, 4, 4)
    model_ir = ir.extract_ir(model, (x,))
    model_ir.save(tmp_path / "m.opg")
    assert set(load_file(tmp_path / "m.opg")) == set(model_ir.weights)  # any safetensors reader reads the weights
    loaded = ir.load(tmp_path / "m.opg")
    assert [(n.name, n.op_type) for n in loaded.nodes] == [(n.name, n.op_type) for n in model_ir.nodes]
    assert [n.attrs for n in loaded.nodes] == [n.attrs for n in model_ir.nodes]
    assert loaded.inputs == model_ir.inputs and loaded.outputs == model_ir.outputs
    expected = model(x)
    torch.testing.assert_close(IRExecutor(loaded).run(x)[0], expected, rtol=1e-5, atol=1e-5)
    (y,) = opgraph.Session(str(tmp_path / "m.opg")).run(x)
    np.testing.assert_allclose(y, expected.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_loading_an_opg_whose_package_is_missing_names_the_package(tmp_path):
    model_ir = ir.extract_ir(nn.ReLU(), (torch.randn(3),))
    graph = model_ir.to_graph()
    graph.packages = ["no_such_package"]
    opgraph.save_opg(tmp_path / "m.opg", graph, {})
    with pytest.raises(opgraph.Error, match="op package 'no_such_package' not found"):
        ir.load(tmp_path / "m.opg")
    with pytest.raises(opgraph.Error, match="op package 'no_such_package' not found"):
        opgraph.Session(str(tmp_path / "m.opg"))


def test_decompose_gives_core_aten_ops_that_run_on_every_path():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(16, 2)).eval()
    x = torch.randn(2, 3, 4, 4)
    model_ir = ir.extract_ir(model, (x,), decompose=True)
    op_types = {node.op_type for node in model_ir.nodes}
    assert "aten::convolution" in op_types and "aten::linear" not in op_types
    report = ir.verify(model, (x,), ir=model_ir)
    assert report.ok, str(report)


def test_an_ir_of_package_ops_runs_on_the_session_and_round_trips(test_ops, tmp_path, clean_registries):
    """Package ops by their opgraph schema: a multi-output op, an absent Tensor?, the package named."""
    graph = opgraph.Graph("PackageOps")
    graph.add_input("x", "float32", [2, 3])
    graph.add_node("test_ops::split_sign", ["x"], ["pos", "neg"], name="split")
    graph.add_node("test_ops::add_bias", ["neg", None], ["y"], name="bias")
    graph.add_output("pos")
    graph.add_output("y")
    graph.packages = packages_of(graph)
    program = IR(graph, {})
    register_executor("test_ops.split_sign")(lambda inputs, attrs: [inputs[0].clamp(min=0), inputs[0].clamp(max=0)])
    register_executor("test_ops.add_bias")(lambda inputs, attrs: [inputs[0] + 0])

    document = graph_document(program)
    assert document["packages"] == ["opgraph_test_ops"]
    assert [node["inputs"] for node in document["nodes"]] == [["x"], ["neg", None]]
    assert document["nodes"][0]["outputs"] == ["pos", "neg"]
    value = torch.randn(2, 3)
    expected = IRExecutor(program).run(value)
    actual = program.to_session(package_paths=[test_ops.parent]).run(value)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e.numpy())

    program.save(tmp_path / "package_ops.opg")
    loaded = ir.load(tmp_path / "package_ops.opg", package_paths=[test_ops.parent])
    assert [n.op_type for n in loaded.nodes] == ["test_ops::split_sign", "test_ops::add_bias"]
    assert loaded.nodes[1].inputs == [opgraph.NodeInput.value("neg"), opgraph.NodeInput.none()]


def test_the_seed_names_are_the_runtime_graph_values_and_the_conversion_registry():
    assert ir.TensorMeta("x", ["s0", 2], "float32") == ir.ValueInfo("x", "float32", ["s0", 2])
    assert ir.ValueInfo is opgraph.ValueInfo
    assert ir.ops.register_op is registry.register_conversion and ir.ops.register_executor is register_executor
