#include "kernels/cpu/util/prepared_weights.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace opgraph::kernels {

std::shared_ptr<void> streamed_buffer(size_t bytes) {
  constexpr size_t kHugePage = size_t{2} << 20;
  // Below a huge page, aligning to one would waste most of it.
  const size_t alignment = bytes >= kHugePage ? kHugePage : 64;
  const size_t rounded = (std::max<size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  void* memory = std::aligned_alloc(alignment, rounded);
  if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the memory is first touched, so that its pages start huge; a
  // kernel without them refuses, and the pages stay small.
  if (alignment == kHugePage) madvise(memory, rounded, MADV_HUGEPAGE);
#endif
  std::memset(memory, 0, rounded);
  return std::shared_ptr<void>(memory, std::free);
}

std::unique_ptr<KernelState> prepare_weights(const PrepareContext& context) {
  std::vector<bool> constant;
  for (const Tensor& input : context.constants) constant.push_back(input.defined());
  return std::make_unique<PreparedWeights>(std::move(constant), context.precision);
}

}  // namespace opgraph::kernels
