// Products of int8 activations and int8 weights (WeightQuantization's
// int8_activations): a prompt's or an encoder's many rows, on the CPU's
// integer instructions.
#pragma once

#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/engines/weight_panels.h"

namespace opgraph::kernels {

// The fewest rows a product quantizes its activations for: below them (a
// decode step, a batch's) the integer panels take it, streaming the weight
// once.
constexpr int64_t kMinInt8ActivationRows = 16;

// Computes the float32 product p, whose weight is a Session's constant
// matrix, as u8 x s8 on oneDNN's int8 matmul (AMX-INT8 or AVX512-VNNI):
// a quantized at run time per row (per token) to uint8 with a zero point,
// as ONNX Runtime's DynamicQuantizeLinear quantizes a tensor, w per output
// channel to int8 (symmetric, the levels the integer panels hold): a row's
// outliers (a prompt's first token) then cost the other rows no precision,
// as a scale per tensor would; the sums rescaled, then
// the bias, residual, activation and multiplier in float32. Returns false
// (computing nothing) where oneDNN has only a reference kernel for it, or
// where the CPU lacks VNNI (AMX-INT8 CPUs have it), whose absence makes
// oneDNN's u8 x s8 products saturate.
// With `stored` (int8 levels, one group of all the inputs: a quantized
// linear layer's), its levels and scales are the weight, and p.w is unread.
bool int8_activation_product(const KernelContext& context, const Product& p, const QuantizedRows* stored = nullptr);

}  // namespace opgraph::kernels
