"""General matrix multiply with fused bias and activation: ``act(A @ B + bias)``.

``A`` is (M, K) and ``B`` is (K, N), the layout a dense layer keeps its
weights in. Activations: ``None``, ``"relu"``, ``"gelu"``, ``"sigmoid"``,
``"tanh"``.
"""

from . import call


def forward(A, B, bias=None, act=None, out=None):
    """``act(A @ B + bias)``, written into ``out`` when given."""
    return call("opgraph::gemm", A, B, bias, activation=act or "none", out=out)


def backward(A, B, grad_output, output, bias=None, act=None):
    """Gradients ``(dA, dB, dbias)`` of ``forward(A, B, bias, act)``, given the
    gradient of its output and the output itself."""
    return call("opgraph::gemm_backward", grad_output, A, B, bias, output, activation=act or "none")
