"""opgraph.Graph built from Python (add_input, add_constant, add_node,
add_output): attributes bound to the op's schema as calls bind them, graphs
that run, save and read back, and errors that name the node, the argument,
what was expected and what was given."""

import copy
import json

import numpy as np
import pytest
import torch

import opgraph
from opgraph import Graph, NodeInput


def linear_relu_graph():
    graph = Graph("mlp")
    graph.add_input("x", "float32", ["N", 4])
    graph.add_constant("w", np.float32, [3, 4])
    graph.add_constant("b", torch.float32, [3])
    (h,) = graph.add_node("aten::linear", ["x", "w", "b"])
    (y,) = graph.add_node("aten::relu", [h], ["y"], name="act")
    graph.add_output(y)
    return graph


def test_a_built_graph_runs_and_matches_numpy():
    graph = linear_relu_graph()
    rng = np.random.default_rng(0)
    weights = {"w": rng.standard_normal((3, 4), dtype=np.float32), "b": rng.standard_normal(3, dtype=np.float32)}
    x = rng.standard_normal((5, 4), dtype=np.float32)
    (y,) = opgraph.Session(graph, weights=weights).run(x)
    np.testing.assert_allclose(y, np.maximum(x @ weights["w"].T + weights["b"], 0), rtol=1e-5, atol=1e-6)


def test_nodes_read_back_as_built():
    graph = linear_relu_graph()
    linear, relu = graph.nodes
    assert (linear.name, linear.op_type, linear.outputs) == ("linear_0", "aten::linear", ["linear_0"])
    assert linear.inputs == [NodeInput.value("x"), NodeInput.value("w"), NodeInput.value("b")]
    assert (relu.name, relu.outputs, relu.inputs) == ("act", ["y"], [NodeInput.value("linear_0")])
    assert [v.name for v in graph.inputs] == ["x"] and graph.inputs[0].shape == ("N", 4)
    assert [(c.name, c.dtype, c.shape) for c in graph.constants] == [("w", "float32", (3, 4)), ("b", "float32", (3,))]
    assert graph.outputs == ["y"]
    assert Graph.from_json(graph.to_json()) == graph


