// add_dot_panel_rows and the quantization of its activations on the
// instruction set the CPU has: its tiles are compiled once per set
// (dot_panel_tiles_kernel.h).
#include "kernels/cpu/engines/dot_panel_tiles.h"

#include "opgraph/core/cpu_capability.h"

namespace opgraph::kernels {

QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k) {
  if (cpu_has_vnni()) return avx512_vnni::quantized_activations(a, a_stride, rows, k);
  return avx2::quantized_activations(a, a_stride, rows, k);
}

template <typename Element>
void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows, int64_t first,
                        int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y,
                        int64_t y_stride) {
  if (cpu_has_vnni()) {
    avx512_vnni::add_dot_panel_rows(panels, a, rows, first, last, q0, q1, backward, prefetch, y, y_stride);
  } else {
    avx2::add_dot_panel_rows(panels, a, rows, first, last, q0, q1, backward, prefetch, y, y_stride);
  }
}

template void add_dot_panel_rows(const Panels<DotInt8>&, const QuantizedActivations&, int64_t, int64_t, int64_t,
                                 int64_t, int64_t, bool, bool, float*, int64_t);
template void add_dot_panel_rows(const Panels<DotInt4>&, const QuantizedActivations&, int64_t, int64_t, int64_t,
                                 int64_t, int64_t, bool, bool, float*, int64_t);

}  // namespace opgraph::kernels
