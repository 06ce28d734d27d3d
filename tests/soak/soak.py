"""Soak test: runs Sessions and op calls many times over and checks that the
process's resident memory stays flat once warm.

    python tests/soak/soak.py [--runs 10000] [--calls 100000] [--tolerance-mb 4] [--no-torch]

The work is done in steps, each one Session run (the models and batch sizes
in turn, the batch a symbolic dimension N) and its share of op calls (a few
ops in turn, half returning new arrays, half writing into out=, and now and
then a call opgraph refuses). Interleaved so, every model, batch size and op
has run many times within the first tenth of the steps: by then caches
(plans per batch size, oneDNN's primitives, weights prepacked) are full, and
any growth after that is memory kept per run. RSS (from /proc/self/statm)
is read at the start, once warm (after the first tenth) and at the end; the
run fails if the end exceeds the warm figure by more than the tolerance, or
if a later result differs from the first one with the same inputs.

tests/python/test_soak.py runs a short version; `make soak` the full one.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import opgraph

BATCHES = (1, 2, 3, 5, 8)  # the sizes N takes, in turn


def rss_bytes():
    """Resident set size: the second field of /proc/self/statm, in pages."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def node(name, op_type, inputs, outputs, **attrs):
    typed = {
        key: {"type": "ints" if isinstance(value, list) else "int", "value": value} for key, value in attrs.items()
    }
    return {"name": name, "op_type": op_type, "inputs": inputs, "outputs": outputs, "attrs": typed}


def graph_model(name, inputs, nodes, weights):
    """An opgraph.Session of a graph written as JSON: `inputs` maps each input to its shape."""
    graph = {
        "name": name,
        "inputs": [{"name": key, "dtype": "float32", "shape": shape} for key, shape in inputs.items()],
        "outputs": [{"name": "y"}],
        "constants": [{"name": key, "dtype": "float32", "shape": list(value.shape)} for key, value in weights.items()],
        "nodes": nodes,
    }
    return opgraph.Session(opgraph.Graph.from_json(json.dumps(graph)), weights=weights)


def cnn():
    """conv2d -> relu -> max_pool2d -> flatten -> linear over x[N, 3, 12, 12]."""
    weights = {
        "conv.w": random((8, 3, 3, 3), 1),
        "conv.b": random((8,), 2),
        "fc.w": random((10, 8 * 6 * 6), 3),
        "fc.b": random((10,), 4),
    }
    nodes = [
        node("conv", "aten::conv2d", ["x", "conv.w", "conv.b"], ["c"], padding=[1, 1]),
        node("relu", "aten::relu", ["c"], ["r"]),
        node("pool", "aten::max_pool2d", ["r"], ["p"], kernel_size=[2, 2]),
        node("flatten", "aten::flatten.using_ints", ["p"], ["f"], start_dim=1),
        node("fc", "aten::linear", ["f", "fc.w", "fc.b"], ["y"]),
    ]
    return "cnn", graph_model("cnn", {"x": ["N", 3, 12, 12]}, nodes, weights), lambda n: [random((n, 3, 12, 12), n)]


def attention():
    """softmax(q kᵀ) v over q, k, v[N, 16, 32], then layer_norm: batched matmuls and reductions."""
    weights = {"ln.w": random((32,), 5), "ln.b": random((32,), 6)}
    nodes = [
        node("kt", "aten::transpose.int", ["k"], ["kt"], dim0=1, dim1=2),
        node("scores", "aten::bmm", ["q", "kt"], ["s"]),
        node("softmax", "aten::softmax.int", ["s"], ["a"], dim=-1),
        node("mix", "aten::bmm", ["a", "v"], ["m"]),
        node("norm", "aten::layer_norm", ["m", "ln.w", "ln.b"], ["y"], normalized_shape=[32]),
    ]
    shape = ["N", 16, 32]
    session = graph_model("attention", {"q": shape, "k": shape, "v": shape}, nodes, weights)
    return "attention", session, lambda n: [random((n, 16, 32), 10 * n + i) for i in range(3)]


def nonzero():
    """nonzero(relu(x)) over x[N, 7]: the output's size is found in each run, and allocated then."""
    nodes = [node("relu", "aten::relu", ["x"], ["r"]), node("nonzero", "aten::nonzero", ["r"], ["y"])]
    return "nonzero", graph_model("nonzero", {"x": ["N", 7]}, nodes, {}), lambda n: [random((n, 7), n)]


