"""Dynamic int8 on the real-size transformer encoders and prompts:
opgraph.Session(..., quantize="int8", activations="int8") against float32,
ONNX Runtime's quantize_dynamic and OpenVINO's int8 (NNCF), all measured in
this process.

Rows: BERT-base, GPT-2 small, a SmolLM-135M-shaped Llama and ViT-B/16
(bench/real_models.py, published configs, random weights) at their batches,
at 1 and 2 threads. Paths:
- opgraph f32: the model's .opg as extracted;
- opgraph int8: the same file, weights int8 per output channel and each
  product's input quantized per row to uint8 at run time, on oneDNN's int8
  matmul (a decode step's few rows per block of 32, on opgraph's VNNI
  panels);
- ONNX Runtime f32, and int8: onnxruntime.quantization.quantize_dynamic
  (int8 weights per channel, uint8 activations quantized per tensor at run
  time: DynamicQuantizeLinear and MatMulInteger);
- OpenVINO int8: OpenVINO's own int8 path, NNCF's post-training
  quantization (nncf.quantize: int8 weights per channel, activations per
  tensor with scales calibrated on the bench's input, SmoothQuant on the
  transformers) of the float32 model, compiled with the f32 hint. Its
  activations' scales are fixed ahead of time, a static quantization
  calibrated on the very input it is timed and measured on: its err is
  thus the best this scheme gets. OpenVINO has no int8 kernels for
  quantize_dynamic's ops and would run that model in float32.
Timing and the thread check are bench/models.py's (bench/timing.py):
interleaved rounds, the median call. GOP/s counts the graph's matrix
products as bench/models.py does.

Each int8 path's error is its output's largest difference from eager
PyTorch's float32 output, over that output's largest magnitude ("err"); the
ratio after each peer is its time over opgraph int8's (above 1, opgraph is
faster).

    python bench/dynamic_int8.py [--models bert-base ...] [--threads 1 2] [--rounds 5] [--budget 2]
"""

import argparse
import os
import tempfile
from pathlib import Path

import nncf
import onnxruntime
import openvino
import torch
from bf16 import relative_error
from models import TOLERANCE, _arrays, graph_flops
from onnx_peer import onnx_model, onnx_session
from onnxruntime.quantization import QuantType, quantize_dynamic
from openvino_peer import openvino_call, openvino_model
from peak import cpu_description
from real_models import REAL_MODELS
from timing import interleaved, print_thread_flags, usage_columns

import opgraph
from opgraph import ir

MODELS = ["bert-base", "gpt2-small", "smollm-135m", "vit-b16"]
PATHS = ["opgraph f32", "opgraph int8", "ORT f32", "ORT int8", "OpenVINO int8"]
# The rows NNCF quantizes as convolutional networks; the others as
# transformers (nncf.ModelType.TRANSFORMER: SmoothQuant, and the ops it
# keeps in float32 for accuracy).
CONVOLUTIONAL = {"resnet50", "mobilenet-v2"}


def quantized_onnx(onnx_bytes, folder):
    """ONNX Runtime's quantize_dynamic of the model: int8 weights per channel,
    uint8 activations per tensor."""
    plain, quantized = Path(folder) / "model.onnx", Path(folder) / "model.int8.onnx"
    plain.write_bytes(onnx_bytes)
    quantize_dynamic(plain, quantized, weight_type=QuantType.QInt8, per_channel=True)
    return quantized


def openvino_int8(name, model, inputs, onnx_bytes):
    """NNCF's int8 quantization of the OpenVINO model of ``model``, its
    activations calibrated on ``inputs``."""
    ov_model, _ = openvino_model(model, inputs, onnx_bytes)
    model_type = None if name in CONVOLUTIONAL else nncf.ModelType.TRANSFORMER
    calibration = nncf.Dataset([tuple(x.numpy() for x in inputs)])
    return nncf.quantize(ov_model, calibration, model_type=model_type, subset_size=1)


