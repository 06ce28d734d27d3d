"""Session(products=...) forces the engine of the float32 products with a
constant weight: each engine gives the outputs the automatic choice gives,
and node_engines says which engine each node's products ran on and why.
The automatic choice measures the engines on the first product of a shape
of 128 rows or more, and keeps its pick in a file per CPU model."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(256, 1024)
        self.down = nn.Linear(1024, 256)

    def forward(self, x):  # a residual, as in a transformer's layer: the product adds to it
        return x + self.down(torch.relu(self.up(x)))


@pytest.fixture(scope="module")
def mlp_module():
    torch.manual_seed(0)
    return MLP().eval()


@pytest.fixture(scope="module")
def mlp(mlp_module):
    rows = torch.export.Dim("rows", min=1, max=512)
    return extract_ir(mlp_module, (torch.randn(2, 256),), dynamic_shapes={"x": {0: rows}})


def product_engines(session):
    return {engine for node, engine in zip(session.graph.nodes, session.node_engines) if "linear" in node.op_type}


@pytest.mark.parametrize("products", ["onednn", "mkl", "panels"])
def test_each_engine_gives_the_automatic_choices_outputs(mlp, products):
    automatic = opgraph.Session(mlp.graph, weights=mlp.weights, threads=2)
    forced = opgraph.Session(mlp.graph, weights=mlp.weights, threads=2, products=products)
    assert product_engines(forced) == {""}, "no engine before the first run"
    for rows in (1, 5, 300):  # one row, a few (the panels), many (MKL's)
        x = np.random.default_rng(rows).standard_normal((rows, 256)).astype(np.float32)
        np.testing.assert_allclose(forced.run(x)[0], automatic.run(x)[0], rtol=1e-5, atol=1e-5)
    noted = {part for engine in product_engines(forced) for part in engine.split("; ")}
    # An engine a product cannot run on (MKL where it is not built in, the
    # panels' many rows without AVX-512) leaves it to oneDNN.
    name = {"onednn": "oneDNN", "mkl": "MKL", "panels": "opgraph panels"}[products]
    assert noted <= {f"{name} (products={products})", "oneDNN"} and noted, noted
    if products != "mkl" and opgraph.get_cpu_capability() == "avx512":
        assert noted == {f"{name} (products={products})"}


def test_the_automatic_choice_says_why(mlp):
    session = opgraph.Session(mlp.graph, weights=mlp.weights, threads=2)
    session.run(np.ones((1, 256), np.float32))
    engines = product_engines(session)
    if opgraph.get_cpu_capability() == "avx512":
        assert engines == {"opgraph panels (64 rows or fewer)"}


@pytest.fixture(scope="module")
def mlp_file(mlp, tmp_path_factory):
    path = tmp_path_factory.mktemp("mlp") / "mlp.opg"
    mlp.save(path)
    return path


# Runs a Session of argv[1] twice on argv[2]'s rows, saves the outputs to
# argv[3] and prints each product's engine.
MEASURING_PROCESS = """
import sys
import numpy as np
import opgraph
session = opgraph.Session(sys.argv[1], threads=2)
x = np.load(sys.argv[2])
outputs = session.run(x)[0]
assert np.array_equal(session.run(x)[0], outputs), "the first run's outputs are its pick's"
np.save(sys.argv[3], outputs)
for node, engine in zip(session.graph.nodes, session.node_engines):
    if "linear" in node.op_type:
        print(engine)
"""


def test_many_rows_run_on_the_engine_measured_fastest_and_the_pick_is_kept(mlp_module, mlp_file, tmp_path):
    x = np.random.default_rng(0).standard_normal((300, 256)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    cache = tmp_path / "cache"
    picks = cache / "engines"
    picks.mkdir(parents=True)
    # Filled by the first process; lines that do not parse are skipped.
    (picks / "a-file-of-another-cpu.tsv").write_text("not a pick\n")

    def run():
        result = subprocess.run(
            [sys.executable, "-c", MEASURING_PROCESS, mlp_file, tmp_path / "x.npy", tmp_path / "out.npy"],
            env={**os.environ, "OPGRAPH_CACHE_DIR": str(cache)},
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()

    measured = run()
    engine = r"(oneDNN|MKL|opgraph panels)"
    timing = rf"{engine} \d+\.\d{{3}} ms"
    up = r"float32 256-511 rows x 256 x 1024 \(w transposed\), bias, relu, 2 threads"
    down = r"float32 256-511 rows x 1024 x 256 \(w transposed\), bias, accumulated, 2 threads"
    assert len(measured) == 2
    for line, shape_class in zip(measured, (up, down)):
        pattern = rf"{engine} \(measured the fastest on this CPU for {shape_class}: {timing}(, {timing})+\)"
        assert re.fullmatch(pattern, line), line
    with torch.no_grad():
        expected = mlp_module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), expected, rtol=1e-4, atol=1e-4)

    files = sorted(picks.glob("*.tsv"))
    assert len(files) == 2, files
    (kept,) = [f for f in files if f.name != "a-file-of-another-cpu.tsv"]
    lines = kept.read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == [
        "float32 256-511 rows x 256 x 1024 (w transposed), bias, relu, 2 threads",
        "float32 256-511 rows x 1024 x 256 (w transposed), bias, accumulated, 2 threads",
    ]
    # A second process reads the picks, timings and all, instead of measuring again.
    assert run() == measured
    assert kept.read_text().splitlines() == lines
    kept.write_text("a line that does not parse\n" + "\n".join(lines) + "\n")
    assert run() == measured


def test_bad_engines_are_errors(mlp):
    with pytest.raises(opgraph.Error, match="products: expected 'auto', 'onednn', 'mkl' or 'panels', got 'gpu'"):
        opgraph.Session(mlp.graph, weights=mlp.weights, products="gpu")
    if opgraph.get_cpu_capability() == "avx512":
        with pytest.raises(opgraph.Error, match="products: int8 weights run on opgraph's panels only"):
            opgraph.Session(mlp.graph, weights=mlp.weights, quantize="int8", products="onednn")
