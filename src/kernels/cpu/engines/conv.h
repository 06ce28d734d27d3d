// The forward convolution the CPU's convolution ops run: oneDNN for float32,
// plain loops for float64 and the reference (engines/conv.cpp).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/activation.h"
#include "kernels/cpu/onednn/fused_activation.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {

// out = activation(conv(input, weight) + bias) on batched operands (bias may be
// undefined), transposed or not: oneDNN for float32, plain loops for float64
// or when `reference`.
void conv_forward(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& out, const ConvParams& p, Activation activation, bool reference);

// The layouts a caller keeps a convolution's input and output in (oneDNN's
// tags: plain nchw, or channel blocks such as nChw16c).
struct ConvLayouts {
  dnnl::memory::format_tag src, dst;
};

// conv_forward on float32 operands held in `layouts`: `input` and `out` are
// the buffers of tensors of `input_dims` and `out_dims` (batch, channels,
// spatial...) in those layouts, the weight plain. A `residual` (undefined
// for none) holds a tensor like `out` in the output's layout, added before
// the activation: out = activation(conv + bias + residual). It may be `out`'s
// own buffer.
void conv_forward_in_layouts(const KernelContext& context, const Tensor& input, const Shape& input_dims,
                             const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
                             const Shape& out_dims, const ConvParams& p, Activation activation, ConvLayouts layouts);

}  // namespace opgraph::kernels
