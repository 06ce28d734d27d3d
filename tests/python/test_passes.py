"""The graph passes a Session makes at load: docs/passes.md lists them as
opgraph.graph_passes() does, a Session reports what each rewrote and leaves
out those it is told to, and `opgraph inspect --passes` shows the same."""

import subprocess

import numpy as np
import pytest
from conftest import ROOT

import opgraph

PASSES_DOC = ROOT / "docs" / "passes.md"


def pass_table():
    rows = ["| pass | devices | what it rewrites |", "|---|---|---|"]
    for p in opgraph.graph_passes():
        rows.append(f"| `{p.name}` | {', '.join(p.devices)} | {p.summary} |")
    return "\n".join(rows) + "\n"


def test_the_doc_lists_the_passes_as_the_library_does():
    table = pass_table()
    assert table in PASSES_DOC.read_text(), f"docs/passes.md should hold the pass list as opgraph prints it:\n{table}"


@pytest.fixture(scope="module")
def linear_relu(tmp_path_factory):
    """linear -> relu, saved as an .opg file."""
    graph = opgraph.Graph.from_json(
        """{"inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 8]}], "outputs": [{"name": "y"}],
            "constants": [{"name": "w", "dtype": "float32", "shape": [4, 8]}],
            "nodes": [{"name": "fc", "op_type": "aten::linear", "inputs": ["x", "w", null], "outputs": ["h"]},
                      {"name": "act", "op_type": "aten::relu", "inputs": ["h"], "outputs": ["y"]}]}"""
    )
    path = tmp_path_factory.mktemp("passes") / "linear_relu.opg"
    weight = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
    opgraph.save_opg(str(path), graph, {"w": weight})
    return path, weight


def test_a_session_reports_what_each_pass_rewrote(linear_relu):
    path, _ = linear_relu
    reports = opgraph.Session(path).pass_reports
    assert [r.name for r in reports] == [p.name for p in opgraph.graph_passes()]
    changed = {r.name: (r.rewritten, r.removed) for r in reports if r.changed}
    assert changed == {"fuse_activations": (["fc: opgraph::linear"], 1)}
    assert opgraph.Session(path, optimize=False).pass_reports == []


def test_a_disabled_pass_is_left_out_and_the_outputs_stay(linear_relu):
    path, weight = linear_relu
    x = np.random.default_rng(1).standard_normal((3, 8), dtype=np.float32)
    session = opgraph.Session(path, disabled_passes=["fuse_activations"])
    assert [n.op_type for n in session.graph.nodes] == ["aten::linear", "aten::relu"]
    assert [r.name for r in session.pass_reports if r.skipped] == ["fuse_activations"]
    (y,) = session.run(x)
    np.testing.assert_allclose(y, np.maximum(x @ weight.T, 0), rtol=1e-5, atol=1e-5)


def test_a_pass_name_nobody_has_is_an_error(linear_relu):
    path, _ = linear_relu
    with pytest.raises(opgraph.Error, match="no pass is named 'fuse_activation'; the passes are: .*fuse_activations"):
        opgraph.Session(path, disabled_passes=["fuse_activation"])


def test_inspect_shows_what_each_pass_rewrote(opgraph_cli, linear_relu):
    path, _ = linear_relu
    printed = subprocess.run(
        [opgraph_cli, "inspect", str(path), "--passes"], capture_output=True, text=True, check=True
    ).stdout
    assert pass_rows(printed)["fuse_activations"] == ["1", "1", "fc:", "opgraph::linear"]
    assert pass_rows(printed)["fuse_rms_norms"] == ["0", "0", "-"]
    disabled = subprocess.run(
        [opgraph_cli, "inspect", str(path), "--passes", "--disable-pass", "fuse_activations"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert pass_rows(disabled)["fuse_activations"] == ["-", "-", "(disabled,", "or", "not", "for", "this", "device)"]
    unknown = subprocess.run(
        [opgraph_cli, "inspect", str(path), "--disable-pass", "fuse_activation"], capture_output=True, text=True
    )
    assert unknown.returncode != 0
    assert "no pass is named 'fuse_activation'; the passes are: " in unknown.stderr


def pass_rows(printed):
    """The rows of `opgraph inspect --passes`' table, by pass, split at spaces."""
    lines = printed.split("passes (")[1].splitlines()[2:]
    return {line.split()[0]: line.split()[1:] for line in lines if line}
