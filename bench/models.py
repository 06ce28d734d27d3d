"""Whole models on opgraph's C++ runtime against PyTorch eager, torch.compile,
ONNX Runtime and OpenVINO, all measured in this process.

Rows: each model of the IR tests (tests/python/ir_models.py), at batch 1 and
32, and each real-size model (bench/real_models.py: BERT-base, GPT-2 small, a
SmolLM-135M-shaped Llama, ViT-B/16, ResNet-50, MobileNetV2, Whisper-tiny's
encoder, two-layer LSTM and GRU encoders; published configs, random weights)
at its own batches, the rows that count; each at 1 and 2 threads.

Paths: opgraph.Session running the model's .opg (extracted with
opgraph.ir.extract_ir); the model in eager mode and under torch.compile, with
torch.set_num_threads; ONNX Runtime (bench/onnx_peer.py) with that many
intra-op threads; OpenVINO (bench/openvino_peer.py) converted from the
model's torch.export program (from the ONNX bytes where that fails),
compiled for the CPU with the f32 precision hint, that many inference
threads, the latency hint and one stream. Every path's output is checked
against eager's first: a path off by more than TOLERANCE of the output's
largest magnitude is reported as wrong and not timed, as is a path that
cannot run the model (a custom op ONNX cannot export, an op a runtime lacks).

Timing (bench/timing.py): the paths run in interleaved rounds, each a block
of calls per path; a figure is the median of all of a path's timed calls
over all rounds, and each peer's is printed with its ratio to opgraph's
(the peer's time / opgraph's: above 1, opgraph is faster). The cpu/wall
columns give each path's process CPU time per wall second over its timed
calls, flagged with "!" (and listed at the end) where it does not fit the
row's thread count (see timing.check_threads: more cores busy than threads
anywhere, or under 60% of them on a real-size row), and the "others" column
the most cores the rest of the machine kept busy during any path's calls:
where it is high, the row's cores were not all opgraph's and its peers'.
Every library's threads keep their defaults, as a user running it alone has
them (OMP_WAIT_POLICY as the environment sets it, printed): torch's and
oneDNN's OpenMP threads spin a while after each parallel region and then
sleep, as ONNX Runtime's and OpenVINO's pools do after each call; each block
starts timing.interleaved's `settle` after the previous path's, when those
threads have gone to sleep. OMP_WAIT_POLICY=passive makes OpenMP's threads
(opgraph's included: its kernels run on the calling thread's OpenMP team)
sleep at once instead, and each parallel region then wakes them: MobileNetV2's
52 small convolutions took longer on two threads than on one.

Throughput: opgraph's GFLOP/s counts the matrix products and convolutions of
the extracted graph (mm, bmm, addmm, linear, matmul, convolutions, and
scaled_dot_product_attention's two products, causal or not, counted in
full), one multiply-add as two FLOPs; "peak" is that against the row's
threads times one core's float32 FMA peak (bench/peak.py, measured at start
with as many threads). A convolution counts as its direct form's
multiply-adds: the Winograd kernels of 3x3 ones do fewer, so a CNN's figure
can pass 100%. Also the time to extract the IR and save the .opg.

    python bench/models.py [--models mlp bert-base ...] [--batches 1 32] [--threads 1 2]
                           [--rounds 5] [--budget 2]
"""

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime
import openvino
import torch
from onnx_peer import onnx_model, onnx_session
from openvino_peer import openvino_call, openvino_model
from peak import cpu_description, measure_peak
from timing import check_threads, interleaved

import opgraph
from opgraph import arguments, ir

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the models the IR tests check
import ir_models  # noqa: E402
from real_models import REAL_MODELS  # noqa: E402

MODELS = ["mlp", "cnn", "resnet18", "transformer_encoder", "gated_mlp", "bert", "gpt2", "vit"]
PATHS = ["opgraph", "eager", "torch.compile", "onnxruntime", "openvino"]
SHORT = {"opgraph": "og", "eager": "ea", "torch.compile": "tc", "onnxruntime": "ort", "openvino": "ov"}

# A path is wrong when its output is off by more than this fraction of the
# output's largest magnitude: loose, as float32 sums reassociated over a deep
# model drift by far less, while a wrong kernel is off by the output's scale.
TOLERANCE = 1e-2


