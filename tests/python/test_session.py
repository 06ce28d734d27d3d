"""opgraph.Session: graphs written as JSON, run against PyTorch."""

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import opgraph

FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-5)


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def cnn(channels=3, out_channels=4, size=8, stride=1, padding=0, classes=10, batch="N"):
    """conv2d -> relu -> max_pool2d(2) -> flatten -> linear, as graph JSON and weights."""
    pooled = ((size + 2 * padding - 3) // stride + 1) // 2
    features = out_channels * pooled * pooled
    weights = {
        "conv.weight": random((out_channels, channels, 3, 3), 1),
        "conv.bias": random((out_channels,), 2),
        "fc.weight": random((classes, features), 3),
        "fc.bias": random((classes,), 4),
    }
    graph = {
        "name": "cnn",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [batch, channels, size, size]}],
        "outputs": [{"name": "logits"}],
        "constants": [{"name": k, "dtype": "float32", "shape": list(v.shape)} for k, v in weights.items()],
        "nodes": [
            {
                "name": "conv",
                "op_type": "aten::conv2d",
                "inputs": ["x", "conv.weight", "conv.bias"],
                "outputs": ["c"],
                "attrs": {
                    "stride": {"type": "ints", "value": [stride, stride]},
                    "padding": {"type": "ints", "value": [padding, padding]},
                },
            },
            {"name": "relu", "op_type": "aten::relu", "inputs": ["c"], "outputs": ["r"]},
            {
                "name": "pool",
                "op_type": "aten::max_pool2d",
                "inputs": ["r"],
                "outputs": ["p"],
                "attrs": {"kernel_size": {"type": "ints", "value": [2, 2]}},
            },
            {
                "name": "flatten",
                "op_type": "aten::flatten.using_ints",
                "inputs": ["p"],
                "outputs": ["f"],
                "attrs": {"start_dim": {"type": "int", "value": 1}},
            },
            {"name": "fc", "op_type": "aten::linear", "inputs": ["f", "fc.weight", "fc.bias"], "outputs": ["logits"]},
        ],
    }
    torch_weights = {k: torch.from_numpy(v) for k, v in weights.items()}

    def expected(x):
        c = F.conv2d(
            torch.from_numpy(np.ascontiguousarray(x)),
            torch_weights["conv.weight"],
            torch_weights["conv.bias"],
            stride=stride,
            padding=padding,
        )
        p = F.max_pool2d(F.relu(c), 2)
        return F.linear(p.flatten(1), torch_weights["fc.weight"], torch_weights["fc.bias"]).numpy()

    return opgraph.Graph.from_json(json.dumps(graph)), weights, expected


@pytest.mark.parametrize("batch", [1, 17])
@pytest.mark.parametrize(
    "channels, out_channels, size, stride, padding",
    [(3, 4, 8, 1, 0), (1, 1, 5, 1, 0), (5, 7, 11, 2, 1), (2, 3, 13, 1, 1)],
)
def test_cnn_matches_torch(batch, channels, out_channels, size, stride, padding):
    graph, weights, expected = cnn(channels, out_channels, size, stride, padding)
    session = opgraph.Session(graph, weights=weights)
    x = random((batch, channels, size, size), 5)
    (logits,) = session.run(x)
    assert logits.shape == (batch, 10) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, expected(x), **FLOAT32_SUMS)


def test_symbolic_batch_runs_at_several_sizes_on_one_session():
    graph, weights, expected = cnn()
    session = opgraph.Session(graph, weights=weights)
    peaks = {}
    for batch in [1, 17, 2, 17, 1]:
        x = random((batch, 3, 8, 8), batch)
        np.testing.assert_allclose(session.run(x)[0], expected(x), **FLOAT32_SUMS)
        peaks.setdefault(batch, session.planned_peak_bytes)
        assert session.planned_peak_bytes == peaks[batch]
    assert peaks[1] < peaks[2] < peaks[17]


def cat_graph(values=("b", "a", "r"), dim=1):
    """sigmoid(cat(values, dim)) over a: float32[N, 3, 5], b: float32[N, 2, 5] and r = relu(a)."""
    return opgraph.Graph.from_json(
        json.dumps(
            {
                "name": "cat",
                "inputs": [
                    {"name": "a", "dtype": "float32", "shape": ["N", 3, 5]},
                    {"name": "b", "dtype": "float32", "shape": ["N", 2, 5]},
                ],
                "outputs": [{"name": "y"}],
                "nodes": [
                    {"name": "relu", "op_type": "aten::relu", "inputs": ["a"], "outputs": ["r"]},
                    {
                        "name": "cat",
                        "op_type": "aten::cat",
                        "inputs": [list(values)],
                        "outputs": ["c"],
                        "attrs": {"dim": {"type": "int", "value": dim}},
                    },
                    {"name": "sigmoid", "op_type": "aten::sigmoid", "inputs": ["c"], "outputs": ["y"]},
                ],
            }
        )
    )


