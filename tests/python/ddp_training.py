"""A small model using the conv1d custom op, trained with plain SGD: alone,
or as one rank of a DistributedDataParallel group (gloo). The DDP test runs
this file as each of its processes:

    python ddp_training.py RANK WORLD_SIZE PORT PACKAGE OUTPUT
"""

import os
import sys

import torch

from opgraph.torch import CustomOpLibrary

N, K, STEPS, BATCH = 24, 5, 6, 8


class SmoothThenRegress(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        torch.manual_seed(0)
        self.ops = ops
        self.kernel = torch.nn.Parameter(torch.randn(K) / K)
        self.head = torch.nn.Linear(N, 1)

    def forward(self, x):
        smooth = torch.stack([self.ops.conv1d(row, self.kernel, input_size=N, conv_size=K) for row in x])
        return self.head(torch.tanh(smooth)).squeeze(-1)


def data():
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(STEPS, BATCH, N, generator=generator)
    return x, x[..., ::3].sum(-1)


def train(model, rank=0, world_size=1):
    """SGD on each step's batch; each rank takes every world_size-th sample.
    DDP averages the ranks' gradients, so the steps equal those of one
    process on the whole batch."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    inputs, targets = data()
    for x, y in zip(inputs, targets):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x[rank::world_size]), y[rank::world_size])
        loss.backward()
        optimizer.step()


def main(rank, world_size, port, package, output):
    torch.set_num_threads(1)
    torch.distributed.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size
    )
    try:
        model = SmoothThenRegress(CustomOpLibrary(package))
        train(torch.nn.parallel.DistributedDataParallel(model), rank, world_size)
        if rank == 0:
            torch.save(model.state_dict(), output)
        # Both ranks leave together: a rank that tears gloo down while the
        # other still talks to it can abort in gloo's threads on exit.
        torch.distributed.barrier()
    finally:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    # Leave without running C++ static destructors: now and then one of
    # torch's distributed threads is still joinable when they run, and the
    # process aborts ("terminate called without an active exception") after
    # its work is done and saved.
    sys.stdout.flush()
    os._exit(0)
