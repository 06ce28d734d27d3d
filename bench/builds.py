"""opgraph against an earlier build of itself, for a change that must keep its speed.

Each real-size model (bench/real_models.py, batch 1) is extracted once and
saved as an .opg file, with a chain of 1000 aten::relu nodes on a float32[16]
tensor whose time per node is the run loop's overhead. Then, for each model
and thread count, `opgraph bench` of the baseline build and of this one run
the same file in alternation, round after round, and the table gives each
one's median p50 and their ratio (below 1: this build is faster). Both read
the inputs `opgraph bench` fills at random.

    cmake -S . -B build/base -G Ninja -DOPGRAPH_BUILD_PYTHON=OFF -DOPGRAPH_BUILD_TESTS=OFF  # at the baseline commit
    cmake --build build/base --target opgraph_cli
    .venv/bin/python bench/builds.py --baseline <baseline checkout>/build/base/tools/cli/opgraph
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the zoo's model helpers real_models builds on

from real_models import REAL_MODELS  # noqa: E402

from opgraph import ir  # noqa: E402
from opgraph.cli import executable  # noqa: E402
from opgraph.graph import DType, Graph, TensorType, ops  # noqa: E402

CHAIN = 1000
# Timed runs per `opgraph bench` call: about a second of each model at 1 thread.
ITERATIONS = {"relu-chain": 2000, "mobilenet-v2": 100, "lstm-2x256": 200, "gru-2x256": 200, "resnet50": 20}


def relu_chain(path):
    with Graph("relu_chain", input_types=[TensorType(DType.float32, [16])]) as graph:
        value = graph.inputs[0]
        for _ in range(CHAIN):
            value = ops.relu(value)
        graph.output(value)
    graph.save(path)


def p50_ms(cli, path, threads, iterations):
    warmup = "200" if iterations > 100 else "3"
    command = [str(cli), "bench", str(path), "--threads", str(threads), "--warmup", warmup, "--iters", str(iterations)]
    printed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return float(re.search(r"^p50: ([0-9.]+) ms", printed, re.MULTILINE).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, type=Path, help="the earlier build's opgraph executable")
    parser.add_argument(
        "--models", nargs="+", default=["relu-chain", *REAL_MODELS], choices=["relu-chain", *REAL_MODELS]
    )
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds per row (default: 3)")
    args = parser.parse_args()
    if not os.access(args.baseline, os.X_OK):
        parser.error(f"--baseline: {args.baseline} is not an executable")

    with tempfile.TemporaryDirectory() as folder:
        files = {}
        for name in args.models:
            files[name] = Path(folder) / f"{name}.opg"
            if name == "relu-chain":
                relu_chain(files[name])
            else:
                model, inputs = REAL_MODELS[name][0](1)
                ir.extract_ir(model, inputs).save(files[name])

        print(f"baseline {args.baseline} against {executable()}; {args.rounds} alternated rounds, median p50")
        print(f"{'model':<22}{'threads':>8}{'baseline ms':>13}{'this ms':>12}{'this/baseline':>15}")
        for name in args.models:
            for threads in args.threads:
                iterations = ITERATIONS.get(name, 8)
                before, after = [], []
                for _ in range(args.rounds):
                    before.append(p50_ms(args.baseline, files[name], threads, iterations))
                    after.append(p50_ms(executable(), files[name], threads, iterations))
                b, a = statistics.median(before), statistics.median(after)
                print(f"{name:<22}{threads:>8}{b:>13.4f}{a:>12.4f}{a / b:>15.3f}", flush=True)


if __name__ == "__main__":
    main()