def test_tensor_list_argument_matches_torch_at_several_batches(tmp_path):
    opgraph.save_opg(tmp_path / "cat.opg", cat_graph())
    session = opgraph.Session(tmp_path / "cat.opg")
    assert session.outputs[0].shape == ("N", 8, 5)
    for batch in [1, 4, 1, 7]:
        a, b = random((batch, 3, 5), batch), random((batch, 2, 5), batch + 100)
        (y,) = session.run(a, b)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        np.testing.assert_allclose(
            y, torch.sigmoid(torch.cat([tb, ta, torch.relu(ta)], 1)).numpy(), rtol=1e-6, atol=1e-7
        )


def test_tensor_list_shapes_and_errors():
    # Joining three batches gives a size that is no plain symbol.
    assert cat_graph(("a", "r", "a"), dim=0).infer_shapes()["c"].shape == ("?", 3, 5)
    # Each element reaches the shape function: found when the session loads.
    with pytest.raises(
        opgraph.Error,
        match=r"node 'cat' \(aten::cat\): tensors\[1\]: expected size 2 in dimension 1 "
        r"like tensors\[0\], got float32\[192, 3, 5\] .*trial sizes N=192",
    ):
        opgraph.Session(cat_graph(dim=2))
    text = cat_graph().to_json().replace('[["b","a","r"]]', '["b"]')
    with pytest.raises(
        opgraph.Error,
        match=r"node 'cat' \(aten::cat\): argument 'tensors' is a Tensor\[\]; give it "
        r"a list of values",
    ):
        opgraph.Graph.from_json(text).verify()


def test_inputs_and_outputs_describe_the_graph():
    graph, weights, _ = cnn()
    session = opgraph.Session(graph, weights=weights)
    (x,) = session.inputs
    assert (x.name, x.dtype, x.shape) == ("x", "float32", ("N", 3, 8, 8))
    (logits,) = session.outputs
    assert (logits.name, logits.dtype, logits.shape) == ("logits", "float32", ("N", 10))


def test_run_by_name_returns_a_dict():
    graph, weights, expected = cnn()
    session = opgraph.Session(graph, weights=weights)
    x = random((2, 3, 8, 8), 0)
    result = session.run({"x": x})
    assert list(result) == ["logits"]
    np.testing.assert_array_equal(result["logits"], session.run(x)[0])


def test_strided_numpy_and_torch_inputs():
    graph, weights, expected = cnn()
    session = opgraph.Session(graph, weights=weights)
    wide = random((2, 3, 8, 16), 6)
    x = wide[:, :, :, ::2]
    assert not x.flags.c_contiguous
    np.testing.assert_allclose(session.run(x)[0], expected(x), **FLOAT32_SUMS)
    np.testing.assert_array_equal(session.run(torch.from_numpy(wide)[:, :, :, ::2])[0], session.run(x)[0])


def test_bad_inputs_name_the_input_and_both_types():
    graph, weights, _ = cnn()
    session = opgraph.Session(graph, weights=weights)
    with pytest.raises(opgraph.Error, match=r"input 'x': expected float32\[N, 3, 8, 8\], got float32\[2, 4, 8, 8\]"):
        session.run(random((2, 4, 8, 8), 0))
    with pytest.raises(opgraph.Error, match=r"input 'x': expected float32\[N, 3, 8, 8\], got float64\[2, 3, 8, 8\]"):
        session.run(np.zeros((2, 3, 8, 8)))
    with pytest.raises(opgraph.Error, match=r"expected 1 inputs \(x\), got 2"):
        session.run(random((2, 3, 8, 8), 0), random((2, 3, 8, 8), 0))
    with pytest.raises(opgraph.Error, match=r"no input named 'y'; the graph's inputs are: x"):
        session.run({"y": random((2, 3, 8, 8), 0)})
    with pytest.raises(opgraph.Error, match=r"input 'x' must be an array .* got str"):
        session.run("x")