def ort_call(model, inputs, threads):
    session = onnx_session(str(model) if isinstance(model, Path) else model, threads)
    granted = session.get_session_options().intra_op_num_threads
    if granted != threads:
        raise RuntimeError(f"ONNX Runtime runs on {granted} threads, {threads} asked for")
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
    return lambda: session.run(None, feeds)


def calls(opg, onnx_bytes, int8_onnx, ov_int8, inputs, threads):
    """path -> a function making one call of the model on that path."""

    def session(**quantized):
        run = opgraph.Session(str(opg), threads=threads, **quantized).run
        return lambda: run(*inputs)

    return {
        "opgraph f32": session(),
        "opgraph int8": session(quantize="int8", activations="int8"),
        "ORT f32": ort_call(onnx_bytes, inputs, threads),
        "ORT int8": ort_call(int8_onnx, inputs, threads),
        "OpenVINO int8": openvino_call(ov_int8, inputs, threads, "f32"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=MODELS, choices=list(REAL_MODELS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per row (default: 5)")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds of timed calls per path and row, about")
    args = parser.parse_args()
    print(
        f"opgraph {opgraph.__version__}, torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, "
        f"openvino {openvino.__version__.split('-')[0]}, nncf {nncf.__version__}; {cpu_description()}, "
        f"{os.cpu_count()} cores, opgraph's CPU capability {opgraph.get_cpu_capability()}; median ms per call over "
        f"{args.rounds} interleaved rounds; err: an int8 path's largest difference from eager float32 over the "
        "output's largest magnitude; (ratio): the peer's time / opgraph int8's; cpu/wall per path in the order of "
        "the columns, ! where it does not fit\n"
    )
    print(
        f"{'model':<12} {'batch':>5} {'thr':>3} {'opgraph f32':>11} {'opgraph int8':>12} {'GOP/s':>6} {'err':>7} "
        f"{'ORT f32':>15} {'ORT int8':>15} {'err':>7} {'OpenVINO int8':>15} {'err':>7}   cpu/wall"
    )
    flags = []
    for name in args.models:
        build, batches = REAL_MODELS[name]
        for batch in batches:
            model, inputs = build(batch=batch)
            with tempfile.TemporaryDirectory() as folder, torch.no_grad():
                opg = Path(folder) / "model.opg"
                model_ir = ir.extract_ir(model, inputs)
                model_ir.save(opg)
                flops = graph_flops(model_ir)
                onnx_bytes = onnx_model(model, inputs)
                int8_onnx = quantized_onnx(onnx_bytes, folder)
                ov_int8 = openvino_int8(name, model, inputs, onnx_bytes)
                expected = _arrays(model(*inputs))
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    paths = calls(opg, onnx_bytes, int8_onnx, ov_int8, inputs, threads)
                    errors = {path: relative_error(call(), expected) for path, call in paths.items()}
                    for path in ("opgraph f32", "ORT f32"):
                        if not errors[path] <= TOLERANCE:
                            raise RuntimeError(f"{name}: {path} is off by {errors[path]:.3g} of the output's scale")
                    times = dict(
                        zip(PATHS, interleaved([paths[p] for p in PATHS], rounds=args.rounds, budget=args.budget))
                    )
                    usage = usage_columns(times, threads, f"{name} batch {batch}, {threads} thread(s)", flags)
                    ms = {path: times[path].seconds * 1e3 for path in PATHS}
                    ours = ms["opgraph int8"]

                    def peer(path):
                        return f"{ms[path]:7.2f} ({ms[path] / ours:5.2f}x)"

                    def error(path):
                        return f"{errors[path]:7.1e}"

                    print(
                        f"{name:<12} {batch:>5} {threads:>3} {ms['opgraph f32']:>11.2f} {ours:>12.2f} "
                        f"{flops / ours / 1e6:>6.0f} {error('opgraph int8')} {peer('ORT f32')} {peer('ORT int8')} "
                        f"{error('ORT int8')} {peer('OpenVINO int8')} {error('OpenVINO int8')}   {usage}",
                        flush=True,
                    )
    print_thread_flags(flags)


if __name__ == "__main__":
    main()
