"""Whole models on opgraph's C++ runtime against PyTorch eager, torch.compile
and ONNX Runtime, all measured in this process.

For each model of the IR tests (tests/python/ir_models.py), batch 1 and 32,
and each real-size model (bench/real_models.py: BERT-base, GPT-2 small, a
SmolLM-135M-shaped Llama, ViT-B/16, ResNet-50, MobileNetV2, Whisper-tiny's
encoder; published configs, random weights) at its own batches, at 1 and 2
threads: the median latency of opgraph.Session running the model's
.opg, and each peer's latency divided by it (above 1: opgraph is faster).
Also the time to extract the IR and save the .opg. A path that cannot run a
model (a custom op ONNX cannot export, an op the runtime lacks) is skipped
with the reason. ONNX models come from torch.onnx's TorchScript exporter
(the torch.export-based one needs onnxscript, which opgraph does not pin).

    python bench/models.py [--models mlp bert-base ...] [--batches 1 32] [--threads 1 2]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

import opgraph
from opgraph import ir

from conv1d import seconds_per_call
from onnx_peer import onnx_model, onnx_session

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))  # the models the IR tests check
import ir_models  # noqa: E402
from real_models import REAL_MODELS  # noqa: E402

MODELS = ["mlp", "cnn", "resnet18", "transformer_encoder", "gated_mlp", "bert", "gpt2", "vit"]


def rows(names, batches):
    """(name, batch, build) for each row: test-sized models at ``batches``, real-size ones at their own."""
    for name in names:
        if name in REAL_MODELS:
            build, own_batches = REAL_MODELS[name]
            yield from ((name, batch, build) for batch in own_batches)
        else:
            yield from ((name, batch, getattr(ir_models, name)) for batch in batches)


class Peers:
    """The runnable form of one model at one batch on every path, or why a path cannot run it."""

    def __init__(self, model, inputs, folder):
        self.model, self.inputs, self.skipped = model, inputs, {}
        start = time.perf_counter()
        model_ir = ir.extract_ir(model, inputs)
        self.opg = Path(folder) / "model.opg"
        model_ir.save(self.opg)
        self.extract_seconds = time.perf_counter() - start
        self.compiled = self._try("torch.compile", lambda: torch.compile(model))
        custom = sorted({n.op_type for n in model_ir.nodes if not n.op_type.startswith("aten.")})
        self.onnx = None
        if custom:  # the TorchScript exporter fails on them, printing its whole graph
            self.skipped["onnxruntime"] = f"ONNX has no kernel for the custom ops {', '.join(custom)}"
        else:
            self.onnx = self._try("onnxruntime", lambda: onnx_model(model, inputs))

    def _try(self, path, make):
        try:
            return make()
        except Exception as e:
            self.skipped[path] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            return None

    def onnx_call(self, threads):
        session = onnx_session(self.onnx, threads)
        feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), self.inputs)}
        return lambda: session.run(None, feeds)

    def latencies(self, threads):
        """path -> seconds per call at ``threads`` threads (None where skipped)."""
        torch.set_num_threads(threads)
        with torch.no_grad():
            session = self._try("opgraph", lambda: opgraph.Session(str(self.opg), threads=threads))
            onnx = None if self.onnx is None else self._try("onnxruntime", lambda: self.onnx_call(threads))
            calls = {"opgraph": None if session is None else lambda: session.run(*self.inputs),
                     "eager": lambda: self.model(*self.inputs),
                     "torch.compile": None if self.compiled is None else lambda: self.compiled(*self.inputs),
                     "onnxruntime": onnx}
            return {path: None if call is None else self._try(path, lambda: seconds_per_call(call))
                    for path, call in calls.items()}


def cell(peer, ours):
    """A peer's ms and its ratio to opgraph's."""
    if peer is None:
        return f"{'-':>17}"
    return f"{peer * 1e3:8.3f} ({peer / ours:5.2f}x)" if ours else f"{peer * 1e3:8.3f} {'':>8}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = MODELS + list(REAL_MODELS)
    parser.add_argument("--models", nargs="+", default=names, choices=names)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args()
    print(f"opgraph {opgraph.__version__}, torch {torch.__version__}, CPU capability {opgraph.get_cpu_capability()}")
    print("median ms per call; (ratio) = the peer's time / opgraph.Session's: above 1, opgraph is faster\n")
    print(f"{'model':<20} {'batch':>5} {'threads':>7} {'opgraph ms':>10} {'eager ms':>17} {'compile ms':>17} "
          f"{'ORT ms':>17}   extract+save s")
    ir.extract_ir(torch.nn.ReLU(), (torch.zeros(1),))  # torch.export's one-time start-up is no model's cost
    skipped = {}
    for name, batch, build in rows(args.models, args.batches):
        model, inputs = build(batch=batch)
        with tempfile.TemporaryDirectory() as folder:
            peers = Peers(model, inputs, folder)
            for threads in args.threads:
                times = peers.latencies(threads)
                ours = times["opgraph"]
                print(f"{name:<20} {batch:>5} {threads:>7} {ours * 1e3 if ours else float('nan'):>10.3f} "
                      f"{cell(times['eager'], ours)} {cell(times['torch.compile'], ours)} "
                      f"{cell(times['onnxruntime'], ours)}   {peers.extract_seconds:.2f}", flush=True)
            for path, reason in peers.skipped.items():
                skipped.setdefault((name, path), reason)
    if skipped:
        print("\nskipped:")
        for (name, path), reason in skipped.items():
            print(f"  {name} on {path}: {reason}")


if __name__ == "__main__":
    main()
