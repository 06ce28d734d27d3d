#include "kernels/cpu/onednn/onednn.h"

#include <cstdlib>

#include "opgraph/core/error.h"

namespace opgraph::kernels {

bool onednn_computes_bfloat16() {
  static const bool computes = [] {
    const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & avx512) == avx512;
  }();
  return computes;
}

void* thread_scratch(size_t bytes) {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t size = 0;
  if (size < bytes) {
    size = aligned_size(bytes);
    buffer.reset(std::aligned_alloc(kTensorAlignment, size));
    OPGRAPH_CHECK(buffer != nullptr, "out of memory: cannot allocate ", size, " bytes of oneDNN scratch");
  }
  return buffer.get();
}

}  // namespace opgraph::kernels
