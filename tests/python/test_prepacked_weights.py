"""Products whose weight is a Session's constant (linear, addmm, mm,
matmul) run on a copy of the weight made at the first run: in MKL's packed
format for 128 rows and more and weights too large to stay in cache (where
opgraph is built with MKL), in oneDNN's layout for others, in opgraph's own
panels of columns for a single row.
Outputs are PyTorch's, run after run and size after size, with weights
transposed or not and every epilogue a product applies."""

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir

FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-4)


class Products(nn.Module):
    """GPT-2's Conv1D (addmm with a [K, N] weight), a linear layer ([N, K]),
    mm and matmul by constant matrices, one of them a transposed view."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.conv1d_weight = nn.Parameter(torch.randn(48, 80, generator=generator) / 7)
        self.conv1d_bias = nn.Parameter(torch.randn(80, generator=generator))
        self.linear = nn.Linear(80, 64)
        self.mm_weight = nn.Parameter(torch.randn(64, 40, generator=generator) / 8)
        self.matmul_weight = nn.Parameter(torch.randn(24, 40, generator=generator) / 6)

    def forward(self, x):
        y = torch.addmm(self.conv1d_bias, x.reshape(-1, 48), self.conv1d_weight)
        y = torch.relu(self.linear(y))
        y = torch.mm(y, self.mm_weight)
        return torch.matmul(y.reshape(x.shape[0], -1, 40), self.matmul_weight.t())


def test_constant_weights_give_pytorchs_products_at_every_size():
    torch.manual_seed(0)
    model = Products().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    session = extract_ir(model, (torch.randn(3, 5, 48),), dynamic_shapes={"x": {0: batch}}).to_session()
    for size in (1, 3, 64, 3):  # small, large, and a size seen before
        x = torch.randn(size, 5, 48)
        with torch.no_grad():
            expected = model(x).numpy()
        for _ in range(2):
            np.testing.assert_allclose(session.run(x.numpy())[0], expected, **FLOAT32_SUMS)


class OneRowLayers(nn.Module):
    """A Conv1D ([K, N] weight) with a ReLU, a SwiGLU MLP added to its input
    (a gate multiplied in, a residual added) and a narrow head: widths of
    whole panels of 128 columns, strips of 16 and a padded last strip. On two
    threads the MLP's down product, narrow for its rows, splits its rows
    between them, the others their columns."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.conv1d_weight = nn.Parameter(torch.randn(37, 300, generator=generator) / 6)
        self.conv1d_bias = nn.Parameter(torch.randn(300, generator=generator))
        self.gate = nn.Linear(300, 1030, bias=False)
        self.up = nn.Linear(300, 1030)
        self.down = nn.Linear(1030, 300)
        self.head = nn.Linear(300, 9)

    def forward(self, x):
        h = torch.relu(torch.addmm(self.conv1d_bias, x, self.conv1d_weight))
        h = h + self.down(nn.functional.silu(self.gate(h)) * self.up(h))
        return self.head(h)


def expect_pytorchs_outputs(model_class, features, sizes, threads, max_rows):
    """Runs a `model_class`, exported with a dynamic number of rows, on
    `threads` threads at each of `sizes` rows, twice, against PyTorch."""
    torch.manual_seed(0)
    model = model_class().eval()
    rows = torch.export.Dim("rows", min=1, max=max_rows)
    session = extract_ir(model, (torch.randn(2, features),), dynamic_shapes={"x": {0: rows}}).to_session()
    previous = opgraph.get_num_threads()
    opgraph.set_num_threads(threads)
    try:
        for size in sizes:
            x = torch.randn(size, features)
            with torch.no_grad():
                expected = model(x).numpy()
            for _ in range(2):
                np.testing.assert_allclose(session.run(x.numpy())[0], expected, **FLOAT32_SUMS)
    finally:
        opgraph.set_num_threads(previous)


@pytest.mark.parametrize("threads", [1, 2])
def test_one_row_products_give_pytorchs_on_packed_weights(threads):
    # One row, rows on oneDNN's copy, one row again.
    expect_pytorchs_outputs(OneRowLayers, 37, (1, 4, 1), threads, max_rows=16)


class StreamedLayers(nn.Module):
    """Weights too large to stay in the caches between runs (a decode
    step's): a wide linear layer of 69 MB, then a narrow one, whose threads
    split its rows rather than its 300 columns."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(2112, 8192, bias=False)
        self.narrow = nn.Linear(8192, 300)

    def forward(self, x):
        return self.narrow(torch.relu(self.wide(x)))


@pytest.mark.parametrize("threads", [1, 2])
def test_one_row_products_of_streamed_weights_give_pytorchs(threads):
    expect_pytorchs_outputs(StreamedLayers, 2112, (1, 1), threads, max_rows=4)


class TallLayers(nn.Module):
    """A transformer block's products with their epilogues, each weight too
    large to stay in cache (MKL's): a Conv1D ([K, N] weight, bias) with GELU's
    tanh form, a linear layer with GELU, one added to its input (a residual),
    a SwiGLU MLP (a gate multiplied in) and a linear layer without bias whose
    300 columns split unevenly over threads."""

    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.conv1d_weight = nn.Parameter(torch.randn(256, 512, generator=generator) / 16)
        self.conv1d_bias = nn.Parameter(torch.randn(512, generator=generator))
        self.up = nn.Linear(512, 600)
        self.down = nn.Linear(600, 512)
        self.gate = nn.Linear(512, 520, bias=False)
        self.value = nn.Linear(512, 520)
        self.out = nn.Linear(520, 512)
        self.head = nn.Linear(512, 300, bias=False)

    def forward(self, x):
        h = nn.functional.gelu(torch.addmm(self.conv1d_bias, x, self.conv1d_weight), approximate="tanh")
        h = h + self.down(nn.functional.gelu(self.up(h)))
        h = h + self.out(nn.functional.silu(self.gate(h)) * self.value(h))
        return self.head(h)


@pytest.mark.parametrize("threads", [1, 2])
def test_tall_products_give_pytorchs_with_their_epilogues(threads):
    # MKL's, oneDNN's just below, MKL's again.
    expect_pytorchs_outputs(TallLayers, 256, (128, 300, 127, 128), threads, max_rows=512)
