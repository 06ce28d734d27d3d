"""opgraph's main job, start to finish: a PyTorch model using a custom op from
an opgraph package is extracted, saved as .opg, inspected and run by the
`opgraph` command-line tool (C++, no Python in the loop), verified against
PyTorch, and timed against PyTorch eager.

    python examples/fused_gate/deploy.py [--out build/fused_gate]
"""

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

import my_custom_ops  # noqa: F401  (registers the IR conversion and executor of custom.fused_gate)
import numpy as np
import torch
from gated_mlp import GatedMLP, fused_gate_ops

from opgraph import ir
from opgraph.cli import executable as opgraph_executable

HERE = Path(__file__).resolve().parent
BATCH, FEATURES, THREADS = 32, 256, 1


def step(title):
    print(f"\n== {title}")


def cli(*args) -> str:
    command = [str(opgraph_executable()), *map(str, args)]
    print("$ opgraph", " ".join(map(str, args)))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"deploy: opgraph {args[0]} failed: {result.stderr.strip()}")
    return result.stdout


def torch_eager_ms(model, x, iters=200, warmup=20) -> float:
    with torch.no_grad():
        for _ in range(warmup):
            model(x)
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE.parents[1] / "build" / "fused_gate")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)

    step("1. the PyTorch model, with custom::fused_gate from the op package in op/")
    package = fused_gate_ops()
    print(f"op package {package.path} registered {', '.join(package.ops)} as torch.ops.{package.namespace}.*")
    model = GatedMLP(FEATURES, 4 * FEATURES).eval()
    x = torch.randn(BATCH, FEATURES)
    with torch.no_grad():
        expected = model(x)
    print(f"GatedMLP({FEATURES}, {4 * FEATURES}) on x {list(x.shape)} -> {list(expected.shape)} in PyTorch eager")

    step("2. extract the IR (torch.export, batch dimension symbolic)")
    start = time.perf_counter()
    model_ir = ir.extract_ir(model, (x,), dynamic_shapes=({0: torch.export.Dim("batch")},))
    print(model_ir)
    print(f"extracted in {time.perf_counter() - start:.2f} s")

    step("3. save it as .opg, with the op package beside it")
    opg = out / "gated_mlp.opg"
    model_ir.save(opg)
    shutil.copy(package.path, out / Path(package.path).name)
    print(f"wrote {opg} ({opg.stat().st_size / 1e6:.2f} MB) and {Path(package.path).name}")

    step("4. inspect it with the opgraph tool")
    print(cli("inspect", opg))

    step("5. run it with the opgraph tool (no Python) and compare with PyTorch")
    np.save(out / "x.npy", x.numpy())
    cli("run", opg, "--input", f"x={out / 'x.npy'}", "--output-dir", out / "outputs")
    result = np.load(out / "outputs" / f"{model_ir.outputs[0].name}.npy")
    error = float(np.abs(result - expected.numpy()).max())
    print(f"opgraph run: output {list(result.shape)}, max abs error vs PyTorch {error:.3g}")

    step("6. verify every path (PyTorch, the IR executor, the C++ Session) at batch 1 and 17")
    ok = error <= 1e-4
    for batch in (1, 17):
        report = ir.verify(model, (torch.randn(batch, FEATURES),), ir=model_ir, rtol=1e-4, atol=1e-4)
        print(report)
        ok = ok and report.ok

    step(f"7. time it: opgraph bench vs PyTorch eager, batch {BATCH}, {THREADS} thread")
    bench = cli("bench", opg, "--dim", f"s0={BATCH}", "--threads", THREADS, "--warmup", 20, "--iters", 200)
    opgraph_ms = float(next(line for line in bench.splitlines() if line.startswith("p50:")).split()[1])
    torch.set_num_threads(THREADS)
    eager_ms = torch_eager_ms(model, x)
    # The same model with the gate in native torch ops, without the custom op's Python dispatch.
    native_ms = torch_eager_ms(lambda v: model.out(torch.sigmoid(model.gate(v)) * model.value(v)), x)
    print(
        f"p50 latency ({THREADS} thread): opgraph {opgraph_ms:.4f} ms, torch eager {eager_ms:.4f} ms "
        f"({eager_ms / opgraph_ms:.2f}x opgraph's), torch eager with native sigmoid * mul {native_ms:.4f} ms "
        f"({native_ms / opgraph_ms:.2f}x opgraph's)"
    )

    print(f"\n{'all steps PASSED' if ok else 'verification FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