def rows(names, batches):
    """(name, batch, build) for each row: test-sized models at ``batches``, real-size ones at their own."""
    for name in names:
        if name in REAL_MODELS:
            build, own_batches = REAL_MODELS[name]
            yield from ((name, batch, build) for batch in own_batches)
        else:
            yield from ((name, batch, getattr(ir_models, name)) for batch in batches)


# ---- FLOPs of the extracted graph ------------------------------------------


def _numel(shape):
    return math.prod(shape)


# The ops node_flops counts, by name without namespace and overload.
FLOP_OPS = {
    *("mm", "bmm", "matmul", "addmm", "linear"),
    *("convolution", "conv1d", "conv2d", "conv3d", "scaled_dot_product_attention"),
}


def node_flops(node, values):
    """The FLOPs of one graph node's matrix products or convolution (0 for any other op); ``values``
    holds every value's ValueInfo by name."""
    op = node.op_type.partition("::")[2].split(".")[0]  # "aten::addmm" -> "addmm"
    if op not in FLOP_OPS:
        return 0
    tensor_arguments = [argument.name for argument in arguments.of_ir_op(node.op_type) if argument.is_tensor]
    inputs = dict(zip(tensor_arguments, node.inputs))

    def tensor(name):
        return values[inputs[name].values[0]].shape

    out = values[node.outputs[0]].shape
    if op in ("mm", "bmm", "matmul"):
        return 2 * _numel(out) * tensor("self")[-1]
    if op == "addmm":
        return 2 * _numel(out) * tensor("mat1")[-1]
    if op == "linear":
        return 2 * _numel(out) * tensor("input")[-1]
    if op in ("convolution", "conv1d", "conv2d", "conv3d"):
        weight = tensor("weight")
        # Each output (each input, transposed) element takes weight.numel / weight.shape[0] multiply-adds.
        per_element = _numel(weight) // weight[0]
        return 2 * per_element * _numel(tensor("input") if node.attrs.get("transposed") else out)
    query, key, value = tensor("query"), tensor("key"), tensor("value")  # scaled_dot_product_attention
    return 2 * _numel(query[:-1]) * key[-2] * (query[-1] + value[-1])


def graph_flops(model_ir):
    """The FLOPs of one run of ``model_ir``'s matrix products and convolutions; None when a shape is symbolic."""
    shapes = [value.shape for value in model_ir.values.values()]
    if not all(isinstance(size, int) for shape in shapes for size in shape):
        return None
    return sum(node_flops(node, model_ir.values) for node in model_ir.nodes)


# ---- the paths -------------------------------------------------------------


def _arrays(output):
    """A path's output as a list of NumPy arrays."""
    if isinstance(output, torch.Tensor):
        return [output.numpy()]
    return [np.asarray(x.numpy() if isinstance(x, torch.Tensor) else x) for x in output]


def mismatch(got, expected):
    """Why ``got`` (a path's outputs) is not ``expected`` (eager's), or "" when it agrees."""
    got = _arrays(got)
    if len(got) != len(expected):
        return f"{len(got)} outputs, eager gives {len(expected)}"
    for k, (a, e) in enumerate(zip(got, expected)):
        if a.shape != e.shape:
            return f"output {k}: shape {list(a.shape)}, eager gives {list(e.shape)}"
        error = float(np.max(np.abs(a.astype(np.float64) - e), initial=0.0))
        scale = float(np.max(np.abs(e), initial=0.0))
        if not error <= TOLERANCE * scale:  # NaN fails too
            return f"output {k}: off by {error:.3g}, largest magnitude {scale:.3g}"
    return ""


