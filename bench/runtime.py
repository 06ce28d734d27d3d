"""The graph executor against its peers, in the same process.

Per-node overhead: a chain of 1000 aten::relu nodes on a float32[16] tensor,
run by opgraph.Session from Python and by the `opgraph bench` command (C++,
no Python), against the same 1000 torch.relu calls in eager mode; the kernel
itself is a few nanoseconds, so the time per node is what the run loop costs.
No graph pass merges a relu of a relu: the Session runs all 1000 nodes, which
the benchmark checks, so that a pass that did would fail it rather than make
the figure too good.

Batch-1 latency: a 3-layer MLP (784-512-512-10) and a small CNN, built as
opgraph graphs with the weights of the torch model, against torch eager and
ONNX Runtime on the model exported with torch.onnx; outputs are checked to
agree first. Each library runs with the same thread count, in blocks of calls
that alternate between the libraries round after round (bench/timing.py);
each figure is the median of all rounds' calls. Ratios above 1 mean opgraph
is faster.
"""

import argparse
import os
import re
import subprocess
import tempfile
from pathlib import Path

# torch's and oneDNN's OpenMP threads would otherwise spin for milliseconds
# after each parallel region on the cores the next library's call runs on
# (see bench/ops.py). Set before torch and opgraph load their runtimes.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import numpy as np
import onnxruntime
import torch
from onnx_peer import onnx_model, onnx_session
from timing import interleaved

import opgraph
from opgraph.cli import executable as opgraph_cli
from opgraph.graph import DType, Graph, TensorType, ops

CHAIN = 1000


# ---- per-node overhead -----------------------------------------------------


def relu_chain():
    with Graph("relu_chain", input_types=[TensorType(DType.float32, [16])]) as graph:
        value = graph.inputs[0]
        for _ in range(CHAIN):
            value = ops.relu(value)
        graph.output(value)
    return graph


def cli_seconds_per_run(path, threads, iterations=2000):
    result = subprocess.run(
        [
            str(opgraph_cli()),
            "bench",
            str(path),
            "--threads",
            str(threads),
            "--warmup",
            "200",
            "--iters",
            str(iterations),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(re.search(r"^p50: ([0-9.]+) ms", result.stdout, re.MULTILINE).group(1)) / 1e3


def overhead_rows(threads, folder):
    graph = relu_chain()
    session = opgraph.Session(graph.to_graph(), threads=threads)
    kept = len(session.graph.nodes)
    assert kept == CHAIN, f"the Session runs {kept} of the chain's {CHAIN} nodes: the figure would not be per node"
    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    (y,) = session.run(x)
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    path = Path(folder) / "relu_chain.opg"
    graph.save(path)

    x_torch = torch.from_numpy(x)

    def torch_chain():
        value = x_torch
        for _ in range(CHAIN):
            value = torch.relu(value)
        return value

    python, eager = (t.seconds for t in interleaved([lambda: session.run(x), torch_chain], budget=0.3))
    cli = cli_seconds_per_run(path, threads)
    print(f"\nper-node overhead: {CHAIN} x aten::relu on float32[16], {threads} thread(s); µs per node")
    print(f"  {'':<34} {'opgraph':>10} {'torch eager':>12} {'ratio':>8}")
    for label, ours in (("Session.run from Python", python), ("opgraph bench (C++ CLI)", cli)):
        print(f"  {label:<34} {ours / CHAIN * 1e6:10.4f} {eager / CHAIN * 1e6:12.4f} {eager / ours:7.1f}x")


# ---- batch-1 models --------------------------------------------------------


def mlp_model():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )


def cnn_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    )


def opgraph_graph(model, input_shape):
    """The torch Sequential `model` as an opgraph graph with its weights."""

    def parameter(tensor):
        return ops.constant(tensor.detach().numpy().copy())

    with Graph(type(model).__name__, input_types=[TensorType(DType.float32, input_shape)]) as graph:
        value = graph.inputs[0]
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                value = ops.linear(value, parameter(layer.weight), parameter(layer.bias))
            elif isinstance(layer, torch.nn.Conv2d):
                value = ops.conv2d(
                    value,
                    parameter(layer.weight),
                    parameter(layer.bias),
                    stride=list(layer.stride),
                    padding=list(layer.padding),
                )
            elif isinstance(layer, torch.nn.ReLU):
                value = ops.relu(value)
            elif isinstance(layer, torch.nn.MaxPool2d):
                value = ops.max_pool2d(value, layer.kernel_size)
            elif isinstance(layer, torch.nn.AdaptiveAvgPool2d):
                value = ops.call("aten::adaptive_avg_pool2d", value, output_size=[layer.output_size] * 2)
            elif isinstance(layer, torch.nn.Flatten):
                value = ops.flatten(value, start_dim=layer.start_dim)
            else:
                raise TypeError(f"opgraph_graph: no translation for {layer}")
        graph.output(value)
    return graph


def model_rows(name, model, input_shape, thread_counts):
    model = model.eval()
    graph = opgraph_graph(model, input_shape)
    x = np.random.default_rng(1).standard_normal(input_shape).astype(np.float32)
    x_torch = torch.from_numpy(x)
    with torch.inference_mode():
        expected = model(x_torch).numpy()
    exported = onnx_model(model, (x_torch,))
    for threads in thread_counts:
        torch.set_num_threads(threads)
        session = opgraph.Session(graph.to_graph(), weights=graph.constants, threads=threads)
        ort = onnx_session(exported, threads)
        feeds = {ort.get_inputs()[0].name: x}
        (ours,) = session.run(x)
        (theirs,) = ort.run(None, feeds)
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(theirs, expected, rtol=1e-4, atol=1e-5)

        def eager():
            with torch.inference_mode():
                return model(x_torch)

        seconds = [
            t.seconds for t in interleaved([lambda: session.run(x), eager, lambda: ort.run(None, feeds)], budget=0.3)
        ]
        ours, torch_time, ort_time = (s * 1e6 for s in seconds)
        print(
            f"  {name:<28} {threads:>7} {ours:10.1f} {torch_time:10.1f} {ort_time:10.1f} "
            f"{torch_time / ours:9.2f}x {ort_time / ours:9.2f}x"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts (default: 1 2)")
    args = parser.parse_args()
    print(
        f"opgraph {opgraph.__version__}, torch {torch.__version__}, onnxruntime {onnxruntime.__version__}; "
        f"{os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory() as folder:
        overhead_rows(1, folder)
        print("\nbatch-1 latency, µs per run (median over 5 interleaved rounds); ratios: their time / opgraph's")
        print(
            f"  {'model':<28} {'threads':>7} {'opgraph':>10} {'torch':>10} {'ORT':>10} {'vs torch':>10} {'vs ORT':>10}"
        )
        model_rows("MLP 784-512-512-10", mlp_model(), [1, 784], args.threads)
        model_rows("CNN 1x28x28 (2 conv, pools)", cnn_model(), [1, 1, 28, 28], args.threads)


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
