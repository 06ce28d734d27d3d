// Products of one row or a few on a weight's panels (weight_panels.h): a
// decode step of one sequence or a batch, where every row shares each load
// of the weight from memory; and every product on integer panels.
#pragma once

#include <algorithm>

#include "kernels/cpu/engines/weight_panels.h"

namespace opgraph::kernels {

// The most rows add_panel_rows takes: up to them, its products took less
// time than oneDNN's on its own copy of the weight, whose stream from memory
// they share. With bfloat16 weights, oneDNN multiplies bfloat16 on AMX at
// several times float32's rate and took less time from 12 rows on.
constexpr int64_t kMaxPanelRows = 64, kMaxBFloat16PanelRows = 8;

// Adds to rows [0, rows) of y (y_stride apart) the sums of panels [first,
// last), panel by panel, last to first where `backward`: panel_sums(i, sums)
// writes panel i's, panels.width(i) floats a row, into the zeroed `sums`
// (a strip's padding columns stay there).
template <typename Element, typename PanelSums>
void add_sums_by_panel(const Panels<Element>& panels, int64_t rows, int64_t first, int64_t last, bool backward,
                       float* y, int64_t y_stride, const PanelSums& panel_sums) {
  alignas(64) float sums[kMaxPanelRows * kPanel];
  for (int64_t step = 0; step < last - first; ++step) {
    const int64_t i = backward ? last - 1 - step : first + step;
    const int64_t width = panels.width(i), j = panels.column(i), columns = panels.column(i + 1) - j;
    std::fill_n(sums, rows * width, 0.0f);
    panel_sums(i, sums);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < columns; ++c) y[r * y_stride + j + c] += sums[r * width + c];
    }
  }
}

// Whether this CPU runs add_panel_rows (AVX-512, or AVX2 with FMA;
// OPGRAPH_CPU_CAPABILITY's level included).
bool runs_panel_rows();

// y[r * y_stride + j] += sum_{q0 <= q < q1} a[r * a_stride + q] * w[q, j] for
// `rows` rows (at most kMaxPanelRows) and the columns of panels [first,
// last), summed in q's order from zero and then added, as the one-row
// product sums each column (int8 panels: block by block of 32 rows of w,
// each block's sums times its scales): a row's sums do not depend on the
// rows beside it. Walks the panels last to first where `backward`;
// prefetches the weight ahead of its loads where `prefetch`.
template <typename Element>
void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows, int64_t first,
                    int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);

// add_panel_rows compiled for each instruction set (panel_tiles_kernel.h),
// which add_panel_rows picks from.
namespace avx512 {
template <typename Element>
void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows, int64_t first,
                    int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);
}
namespace avx2 {
template <typename Element>
void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows, int64_t first,
                    int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride);
}

}  // namespace opgraph::kernels