class Peers:
    """The runnable form of one model at one batch on every path, or why a path cannot run it."""

    def __init__(self, model, inputs, folder):
        self.model, self.inputs, self.skipped = model, inputs, {}
        start = time.perf_counter()
        model_ir = ir.extract_ir(model, inputs)
        self.opg = Path(folder) / "model.opg"
        model_ir.save(self.opg)
        self.extract_seconds = time.perf_counter() - start
        self.flops = graph_flops(model_ir)
        with torch.no_grad():
            self.expected = _arrays(model(*inputs))
        self.compiled = self._try("torch.compile", lambda: torch.compile(model))
        custom = sorted({n.op_type for n in model_ir.nodes if not n.op_type.startswith("aten::")})
        self.onnx = self.openvino = None
        if custom:  # the exporters fail on them, printing their whole graph
            for path in ("onnxruntime", "openvino"):
                self.skipped[path] = f"no ONNX or OpenVINO kernel for the custom ops {', '.join(custom)}"
        else:
            self.onnx = self._try("onnxruntime", lambda: onnx_model(model, inputs))
            self.openvino = self._try("openvino", lambda: openvino_model(model, inputs, self.onnx))

    def _try(self, path, make):
        try:
            return make()
        except Exception as e:
            self.skipped[path] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:160]}"
            return None

    def _onnx_call(self, threads):
        session = onnx_session(self.onnx, threads)
        granted = session.get_session_options().intra_op_num_threads
        if granted != threads:
            raise RuntimeError(f"ONNX Runtime runs on {granted} threads, {threads} asked for")
        feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), self.inputs)}
        return lambda: session.run(None, feeds)

    def _makers(self, threads):
        """path -> a function making the path's call at ``threads`` threads (None where skipped)."""

        def opgraph_call():
            session = opgraph.Session(str(self.opg), threads=threads)
            return lambda: session.run(*self.inputs)

        ov_model = None if self.openvino is None else self.openvino[0]
        return {
            "opgraph": opgraph_call,
            "eager": lambda: lambda: self.model(*self.inputs),
            "torch.compile": None if self.compiled is None else lambda: lambda: self.compiled(*self.inputs),
            "onnxruntime": None if self.onnx is None else lambda: self._onnx_call(threads),
            "openvino": None if ov_model is None else lambda: openvino_call(ov_model, self.inputs, threads),
        }

    def timings(self, threads, rounds, budget):
        """path -> its Timing at ``threads`` threads, for the paths that run and agree with eager."""
        torch.set_num_threads(threads)
        if torch.get_num_threads() != threads:
            raise RuntimeError(f"torch runs on {torch.get_num_threads()} threads, {threads} asked for")
        with torch.no_grad():
            calls = {}
            for path, make in self._makers(threads).items():
                call = None if make is None else self._try(path, make)
                wrong = None if call is None else self._try(path, lambda: mismatch(call(), self.expected))
                if wrong:
                    self.skipped[path] = f"wrong output, not timed: {wrong}"
                elif wrong is not None:
                    calls[path] = call
            timings = interleaved(list(calls.values()), rounds=rounds, budget=budget)
        # opgraph's oneDNN kernels set OpenMP's thread count too: torch's must still be the row's.
        if torch.get_num_threads() != threads:
            raise RuntimeError(f"torch ran on {torch.get_num_threads()} threads, {threads} asked for")
        return dict(zip(calls, timings))


# ---- the table -------------------------------------------------------------


def cell(peer, ours):
    """A peer's ms and its ratio to opgraph's."""
    if peer is None:
        return f"{'-':>17}"
    return (
        f"{peer.seconds * 1e3:8.3f} ({peer.seconds / ours.seconds:5.2f}x)"
        if ours
        else f"{peer.seconds * 1e3:8.3f} {'':>8}"
    )


def throughput(flops, ours, peak):
    """opgraph's GFLOP/s and its fraction of the FMA peak of ``peak.threads`` cores."""
    if not flops or ours is None:
        return f"{'-':>8} {'-':>6}"
    gflops = flops / ours.seconds / 1e9
    return f"{gflops:8.1f} {gflops / (peak.threads * peak.fma_gflops_per_core):6.1%}"


def busy_elsewhere(times):
    """The most cores other processes kept busy while any path of a row ran, or "-" where unknown."""
    others = [t.others_per_wall for t in times.values() if t.others_per_wall is not None]
    return f"{max(others):6.2f}" if others else f"{'-':>6}"


