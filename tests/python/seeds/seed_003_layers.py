"""Seed 003 (graph_executor_v2's ops and layers guide): its code, imports
changed (graph_executor_v2 -> opgraph). The seed's layers keep their weights
in CuPy arrays on the GPU; opgraph's kernels run on the CPU, so ``cp`` is
NumPy, which has the same API. The seed's ``...`` (the rest of __init__,
the Conv2D's kernel size and attrs) are filled in as the lines below them
use them. Its ops-level fragments call its pybind11 bindings with raw
pointers (as_tensor_2d, g.forward_ex(tA, tB, bias, tY, ...)); opgraph's ops
take arrays, so those are not copied.
"""
import numpy as cp

import opgraph.ops.conv2d as conv_ops
import opgraph.ops.gemm as gemm_ops
from opgraph.layers import Layer
from opgraph.ops import require

# ---- the seed's code -------------------------------------------------------
g = require("gemm")   # → _ops_gemm


class Dense(Layer):
    def __init__(self, units, activation="relu", initializer="he", use_native_bwd=True):
        super().__init__()
        self.units, self.activation = units, activation

    def build(self, input_shape):
        in_dim = input_shape[-1]
        self.W = cp.random.randn(in_dim, self.units).astype(cp.float32)
        self.b = cp.zeros(self.units, dtype=cp.float32)
        self.built = True

    def call(self, x):
        return gemm_ops.forward(x, self.W, self.b, act=self.activation)


_g = require("conv2d")


class Conv2D(Layer):
    def __init__(self, out_channels, kernel_size):
        super().__init__()
        self.out_channels, self.kernel_size, self.attrs = out_channels, kernel_size, _g.Conv2DAttrs()

    def build(self, input_shape):
        N, C, H, W = input_shape
        kh, kw = self.kernel_size
        self.W = cp.random.randn(self.out_channels, C, kh, kw).astype(cp.float32)
        self.b = cp.zeros(self.out_channels, dtype=cp.float32)
        self.built = True

    def call(self, x):
        return conv_ops.forward(x, self.W, self.b, self.attrs)
# ---- end of the seed's code ------------------------------------------------


x = cp.random.randn(5, 7).astype(cp.float32)
dense = Dense(3)
y = dense(x)
cp.testing.assert_allclose(y, cp.maximum(x @ dense.W + dense.b, 0), rtol=1e-5, atol=1e-5)
cp.testing.assert_allclose(dense(x), y)  # a second call reuses the built weights
print("Dense:", y.shape)
print("gemm:", g.forward(x, dense.W, dense.b, act="relu").shape)

images = cp.random.randn(2, 3, 6, 5).astype(cp.float32)
conv = Conv2D(4, (3, 3))
z = conv(images)
expected = cp.zeros((2, 4, 4, 3), cp.float32)
for i in range(4):
    for j in range(3):
        expected[:, :, i, j] = cp.einsum("nchw,ochw->no", images[:, :, i:i + 3, j:j + 3], conv.W)
cp.testing.assert_allclose(z, expected, rtol=1e-4, atol=1e-4)
print("Conv2D:", z.shape)
