#include "kernels/cpu/util/prepared_weights.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace opgraph::kernels {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// What smaller buffers are carved from, one after another.
constexpr size_t kChunk = 2 * kHugePage;

size_t round_up(size_t bytes, size_t multiple) {
  return (std::max<size_t>(bytes, 1) + multiple - 1) / multiple * multiple;
}

std::atomic<size_t> live_streamed_bytes{0};

// Zeroed memory of whole huge pages.
std::shared_ptr<void> huge_pages(size_t bytes) {
  const size_t rounded = round_up(bytes, kHugePage);
  void* memory = std::aligned_alloc(kHugePage, rounded);
  if (memory == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Before the memory is first touched, so that its pages start huge; a
  // kernel without them refuses, and the pages stay small.
  madvise(memory, rounded, MADV_HUGEPAGE);
#endif
  std::memset(memory, 0, rounded);
  live_streamed_bytes += rounded;
  return std::shared_ptr<void>(memory, [rounded](void* freed) {
    live_streamed_bytes -= rounded;
    std::free(freed);
  });
}

// The chunk small buffers are being carved from. A buffer keeps its chunk
// alive; the chunk outlives its last buffer only until the next one is
// asked for.
struct Chunk {
  std::mutex mutex;
  std::weak_ptr<void> memory;
  size_t used = 0;
};

}  // namespace

std::span<const std::byte> spanned_bytes(const void* data, std::span<const int64_t> shape,
                                         std::span<const int64_t> strides, size_t itemsize) {
  int64_t lowest = 0, highest = 0;  // the offsets of the first and last elements
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return {};
    const int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? lowest : highest) += reach;
  }
  const auto* first = static_cast<const std::byte*>(data) + lowest * static_cast<int64_t>(itemsize);
  return {first, static_cast<size_t>(highest - lowest + 1) * itemsize};
}

std::shared_ptr<void> streamed_buffer(size_t bytes) {
  const size_t rounded = round_up(bytes, 64);
  if (rounded > kChunk / 2) return huge_pages(rounded);
  static Chunk chunk;
  std::lock_guard lock(chunk.mutex);
  std::shared_ptr<void> memory = chunk.memory.lock();
  if (memory == nullptr || chunk.used + rounded > kChunk) {
    memory = huge_pages(kChunk);
    chunk.memory = memory;
    chunk.used = 0;
  }
  void* buffer = static_cast<char*>(memory.get()) + chunk.used;
  chunk.used += rounded;
  return std::shared_ptr<void>(memory, buffer);
}

size_t streamed_bytes() { return live_streamed_bytes; }

std::unique_ptr<KernelState> prepare_weights(const PrepareContext& context) {
  std::vector<bool> constant;
  for (const Tensor& input : context.constants) constant.push_back(input.defined());
  return std::make_unique<PreparedWeights>(std::move(constant), context.precision, context.weights, context.products);
}

}  // namespace opgraph::kernels
