"""A model using a custom op trained with DistributedDataParallel (gloo, two
processes on 127.0.0.1) ends with the weights of a single-process run."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import torch
from ddp_training import SmoothThenRegress, train

from opgraph.torch import CustomOpLibrary

HERE = Path(__file__).resolve().parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_matches_single_process(tmp_path, conv1d_package):
    output, port, world_size = tmp_path / "ddp.pt", free_port(), 2
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), *sys.path])}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "ddp_training.py"),
                str(rank),
                str(world_size),
                str(port),
                str(conv1d_package),
                str(output),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment,
        )
        for rank in range(world_size)
    ]
    logs = [worker.communicate(timeout=120)[0] for worker in workers]
    assert all(worker.returncode == 0 for worker in workers), "\n".join(logs)

    single = SmoothThenRegress(CustomOpLibrary(conv1d_package))
    initial = {name: p.detach().clone() for name, p in single.named_parameters()}
    train(single)
    distributed = torch.load(output)
    for name, weight in single.state_dict().items():
        assert not torch.equal(weight, initial[name])  # training moved it
        torch.testing.assert_close(distributed[name], weight, rtol=0, atol=1e-5)
