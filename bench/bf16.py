"""Session(..., precision="bf16") on the real-size models against float32
and against OpenVINO's bf16 inference precision (its default on a CPU that
multiplies bfloat16), all measured in this process.

Rows: the real-size models (bench/real_models.py) at their batches, at 1 and
2 threads. Paths: opgraph.Session on the model's .opg in float32 and in
bf16; OpenVINO (bench/openvino_peer.py, from the model's torch.export program)
with the f32 and the bf16 precision hint. Timing and the thread check are
bench/models.py's (bench/timing.py): interleaved rounds, the median call.

Each bf16 path's error is its output's largest difference from eager
PyTorch's float32 output, over that output's largest magnitude ("err"
columns); float32 paths stay within bench/models.py's TOLERANCE of eager, or
the row is not timed. The ratio in the OpenVINO bf16 column is its time over
opgraph bf16's: above 1, opgraph is faster.

    python bench/bf16.py [--models bert-base resnet50 ...] [--threads 1 2] [--rounds 5] [--budget 2]
"""

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import openvino
import torch
from models import TOLERANCE, _arrays
from openvino_peer import openvino_call, openvino_model
from peak import cpu_description
from real_models import REAL_MODELS
from timing import interleaved, print_thread_flags, usage_columns

import opgraph
from opgraph import ir

PATHS = ["opgraph f32", "opgraph bf16", "OpenVINO f32", "OpenVINO bf16"]


def relative_error(got, expected):
    """The largest difference of ``got``'s outputs from ``expected``'s over each output's largest magnitude."""
    errors = []
    for a, e in zip(_arrays(got), expected):
        scale = float(np.max(np.abs(e), initial=0.0))
        errors.append(float(np.max(np.abs(a.astype(np.float64) - e), initial=0.0)) / max(scale, 1e-30))
    return max(errors)


def calls(opg, ov_model, inputs, threads):
    """path -> a function making one call of the model on that path."""

    def session(precision):
        run = opgraph.Session(str(opg), threads=threads, precision=precision).run
        return lambda: run(*inputs)

    return {
        "opgraph f32": session("f32"),
        "opgraph bf16": session("bf16"),
        "OpenVINO f32": openvino_call(ov_model, inputs, threads, "f32"),
        "OpenVINO bf16": openvino_call(ov_model, inputs, threads, "bf16"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(REAL_MODELS), choices=list(REAL_MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per row (default: 5)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timed calls per path and row, about")
    args = parser.parse_args()
    if not opgraph.cpu_has_bf16():
        raise SystemExit("this CPU does not multiply bfloat16 (AVX-512 BF16 or AMX): precision='bf16' cannot run")
    print(
        f"opgraph {opgraph.__version__}, torch {torch.__version__}, openvino {openvino.__version__.split('-')[0]}; "
        f"{cpu_description()}, {os.cpu_count()} cores; median ms per call over {args.rounds} interleaved rounds; err: a bf16 path's "
        "largest difference from eager float32 over the output's largest magnitude; (ratio): OpenVINO bf16's "
        "time / opgraph bf16's; cpu/wall per path in the order of the columns, ! where it does not fit\n"
    )
    print(
        f"{'model':<20} {'batch':>5} {'threads':>7} {'opgraph f32':>11} {'opgraph bf16':>12} {'err':>8} "
        f"{'OpenVINO f32':>12} {'OpenVINO bf16':>22} {'err':>8}   cpu/wall"
    )
    flags = []
    for name, (build, batches) in REAL_MODELS.items():
        if name not in args.models:
            continue
        for batch in batches:
            model, inputs = build(batch=batch)
            with tempfile.TemporaryDirectory() as folder, torch.no_grad():
                opg = Path(folder) / "model.opg"
                ir.extract_ir(model, inputs).save(opg)
                ov_model, _ = openvino_model(model, inputs)
                expected = _arrays(model(*inputs))
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    paths = calls(opg, ov_model, inputs, threads)
                    errors = {path: relative_error(call(), expected) for path, call in paths.items()}
                    for path in ("opgraph f32", "OpenVINO f32"):
                        if not errors[path] <= TOLERANCE:
                            raise RuntimeError(f"{name}: {path} is off by {errors[path]:.3g} of the output's scale")
                    times = dict(zip(paths, interleaved(list(paths.values()), rounds=args.rounds, budget=args.budget)))
                    usage = usage_columns(times, threads, f"{name} batch {batch}, {threads} thread(s)", flags)
                    ms = {path: times[path].seconds * 1e3 for path in PATHS}
                    ratio = ms["OpenVINO bf16"] / ms["opgraph bf16"]
                    print(
                        f"{name:<20} {batch:>5} {threads:>7} {ms['opgraph f32']:>11.2f} {ms['opgraph bf16']:>12.2f} "
                        f"{errors['opgraph bf16']:>8.1e} {ms['OpenVINO f32']:>12.2f} "
                        f"{ms['OpenVINO bf16']:>13.2f} ({ratio:5.2f}x) {errors['OpenVINO bf16']:>8.1e}   "
                        f"{usage}",
                        flush=True,
                    )
    print_thread_flags(flags)


if __name__ == "__main__":
    main()
