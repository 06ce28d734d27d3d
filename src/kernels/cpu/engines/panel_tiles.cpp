// add_panel_rows on the widest instruction set the CPU has: its tiles are
// compiled once per set (panel_tiles_kernel.h).
#include "kernels/cpu/engines/panel_tiles.h"

#include "opgraph/core/cpu_capability.h"

namespace opgraph::kernels {

bool runs_panel_rows() { return cpu_capability() != CpuCapability::Default; }

template <typename Element>
void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows, int64_t first,
                    int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride) {
  if (cpu_capability() == CpuCapability::Avx512) {
    avx512::add_panel_rows(panels, a, a_stride, rows, first, last, q0, q1, backward, prefetch, y, y_stride);
  } else {
    avx2::add_panel_rows(panels, a, a_stride, rows, first, last, q0, q1, backward, prefetch, y, y_stride);
  }
}

template void add_panel_rows(const Panels<float>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<BFloat16>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<int8_t>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<Int4Pair>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, bool, bool, float*, int64_t);

}  // namespace opgraph::kernels
