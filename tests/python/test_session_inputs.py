"""opgraph.Session.run's input forms: arrays one by one, one list or tuple
of them, or one dict by input name; and the errors that name the inputs."""

import json

import numpy as np
import pytest
import torch

import opgraph

GRAPH = {
    "name": "scaled_sum",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 3]}, {"name": "y", "dtype": "float32", "shape": [3]}],
    "outputs": [{"name": "s"}, {"name": "m"}],
    "nodes": [
        {"name": "add", "op_type": "aten::add.Tensor", "inputs": ["x", "y"], "outputs": ["s"]},
        {"name": "mul", "op_type": "aten::mul.Tensor", "inputs": ["x", "y"], "outputs": ["m"]},
    ],
}


@pytest.fixture(scope="module")
def session():
    return opgraph.Session(opgraph.Graph.from_json(json.dumps(GRAPH)), weights={})


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    return rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)


@pytest.mark.parametrize("form", ["positional", "list", "tuple", "torch list"])
def test_arrays_in_graph_order_give_a_list(session, arrays, form):
    x, y = arrays
    call = {
        "positional": lambda: session.run(x, y),
        "list": lambda: session.run([x, y]),
        "tuple": lambda: session.run((x, y)),
        "torch list": lambda: session.run([torch.from_numpy(x), torch.from_numpy(y)]),
    }[form]
    s, m = call()
    np.testing.assert_array_equal(s, x + y)
    np.testing.assert_array_equal(m, x * y)


def test_a_dict_by_input_name_gives_a_dict_by_output_name(session, arrays):
    x, y = arrays
    result = session.run({"y": y, "x": x})
    assert list(result) == ["s", "m"]
    np.testing.assert_array_equal(result["s"], x + y)
    np.testing.assert_array_equal(result["m"], x * y)


def test_one_input_graph_takes_a_list_of_one():
    graph = {
        "name": "neg",
        "inputs": [{"name": "x", "dtype": "float64", "shape": [2]}],
        "outputs": [{"name": "n"}],
        "nodes": [{"name": "neg", "op_type": "aten::neg", "inputs": ["x"], "outputs": ["n"]}],
    }
    session = opgraph.Session(opgraph.Graph.from_json(json.dumps(graph)), weights={})
    x = np.array([1.0, -2.0])
    np.testing.assert_array_equal(session.run([x])[0], -x)
    np.testing.assert_array_equal(session.run(x)[0], -x)


@pytest.mark.parametrize(
    "make_call, message",
    [
        (lambda s, x, y: s.run(x), r"expected 2 inputs \(x, y\), got 1"),
        (lambda s, x, y: s.run([x, y, y]), r"expected 2 inputs \(x, y\), got 3"),
        (lambda s, x, y: s.run([]), r"expected 2 inputs \(x, y\), got 0"),
        (lambda s, x, y: s.run({"x": x, "z": y}), r"no input named 'z'; the graph's inputs are: x, y"),
        (lambda s, x, y: s.run({"x": x}), r"input 'y' is missing; the graph's inputs are: x, y"),
        (lambda s, x, y: s.run([x, "y"]), r"input 'y' must be an array .* got str"),
        (lambda s, x, y: s.run({"x": x, "y": 3}), r"input 'y' must be an array .* got int"),
        (lambda s, x, y: s.run([x, x]), r"input 'y': expected float32\[3\], got float32\[4, 3\]"),
        (lambda s, x, y: s.run([[x, y]]), r"input 'x' must be an array .* got list"),
    ],
)
def test_wrong_inputs_are_errors_naming_them(session, arrays, make_call, message):
    with pytest.raises(opgraph.Error, match=message):
        make_call(session, *arrays)
