#include "kernels/cpu/engines/product_epilogue.h"

#include <algorithm>

#include "kernels/cpu/util/activation_formulas.h"
#include "kernels/cpu/util/cpu_dispatch.h"

namespace opgraph::kernels {

// The element stride between an operand's rows (0 where it has one row, broadcast).
int64_t rows_apart(const Operand& o) {
  const size_t rank = o.shape.size();
  return o.shape[rank - 2] == 1 ? 0 : o.strides[rank - 2];
}

namespace {

// Row r of dst, columns [j0, j1), plus the bias. A contiguous bias is added
// in vectors (a recurrent step's 768 gates took 3% of a GRU's time one at a
// time).
void add_bias_row(const Product& p, int64_t r, float* dst, int64_t j0, int64_t j1) {
  const float* bias = static_cast<const float*>(p.bias->data) + r * rows_apart(*p.bias);
  const int64_t stride = p.bias->shape.back() != 1 ? p.bias->strides.back() : 0;
  if (stride == 1) {
    for (int64_t j = j0; j < j1; ++j) dst[j] += bias[j];
  } else {
    for (int64_t j = j0; j < j1; ++j) dst[j] += bias[j * stride];
  }
}

// Row r of dst, columns [j0, j1), after its sums: the activation, then the multiplier.
void finish_row(const Product& p, int64_t r, float* dst, int64_t j0, int64_t j1) {
  // In float32 vectors (a decode step's SiLU in double, one element at a
  // time, took a tenth of its product's time).
  if (p.activation != Activation::None) dispatch_cpu([&] { activate(p.activation, dst + j0, j1 - j0); });
  if (!p.multiplier) return;
  const float* gate = static_cast<const float*>(p.multiplier->data) + r * rows_apart(*p.multiplier);
  for (int64_t j = j0; j < j1; ++j) dst[j] *= gate[j * p.multiplier->strides.back()];
}

}  // namespace

void start_rows(const Product& p, int64_t m, int64_t j0, int64_t j1) {
  const int64_t dst_stride = p.dst.strides[p.dst.shape.size() - 2];
  for (int64_t r = 0; r < m; ++r) {
    float* dst = static_cast<float*>(p.dst.data) + r * dst_stride;
    if (!p.accumulate) std::fill(dst + j0, dst + j1, 0.0f);
  }
  add_bias(p, m, j0, j1);
}

void add_bias(const Product& p, int64_t m, int64_t j0, int64_t j1) {
  if (!p.bias) return;
  const int64_t dst_stride = p.dst.strides[p.dst.shape.size() - 2];
  for (int64_t r = 0; r < m; ++r) add_bias_row(p, r, static_cast<float*>(p.dst.data) + r * dst_stride, j0, j1);
}

void finish_rows(const Product& p, int64_t m, int64_t j0, int64_t j1) {
  const int64_t dst_stride = p.dst.strides[p.dst.shape.size() - 2];
  for (int64_t r = 0; r < m; ++r) finish_row(p, r, static_cast<float*>(p.dst.data) + r * dst_stride, j0, j1);
}

}  // namespace opgraph::kernels
