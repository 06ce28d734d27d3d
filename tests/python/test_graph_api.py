"""opgraph.graph, the MAX-style graph builder: graphs of built-in and custom
ops run on the C++ Session, saved as .opg, and bad input."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph
from opgraph.graph import CPU, DeviceRef, DType, Graph, InferenceSession, TensorType, ops


def small_cnn_graph(weights):
    with Graph("cnn", input_types=[TensorType(DType.float32, ["N", 3, 8, 8], DeviceRef.CPU())]) as graph:
        (x,) = graph.inputs
        w1, b1 = ops.constant(weights["w1"]), ops.constant(weights["b1"])
        h = ops.max_pool2d(ops.relu(ops.conv2d(x, w1, b1, padding=1)), 2)
        logits = ops.linear(ops.flatten(h, start_dim=1), ops.constant(weights["w2"]), ops.constant(weights["b2"]))
        graph.output(ops.softmax(logits, axis=-1))
    return graph


def cnn_weights():
    rng = np.random.default_rng(0)
    return {
        "w1": rng.standard_normal((4, 3, 3, 3), dtype=np.float32) * 0.3,
        "b1": rng.standard_normal(4, dtype=np.float32),
        "w2": rng.standard_normal((5, 64), dtype=np.float32) * 0.1,
        "b2": rng.standard_normal(5, dtype=np.float32),
    }


def torch_cnn(weights, x):
    t = {k: torch.from_numpy(v) for k, v in weights.items()}
    h = F.max_pool2d(F.relu(F.conv2d(torch.from_numpy(x), t["w1"], t["b1"], padding=1)), 2)
    return torch.softmax(F.linear(h.flatten(1), t["w2"], t["b2"]), -1).numpy()


@pytest.mark.parametrize("batch", [1, 17])
def test_builtin_ops_graph_matches_torch(batch):
    weights = cnn_weights()
    graph = small_cnn_graph(weights)
    model = InferenceSession(devices=[CPU()]).load(graph)
    x = np.random.default_rng(batch).standard_normal((batch, 3, 8, 8), dtype=np.float32)
    np.testing.assert_allclose(model.execute(x)[0], torch_cnn(weights, x), rtol=1e-5, atol=1e-6)


def test_value_types_are_inferred_with_symbolic_batch():
    with Graph("g", input_types=[TensorType("float32", ["N", 3, 8, 8])]) as graph:
        (x,) = graph.inputs
        y = ops.max_pool2d(x, 2)
        z = ops.concat([y, y], axis=1)
        assert y.shape == ["N", 3, 4, 4] and y.dtype == DType.float32
        assert z.shape == ["N", 6, 4, 4]
        graph.output(z)


def test_operators_and_constants():
    with Graph("arith", input_types=[TensorType(DType.float64, [2, 3])]) as graph:
        (x,) = graph.inputs
        graph.output((x * 2.0 + 1.0) @ ops.constant(np.ones((3, 4))) - x.tensor @ ops.constant(np.eye(3, 4)))
    x = np.arange(6.0).reshape(2, 3)
    result = InferenceSession().load(graph).execute(x)[0]
    np.testing.assert_allclose(result, (x * 2 + 1) @ np.ones((3, 4)) - x @ np.eye(3, 4))


def test_saved_graph_runs_in_a_session_and_keeps_its_weights(tmp_path):
    from safetensors.numpy import load_file

    weights = cnn_weights()
    graph = small_cnn_graph(weights)
    path = tmp_path / "cnn.opg"
    graph.save(path)
    stored = load_file(str(path))
    assert sorted(stored) == sorted(graph.constants)
    x = np.random.default_rng(0).standard_normal((3, 3, 8, 8), dtype=np.float32)
    np.testing.assert_allclose(
        InferenceSession().load(str(path)).execute(x)[0], torch_cnn(weights, x), rtol=1e-5, atol=1e-6
    )


def test_custom_op_from_an_extension(conv1d_package):
    with Graph(
        "conv",
        input_types=[TensorType(DType.float32, [9]), TensorType(DType.float32, [3])],
        custom_extensions=[conv1d_package],
    ) as graph:
        x, k = graph.inputs
        y = ops.custom(
            name="conv1d",
            values=[x, k],
            out_types=[TensorType(DType.float32, [9])],
            parameters={"input_size": 9, "conv_size": 3, "dtype": DType.float32},
        )[0].tensor
        graph.output(y)
    x, k = np.arange(9, dtype=np.float32), np.array([1, -2, 3], np.float32)
    expected = np.correlate(np.pad(x, (0, 2)), k, mode="valid")
    np.testing.assert_allclose(InferenceSession().load(graph).execute(x, k)[0], expected)


def test_custom_op_errors(conv1d_package):
    with Graph(
        "bad",
        input_types=[TensorType(DType.float32, [9]), TensorType(DType.float32, [3])],
        custom_extensions=[conv1d_package],
    ) as graph:
        x, k = graph.inputs
        with pytest.raises(
            opgraph.Error,
            match=r"no op 'conv2d' in the graph's custom extensions; they provide: "
            r"examples::conv1d",
        ):
            ops.custom(name="conv2d", values=[x, k], out_types=[TensorType(DType.float32, [9])])
        with pytest.raises(opgraph.Error, match=r"examples::conv1d\): unexpected attribute 'size'"):
            ops.custom(
                name="conv1d",
                values=[x, k],
                out_types=[TensorType(DType.float32, [9])],
                parameters={"size": 9, "input_size": 9, "conv_size": 3},
            )
        with pytest.raises(opgraph.Error, match=r"parameter dtype=float64 but out_types has float32"):
            ops.custom(
                name="conv1d",
                values=[x, k],
                out_types=[TensorType(DType.float32, [9])],
                parameters={"input_size": 9, "conv_size": 3, "dtype": DType.float64},
            )
        y = ops.custom(
            name="conv1d",
            values=[x, k],
            out_types=[TensorType(DType.float32, [10])],
            parameters={"input_size": 9, "conv_size": 3},
        )[0]
        with pytest.raises(
            opgraph.Error,
            match=r"declared TensorType\(float32, \[10\]\) but its op gives "
            r"TensorType\(float32, \[9\]\)",
        ):
            graph.output(y)


def test_builder_errors():
    with pytest.raises(opgraph.Error, match=r"no graph is being built"):
        ops.relu(None)
    with pytest.raises(opgraph.Error, match=r"a dimension is a size >= 0 or a symbolic name"):
        TensorType(DType.float32, [-1])
    with pytest.raises(opgraph.Error, match=r"DeviceRef: kind: expected 'cpu' or 'gpu', got 'tpu'"):
        DeviceRef("tpu")
    with pytest.raises(opgraph.Error, match=r"DeviceRef: id: expected an int >= 0, got -1"):
        DeviceRef.GPU(-1)
    with pytest.raises(opgraph.Error, match=r"dtype complex32 is not one opgraph holds"):
        DType.of("complex32")
    with Graph("g", input_types=[TensorType(DType.float32, [2, 3])]) as graph:
        (x,) = graph.inputs
        with pytest.raises(
            opgraph.Error, match=r"aten::conv2d\): attribute 'stride': the size expression 'two' names 'two'"
        ):
            ops.conv2d(x, x, stride="two")
        with pytest.raises(
            opgraph.Error,
            match=r"aten::add.Tensor\): inputs: expected 2 entries, one per tensor argument \(self, other\)",
        ):
            ops.call("aten::add.Tensor", x)
    with pytest.raises(opgraph.Error, match=r"no outputs; call graph.output"):
        graph.to_graph()


def test_the_seed_names_are_the_builder_and_its_ops():
    from opgraph.graph import GraphBuilder, nodes

    assert Graph is GraphBuilder and Graph is not opgraph.Graph  # the builder, not the runtime's graph
    assert ops.custom is nodes.custom and ops.call is nodes.call
    assert [d.value for d in DType] == list(opgraph.dtypes.NAMES)
    assert DType.of(torch.bfloat16) is DType.bfloat16 and DType.of(np.int32) is DType.int32
