// Convolutions of int8 activations (WeightQuantization's int8_activations):
// a CNN's dense convolutions on the CPU's integer instructions, as ONNX
// Runtime's ConvInteger after DynamicQuantizeLinear and OpenVINO's int8
// convolutions run them.
#pragma once

#include "kernels/activation.h"
#include "kernels/shape/conv.h"
#include "opgraph/core/tensor.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Computes out = activation(conv(input, weight) + bias + residual) on
// channels-last float32 tensors (input of `input_dims`, out and residual of
// `out_dims`, [N, C, H, W] in nhwc order; residual undefined for none, or
// out's own buffer) as u8 x s8 (or s8 x s8) on oneDNN's int8 convolution:
// the input quantized at run time per tensor, to uint8 where it holds no
// negative value (after a ReLU), to symmetric int8 otherwise; the weight, a
// Session's constant, per output channel to symmetric int8 (the levels of
// an int8 linear layer's weight), once. The sums are rescaled, the bias,
// residual and activation applied in float32 as oneDNN writes them.
// Returns false (computing nothing) for what it does not take: a grouped,
// transposed or non-2-D convolution, a weight that is not a Session's
// constant, a CPU without AVX2, an input holding NaN or infinity (which the
// float32 convolution carries through), or a shape oneDNN has only a
// reference kernel for.
bool int8_activation_conv(const KernelContext& context, const Tensor& input, const Shape& input_dims,
                          const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
                          const Shape& out_dims, const ConvParams& p, Activation activation);

}  // namespace opgraph::kernels
