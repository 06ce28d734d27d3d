// The elementwise work around a product on CUDA: adding the bias and applying
// the activation where cuBLASLt's epilogues do not (GELU in its erf form,
// sigmoid, tanh, ReLU6, and every float64 case), the activation's gradient,
// and the bias gradient's column sums. float32, float64 and bfloat16, which
// is computed (and summed) in float32 and rounded once.
#pragma once

#include <cuda_runtime.h>

#include "kernels/activation.h"
#include "opgraph/core/tensor.h"

namespace opgraph::cuda {

// c = f(c + bias), with bias[j] added to runs of `run` consecutive elements
// in turn: run 1 for a (rows x columns) product's per-column bias, run H * W
// for a convolution's per-channel bias over NCHW. `bias` may be undefined.
void add_bias_and_activate(const Tensor& c, const Tensor& bias, kernels::Activation activation, cudaStream_t stream,
                           int64_t run = 1);
// grad *= f'(z), from the activation's output (ReLU, ReLU6, sigmoid, tanh) or,
// for GELU, from the pre-activation z.
void multiply_by_activation_grad(const Tensor& grad, const Tensor& output, const Tensor& pre_activation,
                                 kernels::Activation activation, cudaStream_t stream);
// sums[j] = sum over rows i of matrix[i, j]; `rows` x sums.numel() contiguous.
void column_sums(const Tensor& matrix, int64_t rows, const Tensor& sums, cudaStream_t stream);

}  // namespace opgraph::cuda
