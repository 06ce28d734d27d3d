// Memory planning: placing the intermediate tensors of a graph in one arena,
// reusing bytes between tensors whose lifetimes do not overlap.
//
// Greedy by size with best fit (as in ExecuTorch's and XNNPACK's planners):
// the largest buffers are placed first, each in the smallest gap left between
// the buffers already placed that are alive at the same time as it.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace opgraph {

// Every offset in a plan is a multiple of this, as are the bytes reserved
// for each buffer.
inline constexpr size_t kArenaAlignment = 64;

// A buffer alive from the step that writes it to the last step that reads
// it, both inclusive (steps are node indices).
struct BufferRequest {
  size_t bytes = 0;
  size_t first_use = 0;
  size_t last_use = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, into the arena
  size_t peak_bytes = 0;        // the arena size the plan needs
  size_t naive_bytes = 0;       // one buffer each, no reuse: the baseline
};

MemoryPlan plan_memory(std::span<const BufferRequest> requests);

// Proves the plan safe: every buffer lies inside the arena at an aligned
// offset, and no two buffers alive at a common step share a byte. Throws
// opgraph::Error naming the two buffers otherwise. Quadratic in the number of
// buffers, which stays cheap for graphs of a few thousand nodes.
void verify_memory_plan(std::span<const BufferRequest> requests, const MemoryPlan& plan);

}  // namespace opgraph