@pytest.mark.parametrize("batch", [1, 8])
def test_converted_weights_stay_with_their_session(batch):
    """Convolution weights converted to oneDNN's layout on a Session's first
    run are reused by its later runs; two Sessions of one graph with other
    weights keep their own."""
    graph, weights_a, expected_a = cnn(channels=32, out_channels=64, size=12, padding=1)
    _, weights_b, _ = cnn(channels=32, out_channels=64, size=12, padding=1)
    weights_b = {k: v * 0.5 + 1 for k, v in weights_b.items()}
    session_a, session_b = opgraph.Session(graph, weights=weights_a), opgraph.Session(graph, weights=weights_b)
    torch_b = {k: torch.from_numpy(v) for k, v in weights_b.items()}
    x = random((batch, 32, 12, 12), 6)
    c = F.max_pool2d(F.relu(F.conv2d(torch.from_numpy(x), torch_b["conv.weight"], torch_b["conv.bias"], padding=1)), 2)
    expected_b = F.linear(c.flatten(1), torch_b["fc.weight"], torch_b["fc.bias"]).numpy()
    for _ in range(3):
        np.testing.assert_allclose(session_a.run(x)[0], expected_a(x), **FLOAT32_SUMS)
        np.testing.assert_allclose(session_b.run(x)[0], expected_b, **FLOAT32_SUMS)


def test_weights_are_checked_and_copied():
    graph, weights, expected = cnn()
    with pytest.raises(opgraph.Error, match=r"no weight given for constant 'fc.bias' \(float32\[10\]\)"):
        opgraph.Session(graph, weights={k: v for k, v in weights.items() if k != "fc.bias"})
    session = opgraph.Session(graph, weights=weights)
    x = random((1, 3, 8, 8), 0)
    before = session.run(x)[0]
    weights["fc.bias"][:] = 100  # the session holds its own copy
    np.testing.assert_array_equal(session.run(x)[0], before)


def test_graph_errors_are_reported_at_load():
    graph, weights, _ = cnn()
    text = graph.to_json().replace("aten::relu", "mylib::swish")
    with pytest.raises(opgraph.Error, match=r"missing ops: \[1\] mylib::swish \(node relu\)"):
        opgraph.Session(opgraph.Graph.from_json(text), weights=weights)
    text = graph.to_json().replace('"start_dim"', '"start"')
    with pytest.raises(
        opgraph.Error, match=r"node 'flatten' \(aten::flatten.using_ints\): unexpected attribute 'start'"
    ):
        opgraph.Session(opgraph.Graph.from_json(text), weights=weights)


def test_session_from_an_opg_file(tmp_path):
    graph, weights, expected = cnn(5, 7, 11, 2, 1)
    path = tmp_path / "cnn.opg"
    opgraph.save_opg(path, graph, weights)
    session = opgraph.Session(path, threads=1)
    x = random((3, 5, 11, 11), 7)
    np.testing.assert_allclose(session.run(x)[0], expected(x), **FLOAT32_SUMS)
    with pytest.raises(opgraph.Error, match="weights are read from the .opg file"):
        opgraph.Session(path, weights=weights)


def scale_relu_graph(package):
    return opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [{"name": "x", "dtype": "float64", "shape": ["N"]}],
                "outputs": [{"name": "y"}],
                "nodes": [
                    {
                        "name": "scale",
                        "op_type": "test_ops::scale",
                        "inputs": ["x"],
                        "outputs": ["s"],
                        "attrs": {"factor": {"type": "float", "value": -1.5}},
                    },
                    {"name": "relu", "op_type": "aten::relu", "inputs": ["s"], "outputs": ["y"]},
                ],
                "packages": [package],
            }
        )
    )


def test_graph_with_a_package_op_loads_it_from_package_paths(test_packages):
    package = test_packages["ops"]
    session = opgraph.Session(scale_relu_graph("opgraph_test_ops"), package_paths=[package.parent])
    x = np.linspace(-3, 3, 7)
    np.testing.assert_array_equal(session.run(x)[0], np.maximum(-1.5 * x, 0))
    # As a path, it needs no search.
    assert opgraph.Session(scale_relu_graph(str(package))).run(x)[0].shape == (7,)


def test_missing_package_says_where_it_looked(tmp_path):
    with pytest.raises(
        opgraph.Error,
        match=rf"op package 'nopkg' not found: looked for libnopkg.so, nopkg.so, "
        rf"nopkg in {tmp_path}; add the folder",
    ):
        opgraph.Session(scale_relu_graph("nopkg"), package_paths=[tmp_path])