def torch_models(folder):
    """Two PyTorch models, extracted with a dynamic batch, saved as .opg and loaded from the file."""
    import torch
    from torch import nn

    from opgraph import ir

    torch.manual_seed(0)
    models = {
        "torch_mlp": (
            nn.Sequential(nn.Linear(24, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, 24), nn.Softmax(dim=-1)),
            (24,),
        ),
        "torch_conv1d": (
            nn.Sequential(
                nn.Conv1d(4, 16, 5, padding=2),
                nn.BatchNorm1d(16),
                nn.ReLU(),
                nn.AdaptiveAvgPool1d(4),
                nn.Flatten(),
                nn.Linear(64, 6),
            ),
            (4, 40),
        ),
    }
    loaded = []
    for name, (model, shape) in models.items():
        model.eval()
        example = torch.randn(3, *shape)
        model_ir = ir.extract_ir(model, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
        path = Path(folder) / f"{name}.opg"
        model_ir.save(path)
        loaded.append((name, opgraph.Session(str(path)), lambda n, shape=shape: [random((n, *shape), n)]))
    return loaded


def op_calls():
    """(op, inputs, attrs) for the calls, with an out= array for each."""
    a, b = random((64, 96), 20), random((96,), 21)
    m1, m2 = random((33, 40), 22), random((40, 17), 23)
    calls = [
        ("aten::add.Tensor", (a, b), {}),
        ("aten::relu", (a,), {}),
        ("aten::softmax.int", (a,), {"dim": 1}),
        ("aten::mm", (m1, m2), {}),
        ("aten::sum.dim_IntList", (a,), {"dim": [0]}),
        ("aten::cat", ([a, a],), {"dim": 0}),
    ]
    return [(op, inputs, attrs, np.empty_like(opgraph.ops.call(op, *inputs, **attrs))) for op, inputs, attrs in calls]


def soak(runs=10_000, calls=100_000, tolerance_mb=4.0, with_torch=True, report=print):
    """Runs the soak; returns its figures (a dict). `ok` says whether RSS stayed flat and results agreed."""
    rss_start = rss_bytes()
    with tempfile.TemporaryDirectory() as folder:
        models = [cnn(), attention(), nonzero()] + (torch_models(folder) if with_torch else [])
        inputs = {(name, n): make(n) for name, _, make in models for n in BATCHES}
        the_calls = op_calls()
        first = {}  # the first result for each (model, batch) and each call
        mismatches = []

        def check(key, result):
            if key not in first:
                first[key] = result
            elif not all(np.array_equal(x, y) for x, y in zip(first[key], result)):
                mismatches.append(key)

        calls_per_run = max(1, calls // runs)
        warm_step = runs // 10
        rss_warm = None
        done_calls = 0
        started = time.perf_counter()
        for step in range(runs):
            if step == warm_step:
                rss_warm = rss_bytes()
            name, session, _ = models[step % len(models)]
            n = BATCHES[(step // len(models)) % len(BATCHES)]
            outputs = session.run(*inputs[(name, n)])
            # Each (model, batch) is compared with its first result now and then: an equal run is all a soak asks.
            if step % 97 == 0 or step < len(models) * len(BATCHES):
                check((name, n), outputs)
            for k in range(calls_per_run):
                op, args, attrs, out = the_calls[done_calls % len(the_calls)]
                if k % 2:
                    result = opgraph.ops.call(op, *args, out=out, **attrs)
                else:
                    result = opgraph.ops.call(op, *args, **attrs)
                if done_calls % 1009 < len(the_calls):
                    check(op, [np.array(result)])
                done_calls += 1
            if step % 50 == 0:  # an error's message and exception, built and dropped
                try:
                    opgraph.ops.call("aten::mm", the_calls[3][1][0], the_calls[3][1][0])
                except opgraph.Error:
                    pass
        elapsed = time.perf_counter() - started
        rss_end = rss_bytes()
        del models, inputs, the_calls
        first.clear()
    growth = rss_end - (rss_warm if rss_warm is not None else rss_start)
    figures = {
        "runs": runs,
        "calls": done_calls,
        "seconds": elapsed,
        "runs_per_second": runs / elapsed,
        "calls_per_second": done_calls / elapsed,
        "rss_start_mb": rss_start / 2**20,
        "rss_warm_mb": (rss_warm or rss_start) / 2**20,
        "rss_end_mb": rss_end / 2**20,
        "growth_mb": growth / 2**20,
        "tolerance_mb": tolerance_mb,
        "mismatches": mismatches,
    }
    figures["ok"] = growth <= tolerance_mb * 2**20 and not mismatches
    report(
        f"soak: {runs} Session runs and {done_calls} op calls in {elapsed:.2f} s "
        f"({figures['runs_per_second']:.0f} runs/s with their calls, {figures['calls_per_second']:.0f} calls/s)"
    )
    report(
        f"soak: RSS {figures['rss_start_mb']:.1f} MB at start (before the models load), "
        f"{figures['rss_warm_mb']:.1f} MB warm (after {warm_step} steps), {figures['rss_end_mb']:.1f} MB at the end: "
        f"{figures['growth_mb']:+.2f} MB since warm, {growth / max(1, runs - warm_step):+.0f} bytes a step "
        f"(tolerance {tolerance_mb} MB)"
    )
    if mismatches:
        report(f"soak: results that changed between runs: {mismatches}")
    report("soak: " + ("flat" if figures["ok"] else "FAILED"))
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="Session runs (default 10000)")
    parser.add_argument("--calls", type=int, default=100_000, help="op calls (default 100000)")
    parser.add_argument("--tolerance-mb", type=float, default=4.0, help="RSS growth allowed once warm (default 4)")
    parser.add_argument("--no-torch", action="store_true", help="leave out the models extracted from PyTorch")
    args = parser.parse_args(argv)
    figures = soak(args.runs, args.calls, args.tolerance_mb, with_torch=not args.no_torch)
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