def test_attributes_are_bound_to_the_schema_with_defaults_filled():
    graph = Graph("g")
    graph.add_input("x", "float32", [1, 2, 8, 8])
    graph.add_input("w", "float32", [2, 2, 3, 3])
    (conv,) = graph.add_node("aten::conv2d", ["x", "w", None], stride=2, padding=[1, 1])
    (mask,) = graph.add_node("aten::lt.Scalar", [conv], other=0.5)
    graph.add_node("aten::_to_copy", [mask], dtype=torch.float64)
    conv_node, lt_node, copy_node = graph.nodes
    # an int for an int[2] broadcasts, as in PyTorch; dilation and groups are the schema's defaults
    assert conv_node.attrs == {"stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "groups": 1}
    assert conv_node.inputs[2].is_none
    assert lt_node.attrs == {"other": 0.5}
    assert copy_node.attrs["dtype"] == "float64" and copy_node.attrs["memory_format"] is None
    document = json.loads(graph.to_json())
    assert document["nodes"][2]["attrs"]["dtype"] == {"type": "dtype", "value": "float64"}


def test_tensor_lists_and_size_expressions():
    graph = Graph("g")
    graph.add_input("x", "float32", ["B", 3])
    (both,) = graph.add_node("aten::cat", [["x", "x"]], dim=0)
    (flat,) = graph.add_node("aten::view", [both], size=["2*B", 3])
    graph.add_output(flat)
    assert graph.nodes[0].inputs == [NodeInput.list(["x", "x"])]
    assert graph.nodes[1].attrs["size"] == ["2*B", 3]
    assert json.loads(graph.to_json())["nodes"][1]["attrs"]["size"] == {"type": "symints", "value": ["2*B", 3]}
    session = opgraph.Session(graph)
    for batch in (1, 4):
        x = np.arange(batch * 3, dtype=np.float32).reshape(batch, 3)
        np.testing.assert_array_equal(session.run(x)[0], np.concatenate([x, x]))


def test_bool_lists_read_back_as_bools():
    graph = Graph("g")
    for name in ("grad", "x", "mean", "rstd"):
        graph.add_input(name, "float32", [2, 3])
    graph.add_node(
        "aten::native_layer_norm_backward",
        ["grad", "x", "mean", "rstd", None, None],
        normalized_shape=[3],
        output_mask=[True, False, True],
    )
    assert graph.nodes[0].attrs == {"normalized_shape": [3], "output_mask": [True, False, True]}
    document = json.loads(graph.to_json())
    assert document["nodes"][0]["attrs"]["output_mask"] == {"type": "bools", "value": [True, False, True]}


def test_an_op_the_registry_does_not_know_is_kept_for_verify_to_report():
    graph = Graph("g")
    graph.add_input("x", "float32", [3])
    (y,) = graph.add_node("mylib::later", ["x"], ["y"], factor=2.0)
    graph.add_output(y)
    assert graph.nodes[0].attrs == {"factor": 2.0}
    with pytest.raises(opgraph.Error, match=r"missing ops: \[0\] mylib::later"):
        graph.verify()
    with pytest.raises(opgraph.Error, match=r"node 'later_1' \(mylib::later\): the registry does not know this op"):
        graph.add_node("mylib::later", ["y"])


def test_attributes_by_mapping_take_any_name():
    graph = Graph("power")
    graph.add_input("x", "float32", [3])
    # pow.Scalar's base is an argument named `self`, which no Python keyword can pass.
    (y,) = graph.add_node("aten::pow.Scalar", ["x"], attributes={"self": 2.0})
    graph.add_output(y)
    x = np.array([0.0, 1.0, 3.0], np.float32)
    np.testing.assert_allclose(opgraph.Session(graph).run(x)[0], 2.0**x)
    with pytest.raises(opgraph.Error, match="attribute 'alpha' is given both by keyword and in attributes"):
        graph.add_node("aten::add.Tensor", ["x", "x"], attributes={"alpha": 2}, alpha=3)


def test_the_builder_names_each_item_of_a_tensor_list_return():
    from opgraph.graph import DType, InferenceSession, TensorType, ops

    with opgraph.graph.Graph("halves", input_types=[TensorType(DType.float32, [5, 3])]) as graph:
        first, second = ops.call("aten::chunk", graph.inputs[0], chunks=2)
        graph.output(first, second)
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    got = InferenceSession().load(graph).execute(x)
    np.testing.assert_array_equal(got[0], x[:3])
    np.testing.assert_array_equal(got[1], x[3:])


def test_a_copy_is_independent():
    graph = linear_relu_graph()
    probe = copy.copy(graph)
    probe.add_output("linear_0")
    assert graph.outputs == ["y"] and probe.outputs == ["y", "linear_0"]


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda g: g.add_node("relu", ["x"]), r"op 'relu' is not a qualified name"),
        (
            lambda g: g.add_node("aten::relu", ["x", "x"]),
            r"node 'relu_0' \(aten::relu\): inputs: expected 1 entries, one per tensor argument \(self\), got 2",
        ),
        (
            lambda g: g.add_node("aten::relu", ["q"]),
            r"node 'relu_0' \(aten::relu\): input 'self': no value named 'q' is defined before this node",
        ),
        (
            lambda g: g.add_node("aten::relu", [None]),
            r"input 'self' is required but was not given \(Tensor: expected a value name, got None\)",
        ),
        (
            lambda g: g.add_node("aten::cat", ["x"]),
            r"node 'cat_0' \(aten::cat\): input 'tensors' \(Tensor\[\]\): expected a list of value names, got 'x'",
        ),
        (lambda g: g.add_node("aten::relu", [3]), r"input 'self': expected a value name \(str\), None or a list"),
        (
            lambda g: g.add_node("aten::softmax.int", ["x"], dim="one"),
            r"node 'softmax_0' \(aten::softmax.int\): attribute 'dim': the size expression 'one' names 'one', which "
            r"is no symbolic dimension of the graph's inputs \(N\)",
        ),
        (
            lambda g: g.add_node("aten::softmax.int", ["x"], dim=1.5),
            r"node 'softmax_0' \(aten::softmax.int\): attribute 'dim' expects int, got float 1.5",
        ),
        (
            lambda g: g.add_node("aten::softmax.int", ["x"], dim=1, axis=1),
            r"node 'softmax_0' \(aten::softmax.int\): unexpected attribute 'axis'; its attributes are: dim, dtype",
        ),
        (
            lambda g: g.add_node("aten::softmax.int", ["x"]),
            r"node 'softmax_0' \(aten::softmax.int\): missing required attribute 'dim' \(int\)",
        ),
        (
            lambda g: g.add_node("aten::relu", ["x"], ["x"]),
            r"node 'relu_0' \(aten::relu\): outputs\[0\]: a value named 'x' is already defined",
        ),
        (
            lambda g: g.add_node("aten::max.dim", ["x"], ["a"], dim=0),
            r"node 'max_0' \(aten::max.dim\): outputs: the op returns 2 tensors, got 1 names",
        ),
        (lambda g: g.add_input("x", "float32", [1]), r"Graph.add_input: a value named 'x' is already defined"),
        (lambda g: g.add_input("z", "float8", [1]), r"Graph.add_input 'z': dtype: expected a dtype opgraph holds"),
        (
            lambda g: g.add_input("z", "float32", [2, -1]),
            r"Graph.add_input 'z': shape\[1\]: expected a size >= 0 or a symbol name, got int -1",
        ),
        (
            lambda g: g.add_constant("c", "float32", ["N"]),
            r"Graph.add_constant: constant 'c': a constant's shape is static, got \[N\]",
        ),
        (lambda g: g.add_output("nothing"), r"Graph.add_output: no value named 'nothing' is defined in graph 'g'"),
    ],
)
def test_bad_input_names_what_is_wrong(build, message):
    graph = Graph("g")
    graph.add_input("x", "float32", ["N", 4])
    with pytest.raises(opgraph.Error, match=message):
        build(graph)
    assert len(graph.nodes) == 0  # a failed add leaves the graph as it was


def test_value_infos_compare_copy_and_pickle():
    import pickle

    value = opgraph.ValueInfo("x", "float32", [2, "N"])
    assert value != None and value != "x" and value == opgraph.ValueInfo("x", np.float32, (2, "N"))  # noqa: E711
    for again in (copy.copy(value), copy.deepcopy(value), pickle.loads(pickle.dumps(value))):
        assert again == value and again.shape == (2, "N") and again.dtype == "float32"
