"""GatedMLP: a PyTorch model whose gate is ``custom::fused_gate`` from the op
package in op/, registered with PyTorch by ``opgraph.torch.CustomOpLibrary``
(so the model runs, exports and trains in PyTorch like any other)."""

import functools
from pathlib import Path

import torch
from torch import nn

from opgraph.torch import CustomOpLibrary

HERE = Path(__file__).resolve().parent


@functools.cache
def fused_gate_ops() -> CustomOpLibrary:
    """Builds the package (once; later calls reuse the build) and registers torch.ops.custom.fused_gate."""
    return CustomOpLibrary(HERE)


class GatedMLP(nn.Module):
    """A gated feed-forward block: out(sigmoid(gate(x)) * value(x))."""

    def __init__(self, features=256, hidden=1024):
        super().__init__()
        fused_gate_ops()
        self.gate = nn.Linear(features, hidden)
        self.value = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, features)

    def forward(self, x):
        return self.out(torch.ops.custom.fused_gate(self.gate(x), self.value(x)))