def test_memory_plan_reuses_buffers_along_a_chain():
    nodes = [
        {
            "name": f"relu_{i}",
            "op_type": "aten::relu",
            "inputs": [f"v{i}" if i else "x"],
            "outputs": [f"v{i + 1}" if i < 9 else "y"],
        }
        for i in range(10)
    ]
    graph = opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [{"name": "x", "dtype": "float32", "shape": [31, 17]}],
                "outputs": [{"name": "y"}],
                "nodes": nodes,
            }
        )
    )
    session = opgraph.Session(graph)
    aligned = (31 * 17 * 4 + 63) // 64 * 64
    assert session.naive_bytes == 9 * aligned
    assert session.planned_peak_bytes == 2 * aligned < session.naive_bytes
    x = random((31, 17), 0)
    np.testing.assert_array_equal(session.run(x)[0], np.maximum(x, 0))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_runs_leave_torchs_thread_count_alone(threads):
    """oneDNN's kernels set OpenMP's thread count for their calls, small ones
    on the calling thread alone; PyTorch reads that count as its own where it
    shares the OpenMP runtime, and must find it as it was after a run."""
    graph, weights, _ = cnn()
    session = opgraph.Session(graph, weights=weights, threads=threads)
    before = torch.get_num_threads()
    try:
        for count in (2, 1):
            torch.set_num_threads(count)
            for batch in (1, 17):  # a convolution small enough for the calling thread alone, and a larger one
                session.run(random((batch, 3, 8, 8), batch))
                assert torch.get_num_threads() == count
    finally:
        torch.set_num_threads(before)


def test_concurrent_runs_agree_with_single_runs():
    """One Session, an intra-op pool of two, 8 threads x 200 runs, each thread
    with a batch of its own (so plans are made concurrently too); run() lets
    go of the GIL, so the runs overlap. Every output is the bits a run alone gives."""
    graph, weights, torch_reference = cnn()
    session = opgraph.Session(graph, weights=weights, threads=2)
    inputs = [random((batch, 3, 8, 8), seed) for seed, batch in enumerate([1, 2, 3, 4, 5, 1, 2, 17])]
    expected = [session.run(x)[0] for x in inputs]
    for x, alone in zip(inputs, expected):
        np.testing.assert_allclose(alone, torch_reference(x), **FLOAT32_SUMS)

    def mismatches(i):
        return sum(not np.array_equal(session.run(inputs[i])[0], expected[i]) for _ in range(200))

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(mismatches, range(8))) == [0] * 8


def test_concurrent_runs_of_one_shape_agree_with_a_run_alone():
    """Eight threads at one batch size run the same cached oneDNN primitives
    at once, each of which must work in its caller's scratch: when they shared
    oneDNN's, a product now and then came back as garbage, mostly in a
    thread's first runs, so each round starts threads of its own."""
    graph, weights, _ = cnn()
    session = opgraph.Session(graph, weights=weights, threads=1)
    inputs = [random((2, 3, 8, 8), seed) for seed in range(8)]
    expected = [session.run(x)[0] for x in inputs]

    def mismatches(i):
        return sum(not np.array_equal(session.run(inputs[i])[0], expected[i]) for _ in range(20))

    for _ in range(100):
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(mismatches, range(8))) == [0] * 8


def test_profile_writes_one_trace_event_per_node_per_run(tmp_path):
    graph, weights, _ = cnn()
    session = opgraph.Session(graph, weights=weights, profile=True, optimize=False)
    for batch in (1, 2, 3):
        session.run(random((batch, 3, 8, 8), batch))
    path = tmp_path / "trace.json"
    session.write_chrome_trace(path)
    events = json.loads(path.read_text())["traceEvents"]
    assert len(events) == 3 * 5
    assert [e["name"] for e in events] == ["conv", "relu", "pool", "flatten", "fc"] * 3
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert events[5]["args"]["op"] == "aten::conv2d"
    assert events[5]["args"]["shapes"].startswith("float32[2, 3, 8, 8], float32[4, 3, 3, 3]")


def test_graph_json_round_trip_and_shapes():
    graph, _, _ = cnn()
    assert opgraph.Graph.from_json(graph.to_json(indent=2)) == graph
    assert graph.node_names == ["conv", "relu", "pool", "flatten", "fc"]
    assert [c.name for c in graph.constants] == ["conv.weight", "conv.bias", "fc.weight", "fc.bias"]
    shapes = graph.infer_shapes()
    assert shapes["c"].shape == ("N", 4, 6, 6)
    assert shapes["f"].shape == ("N", 36)
    graph.verify()
    with pytest.raises(opgraph.Error, match=r"graph JSON: nodes\[0\] \('conv'\): missing field 'op_type'"):
        opgraph.Graph.from_json(graph.to_json().replace('"op_type"', '"op"', 1))
