"""Products whose weight is a Session's constant (linear, addmm, mm,
matmul) run on a copy of the weight in oneDNN's layout, made at the first
run and shared by every batch size: outputs as PyTorch's, run after run and
size after size, with weights transposed or not."""

import numpy as np
import torch
from torch import nn

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