def others_note(others_per_wall):
    return "" if others_per_wall is None else f" (other processes kept {others_per_wall:.2f} cores busy meanwhile)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = MODELS + list(REAL_MODELS)
    parser.add_argument("--models", nargs="+", default=names, choices=names)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per row (default: 5)")
    parser.add_argument(
        "--budget",
        type=float,
        default=2.0,
        help="seconds of timed calls per path and row, about (default: 2; at least a call a round)",
    )
    args = parser.parse_args()
    print(
        f"opgraph {opgraph.__version__} (CPU capability {opgraph.get_cpu_capability()}), torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, openvino {openvino.__version__.split('-')[0]}; "
        f"{os.cpu_count()} cores, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset (the default)')}\n"
        f"CPU: {cpu_description()}"
    )
    peaks = {threads: measure_peak(threads) for threads in args.threads}
    print(
        "peak (bench/peak.py): "
        + "; ".join(
            f"{p.threads} thread(s): {p.fma_gflops_per_core:.1f} GFLOP/s FMA {p.isa} per core "
            f"({p.fma_gflops:.1f} all threads per wall second), triad {p.triad_gbs:.1f} GB/s"
            for p in peaks.values()
        )
    )
    print(
        f"median ms per call over {args.rounds} interleaved rounds; (ratio) = the peer's time / opgraph.Session's: "
        f"above 1, opgraph is faster; peak = opgraph's GFLOP/s / (threads x the FMA peak per core)"
    )
    print(
        "cpu/wall: process CPU seconds per wall second of each path's calls "
        f"({'/'.join(SHORT[p] for p in PATHS)}), ! where it does not fit the thread count; others: the most cores\n"
        "the rest of the machine kept busy meanwhile, over the paths (a shared machine's cores are not all ours)\n"
    )
    print(
        f"{'model':<20} {'batch':>5} {'threads':>7} {'opgraph ms':>10} {'GFLOP/s':>8} {'peak':>6} "
        f"{'eager ms':>17} {'compile ms':>17} {'ORT ms':>17} {'OpenVINO ms':>17}   {'cpu/wall':<29} {'others':>6} "
        f"{'extract+save s':>7}"
    )
    ir.extract_ir(torch.nn.ReLU(), (torch.zeros(1),))  # torch.export's one-time start-up is no model's cost
    skipped, flags = {}, []
    for name, batch, build in rows(args.models, args.batches):
        model, inputs = build(batch=batch)
        with tempfile.TemporaryDirectory() as folder:
            peers = Peers(model, inputs, folder)
            for threads in args.threads:
                times = peers.timings(threads, args.rounds, args.budget)
                ours = times.get("opgraph")
                usage = []
                for path in PATHS:
                    if path not in times:
                        usage.append(f"{'-':>5}")
                        continue
                    flag = check_threads(times[path].cpu_per_wall, threads, parallel_work=name in REAL_MODELS)
                    usage.append(f"{times[path].cpu_per_wall:4.2f}{'!' if flag else ' '}")
                    if flag:
                        flags.append(
                            f"  {name} batch {batch}, {threads} thread(s), {path}: "
                            f"cpu/wall {times[path].cpu_per_wall:.2f}, {flag}"
                            f"{others_note(times[path].others_per_wall)}"
                        )
                print(
                    f"{name:<20} {batch:>5} {threads:>7} {ours.seconds * 1e3 if ours else float('nan'):>10.3f} "
                    f"{throughput(peers.flops, ours, peaks[threads])} "
                    f"{cell(times.get('eager'), ours)} {cell(times.get('torch.compile'), ours)} "
                    f"{cell(times.get('onnxruntime'), ours)} {cell(times.get('openvino'), ours)}   "
                    f"{' '.join(usage):<29} {busy_elsewhere(times)} {peers.extract_seconds:>7.2f}",
                    flush=True,
                )
            if peers.openvino is not None and peers.openvino[1] != "torch.export":
                skipped.setdefault((name, "openvino"), f"converted from {peers.openvino[1]} (torch.export failed)")
            for path, reason in peers.skipped.items():
                skipped.setdefault((name, path), reason)
    if flags:
        print("\nthread check (cpu/wall outside the bounds of bench/timing.py's check_threads):")
        print("\n".join(flags))
    if skipped:
        print("\nskipped or noted:")
        for (name, path), reason in skipped.items():
            print(f"  {name} on {path}: {reason}")


if __name__ == "__main__":
    main()
