#include "opgraph/runtime/memory_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"

namespace opgraph {
namespace {

// Plans are made for sizes read from graphs, which may be hostile: every sum
// is checked, and nothing may end past the largest allocation there can be.
size_t add_bytes(size_t a, size_t b) {
  size_t sum = 0;
  OPGRAPH_CHECK(!__builtin_add_overflow(a, b, &sum) && sum <= kMaxAllocationBytes,
                "the memory plan needs more bytes than memory can address");
  return sum;
}

size_t aligned(size_t bytes) { return add_bytes(bytes, kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

bool alive_together(const BufferRequest& a, const BufferRequest& b) {
  return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

}  // namespace

MemoryPlan plan_memory(std::span<const BufferRequest> requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return aligned(requests[a].bytes) > aligned(requests[b].bytes); });

  std::vector<size_t> placed;     // requests placed so far
  std::vector<size_t> neighbors;  // of those, the ones alive with the current one, by offset
  for (size_t index : order) {
    const BufferRequest& request = requests[index];
    const size_t size = aligned(request.bytes);
    plan.naive_bytes = add_bytes(plan.naive_bytes, size);
    if (size == 0) continue;  // holds no bytes: offset 0 overlaps nothing
    neighbors.clear();
    for (size_t other : placed) {
      if (alive_together(request, requests[other])) neighbors.push_back(other);
    }
    std::sort(neighbors.begin(), neighbors.end(),
              [&](size_t a, size_t b) { return plan.offsets[a] < plan.offsets[b]; });
    // The smallest gap between neighbors that fits; else after the last one.
    size_t best_offset = 0, best_gap = std::numeric_limits<size_t>::max(), end = 0;
    for (size_t other : neighbors) {
      const size_t begin = plan.offsets[other];
      if (begin >= add_bytes(end, size) && begin - end < best_gap) {
        best_offset = end;
        best_gap = begin - end;
      }
      end = std::max(end, add_bytes(begin, aligned(requests[other].bytes)));
    }
    plan.offsets[index] = best_gap == std::numeric_limits<size_t>::max() ? end : best_offset;
    plan.peak_bytes = std::max(plan.peak_bytes, add_bytes(plan.offsets[index], size));
    placed.push_back(index);
  }
  return plan;
}

void verify_memory_plan(std::span<const BufferRequest> requests, const MemoryPlan& plan) {
  OPGRAPH_CHECK(plan.offsets.size() == requests.size(), "memory plan: ", plan.offsets.size(), " offsets for ",
                requests.size(), " buffers");
  for (size_t i = 0; i < requests.size(); ++i) {
    const BufferRequest& a = requests[i];
    OPGRAPH_CHECK(a.first_use <= a.last_use, "memory plan: buffer ", i, " is last used (step ", a.last_use,
                  ") before it is written (step ", a.first_use, ")");
    OPGRAPH_CHECK(plan.offsets[i] % kArenaAlignment == 0, "memory plan: buffer ", i, " is at offset ", plan.offsets[i],
                  ", not a multiple of ", kArenaAlignment);
    OPGRAPH_CHECK(a.bytes == 0 || plan.offsets[i] + a.bytes <= plan.peak_bytes, "memory plan: buffer ", i, " (bytes [",
                  plan.offsets[i], ", ", plan.offsets[i] + a.bytes, ")) ends past the arena (", plan.peak_bytes,
                  " bytes)");
    for (size_t j = 0; j < i; ++j) {
      const BufferRequest& b = requests[j];
      if (a.bytes == 0 || b.bytes == 0 || !alive_together(a, b)) continue;
      const bool disjoint =
          plan.offsets[i] + a.bytes <= plan.offsets[j] || plan.offsets[j] + b.bytes <= plan.offsets[i];
      OPGRAPH_CHECK(disjoint, "memory plan: buffers ", j, " (bytes [", plan.offsets[j], ", ", plan.offsets[j] + b.bytes,
                    "), steps ", b.first_use, " to ", b.last_use, ") and ", i, " (bytes [", plan.offsets[i], ", ",
                    plan.offsets[i] + a.bytes, "), steps ", a.first_use, " to ", a.last_use,
                    ") are alive at the same time and share bytes");
    }
  }
}

}  // namespace opgraph
