"""Graphs with state: values that persist between runs (a KV cache, a
recurrent carry) in state objects from Session.new_state(), against NumPy
step by step."""

import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import opgraph


def cache_graph(rows=6, width=2):
    """Each run writes `rows` at positions `pos` of the cache and returns it doubled."""
    g = opgraph.Graph("cache")
    g.add_input("new", "float32", ["B", "T", width])
    g.add_input("pos", "int64", ["T"])
    g.add_state("cache", "float32", ["B", rows, width], update="cache_next")
    g.add_node("aten::index_put", ["cache", [None, "pos"], "new"], ["cache_next"])
    g.add_node("aten::mul.Scalar", ["cache_next"], ["y"], other=2.0)
    g.add_output("y")
    return g


def recurrent_graph(width=4):
    """h <- tanh(x + h @ w), the carry of a recurrent cell kept in a state."""
    g = opgraph.Graph("cell")
    g.add_input("x", "float32", [1, width])
    g.add_constant("w", "float32", [width, width])
    g.add_constant("h0", "float32", [1, width])
    g.add_state("h", "float32", [1, width], initial="h0", update="h_next")
    g.add_node("aten::mm", ["h", "w"], ["hw"])
    g.add_node("aten::add.Tensor", ["x", "hw"], ["z"])
    g.add_node("aten::tanh", ["z"], ["h_next"])
    g.add_output("h_next")
    return g


def test_a_cache_fills_run_by_run_as_numpy_says():
    session = opgraph.Session(cache_graph())
    assert [v.name for v in session.inputs] == ["new", "pos"]
    assert [s.value.name for s in session.states] == ["cache"]
    state = session.new_state(B=2)
    want = np.zeros((2, 6, 2), np.float32)
    rng = np.random.default_rng(0)
    for start, count in [(0, 3), (3, 1), (4, 1)]:  # a prompt, then one token at a time
        new = rng.standard_normal((2, count, 2)).astype(np.float32)
        pos = np.arange(start, start + count)
        want[:, pos] = new
        (y,) = session.run(new, pos, state=state)
        np.testing.assert_array_equal(y, 2 * want)
        np.testing.assert_array_equal(state["cache"], want)
    state.reset()
    np.testing.assert_array_equal(state["cache"], np.zeros_like(want))


def test_a_recurrent_carry_starts_from_its_constant_and_survives_a_file(tmp_path):
    rng = np.random.default_rng(1)
    weights = {"w": rng.standard_normal((4, 4)).astype(np.float32) * 0.5, "h0": np.full((1, 4), 0.25, np.float32)}
    opgraph.save_opg(tmp_path / "cell.opg", recurrent_graph(), weights)
    session = opgraph.Session(tmp_path / "cell.opg")
    state = session.new_state()
    h = weights["h0"]
    for step in range(5):
        x = rng.standard_normal((1, 4)).astype(np.float32)
        h = np.tanh(x + h @ weights["w"])
        (got,) = session.run({"x": x}, state=state).values()
        np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")
    np.testing.assert_allclose(state["h"], h, rtol=1e-5, atol=1e-6)


def test_states_of_one_session_run_from_several_threads():
    session = opgraph.Session(cache_graph())
    states = [session.new_state(B=1) for _ in range(4)]

    def sequence(k):
        for step in range(6):
            session.run(np.full((1, 1, 2), k * 10 + step, np.float32), np.array([step]), state=states[k])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(sequence, range(4)))
    for k, state in enumerate(states):
        want = np.repeat(np.arange(k * 10, k * 10 + 6, dtype=np.float32), 2).reshape(1, 6, 2)
        np.testing.assert_array_equal(state["cache"], want)


def test_bad_use_is_an_error_and_the_state_stays_as_it_was():
    session = opgraph.Session(cache_graph())
    state = session.new_state(B=1)
    session.run(np.ones((1, 1, 2), np.float32), np.array([0]), state=state)
    before = state["cache"]
    new = np.ones((1, 1, 2), np.float32)
    with pytest.raises(opgraph.Error, match=r"has state \(cache\): run it with a state from this Session's new_state"):
        session.run(new, np.array([1]))
    with pytest.raises(opgraph.Error, match="the state was made by another Session"):
        session.run(new, np.array([1]), state=opgraph.Session(cache_graph()).new_state(B=1))
    with pytest.raises(opgraph.Error, match="index: 6 at position 1 is out of range for a dim of size 6"):
        session.run(np.ones((1, 2, 2), np.float32), np.array([5, 6]), state=state)
    np.testing.assert_array_equal(state["cache"], before)
    with pytest.raises(opgraph.Error, match=r"state 'cache' is float32\[B, 6, 2\]: give the size of 'B'"):
        session.new_state()
    with pytest.raises(opgraph.Error, match="no state named 'k'; the states are cache"):
        state["k"]
    with pytest.raises(opgraph.Error, match="a value named 'new' is already defined"):
        cache_graph().add_state("new", "float32", [1])


def test_the_command_line_runs_a_graph_with_state(tmp_path, opgraph_cli):
    rng = np.random.default_rng(2)
    weights = {"w": rng.standard_normal((4, 4)).astype(np.float32), "h0": np.zeros((1, 4), np.float32)}
    opgraph.save_opg(tmp_path / "cell.opg", recurrent_graph(), weights)
    result = subprocess.run(
        [str(opgraph_cli), "bench", str(tmp_path / "cell.opg"), "--iters", "3", "--warmup", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "x: float32[1, 4]" in result.stdout


def test_an_input_the_model_updates_in_place_becomes_state_where_asked_sized_per_state_object(tmp_path):
    import torch

    from opgraph.ir import extract_ir

    class Accumulate(torch.nn.Module):
        def forward(self, x, total):
            total.add_(x)
            return total * 2

    batch = torch.export.Dim("batch")
    example = (torch.ones(2, 3), torch.zeros(2, 3))
    dynamic = {"x": {0: batch}, "total": {0: batch}}
    # Not asked: the input stays one.
    assert [v.name for v in extract_ir(Accumulate(), example, dynamic_shapes=dynamic).graph.inputs] == ["x", "total"]
    ir = extract_ir(Accumulate(), example, dynamic_shapes=dynamic, inputs_as_state=True)
    ir.save(tmp_path / "accumulate.opg")
    session = opgraph.Session(tmp_path / "accumulate.opg")
    assert [v.name for v in session.inputs] == ["x"]
    (total,) = session.states
    assert (total.value.name, total.value.shape) == ("total", (session.inputs[0].shape[0], 3))
    state = session.new_state(**{session.inputs[0].shape[0]: 4})
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for step in (1, 2, 3):
        (y,) = session.run({"x": x}, state=state).values()
        np.testing.assert_array_equal(y, 2 * step * x)
