"""OpenVINO as a benchmark peer: a torch model converted once with
openvino.convert_model, then compiled for the CPU at a given thread count in
float32 (OpenVINO would otherwise run bf16 or f16 on CPUs that have them),
or in bf16 where asked, and run one call at a time."""

import tempfile
import warnings
from pathlib import Path

import openvino
import torch


def openvino_model(model, inputs, onnx_bytes=None):
    """The OpenVINO model of ``model`` called on ``inputs`` (a tuple) and what
    it was converted from: "torch.export" (its ExportedProgram), or, where
    that fails, "ONNX" (``onnx_bytes``, the form ONNX Runtime runs) when given."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return openvino.convert_model(torch.export.export(model, inputs)), "torch.export"
    except Exception:
        if onnx_bytes is None:
            raise
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.onnx"
        path.write_bytes(onnx_bytes)
        return openvino.convert_model(path), "ONNX"


def openvino_call(ov_model, inputs, threads, precision="f32"):
    """A function running ``ov_model`` on ``inputs`` (torch tensors) with
    ``threads`` threads in one stream and the inference ``precision`` ("f32"
    or "bf16"), returning its outputs as arrays."""
    config = {
        "INFERENCE_PRECISION_HINT": precision,
        "INFERENCE_NUM_THREADS": threads,
        "PERFORMANCE_HINT": "LATENCY",
        "NUM_STREAMS": 1,
    }
    compiled = openvino.Core().compile_model(ov_model, "CPU", config)
    granted = compiled.get_property("INFERENCE_NUM_THREADS")
    if granted != threads:
        raise RuntimeError(f"OpenVINO runs on {granted} threads, {threads} asked for")
    request = compiled.create_infer_request()
    arrays = [x.numpy() for x in inputs]

    def call():
        request.infer(arrays, share_inputs=True)
        return [request.get_output_tensor(k).data for k in range(len(compiled.outputs))]

    return call
