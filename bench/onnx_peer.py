"""ONNX Runtime as a benchmark peer: a torch model exported once with
torch.onnx, then run on the CPU at a given thread count."""

import io
import warnings

import onnxruntime
import torch


def onnx_model(model, inputs):
    """The ONNX bytes of ``model`` called on ``inputs`` (a tuple), from
    torch.onnx's TorchScript-based exporter, or from its torch.export-based
    one (onnxscript) for a model the first cannot export (transformers' masks
    use aten::diff, which it has no ONNX form of)."""
    try:
        return _torchscript_export(model, inputs)
    except torch.onnx.errors.UnsupportedOperatorError:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.onnx.export(model, inputs, dynamo=True, verbose=False).model_proto.SerializeToString()


def _torchscript_export(model, inputs):
    buffer = io.BytesIO()
    # That exporter has no ONNX form of nn.TransformerEncoder's fused fast path.
    fastpath = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, inputs, buffer, dynamo=False)
    finally:
        torch.backends.mha.set_fastpath_enabled(fastpath)
    return buffer.getvalue()


def onnx_session(onnx_bytes, threads):
    """An ONNX Runtime CPU session running one call at a time on ``threads`` threads."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return onnxruntime.InferenceSession(onnx_bytes, options, providers=["CPUExecutionProvider"])
