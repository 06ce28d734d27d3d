"""General matrix multiply with fused bias and activation: ``act(A @ B + bias)``.

``A`` is (M, K) and ``B`` is (K, N), the layout a dense layer keeps its
weights in. Activations: ``None``, ``"relu"``, ``"gelu"``, ``"sigmoid"``,
``"tanh"``. Tensors are float32, float64 or bfloat16, all of one dtype;
bfloat16 is summed in float32 and rounded once. NumPy has no bfloat16: on
the CPU, bfloat16 results come back as torch tensors, as the inputs are.
"""

from . import _require_output, call


def forward(A, B, bias=None, act=None, out=None):
    """``act(A @ B + bias)``, written into ``out`` when given."""
    return call("opgraph::gemm", A, B, bias, activation=act or "none", out=out)


def backward(A, B, bias, grad_output, output=None, act=None):
    """Gradients ``(dA, dB, dbias)`` of ``forward(A, B, bias, act=act)``, given
    the gradient of its output; ``output`` (the forward's result) is needed
    only with an activation."""
    if act and act != "none":
        _require_output("opgraph.ops.gemm.backward", output, f"act={act!r}")
    else:
        output = grad_output  # of the output's shape, and not read without an activation
    return call("opgraph::gemm_backward", grad_output, A, B, bias, output, activation=act or "none")
