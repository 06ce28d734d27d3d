// Products on integer panels laid out for the CPU's integer dot products
// (weight_panels.h's DotInt8 and DotInt4), their rows of activations
// quantized to int8 at run time with a scale per block of 32 values, as
// llama.cpp's Q8_0 quantizes a decode step's activations for its Q4_0 and
// Q8_0 weights: a multiply-add of 64 weights per instruction, where widening
// them to float32 took as long as their bytes took to arrive.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/engines/weight_panels.h"

namespace opgraph::kernels {

// Values of a row to an activation's scale.
constexpr int64_t kDotBlock = 32;

// add_dot_panel_rows runs where add_panel_rows does (panel_tiles.h's
// runs_panel_rows): on AVX512-VNNI where the CPU has it, on AVX2's byte
// multiply-adds otherwise.

// `rows` rows of k values (k a multiple of kDotBlock) as int8 levels,
// symmetric: value ~ level * scale, the block's largest magnitude at 127.
struct QuantizedActivations {
  std::vector<int8_t> levels;  // [rows, k]
  std::vector<float> scales;   // [rows, k / kDotBlock]
  std::vector<int32_t> sums;   // each block's sum of its levels, [rows, k / kDotBlock]
  int64_t k = 0;
};

// Rows of a (a_stride apart) quantized for add_dot_panel_rows.
QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k);

// y[r * y_stride + j] += sum_{q0 <= q < q1} a[r, q] * w[q, j] for a's `rows`
// rows (at most kMaxPanelRows) and the columns of panels [first, last),
// block by block of kDotBlock rows of w (q0 and q1 at block bounds), each
// block's integer sums times its activation's and its columns' scales:
// a row's sums do not depend on the rows beside it. Walks the panels last
// to first where `backward`; prefetches the weight ahead of its loads
// where `prefetch`.
template <typename Element>
void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows, int64_t first,
                        int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);

// Both compiled for each instruction set (dot_panel_tiles_kernel.h), which
// the two above pick from.
namespace avx512_vnni {
QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k);
template <typename Element>
void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows, int64_t first,
                        int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);
}  // namespace avx512_vnni
namespace avx2 {
QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k);
template <typename Element>
void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows, int64_t first,
                        int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);
}  // namespace avx2

}  // namespace opgraph::kernels
