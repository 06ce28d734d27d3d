"""Session(products=...) forces the engine of the float32 products with a
constant weight: each engine gives the outputs the automatic choice gives,
and node_engines says which engine each node's products ran on and why."""

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

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


@pytest.fixture(scope="module")
def mlp():
    torch.manual_seed(0)
    rows = torch.export.Dim("rows", min=1, max=512)
    return extract_ir(MLP().eval(), (torch.randn(2, 256),), dynamic_shapes={"x": {0: rows}})


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


def test_bad_engines_are_errors(mlp):
    with pytest.raises(opgraph.Error, match="products: expected 'auto', 'onednn', 'mkl' or 'panels', got 'gpu'"):
        opgraph.Session(mlp.graph, weights=mlp.weights, products="gpu")
    if opgraph.get_cpu_capability() == "avx512":
        with pytest.raises(opgraph.Error, match="products: int8 weights run on opgraph's panels only"):
            opgraph.Session(mlp.graph, weights=mlp.weights, quantize="int8", products="onednn")
