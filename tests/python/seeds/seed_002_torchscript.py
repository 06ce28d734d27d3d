"""Seed 002 (TorchScript custom C++ ops, warp_perspective): the seed's
Python code. Its op library is an opgraph package here (examples/
warp_perspective, namespace my_ops as in the seed), so the seed's
``torch.ops.load_library("libwarp_perspective.so")`` is
``opgraph.torch.load_library(<that package>)``; every other line is the
seed's. The seed includes its test.py by reference (literalinclude) and
shows what it prints: the preamble's call, then the traced graphs of
compute(x, y, z) for x 4x8, y 8x5 and z 4x5, then with warp_perspective
(an 8x8 output, so z is 8x5). Those parts are PyTorch's tutorial test.py.
"""
from pathlib import Path

import torch

import opgraph.torch

WARP_PERSPECTIVE = Path(__file__).resolve().parents[3] / "examples" / "warp_perspective"

# BEGIN preamble
opgraph.torch.load_library(WARP_PERSPECTIVE)
print(torch.ops.my_ops.warp_perspective(torch.randn(32, 32), torch.rand(3, 3)))
# END preamble


# BEGIN compute
def compute(x, y, z):
    return x.matmul(y) + torch.relu(z)
# END compute


# BEGIN trace
inputs = [torch.randn(4, 8), torch.randn(8, 5), torch.randn(4, 5)]
trace = torch.jit.trace(compute, inputs)
print(trace.graph)
# END trace


# BEGIN compute2
def compute(x, y, z):
    x = torch.ops.my_ops.warp_perspective(x, torch.eye(3))
    return x.matmul(y) + torch.relu(z)
# END compute2


# BEGIN trace2
inputs = [torch.randn(4, 8), torch.randn(8, 5), torch.randn(8, 5)]
trace = torch.jit.trace(compute, inputs)
print(trace.graph)
# END trace2

# The scripted compute(x, y), as the seed writes it. bool(x[0] == 42) needs
# one element in x[0], so x is a column here (the seed shows no call).
opgraph.torch.load_library(WARP_PERSPECTIVE)


@torch.jit.script
def compute(x, y):
    if bool(x[0] == 42):
        z = 5
    else:
        z = 10
    x = torch.ops.my_ops.warp_perspective(x, torch.eye(3))
    return x.matmul(y) + z


print(compute.graph)
print(compute(torch.randn(4, 1), torch.randn(8, 5)).shape)
