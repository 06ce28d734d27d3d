// Convolutions with few output pixels and a large Session weight, on blocks
// of 16 channels: the last stage of a CNN at batch 1 (ResNet-50's at 7x7).
#pragma once

#include "kernels/activation.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {

// Computes out = activation(conv(input, weight) + bias + residual) and
// returns true where this kernel takes the convolution: float32 on AVX-512,
// 2-D and dense (groups 1), input and output in blocks of 16 channels or
// channels-last with whole blocks of 16 (channels a multiple of 16), at most
// 128 output pixels (batch x height x width) and at least 7x7 an image, and
// a Session's weight (input 1) of 4 MiB or more, which streams from memory.
// Returns false, having done nothing, otherwise. Operands as for
// conv_forward_in_layouts; `residual` may be undefined, or `out` itself.
bool few_pixel_conv(const KernelContext& context, const Tensor& input, const Shape& input_dims, const Tensor& weight,
                    const Tensor& bias, const Tensor& residual, const Tensor& out, const Shape& out_dims,
                    const ConvParams& p, Activation activation);

}  // namespace opgraph::kernels
