// Splitting a kernel's rows over the thread pool, only where the work pays
// for waking the threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Below this many elements a job runs on the calling thread: waking workers
// costs more than it saves. PyTorch's grain size (at::internal::GRAIN_SIZE).
inline constexpr int64_t kParallelElements = int64_t(1) << 15;

// Runs body(begin, end) over [0, rows), on the pool's threads once the rows
// hold enough elements to pay for them.
template <typename Body>
void parallel_rows(const KernelContext& context, int64_t rows, int64_t cols, Body&& body) {
  const int64_t grain = std::max<int64_t>(1, kParallelElements / std::max<int64_t>(cols, 1));
  if (rows <= grain || context.pool == nullptr) {
    if (rows > 0) body(int64_t{0}, rows);
    return;
  }
  context.pool->parallel_for(0, rows, grain, body);
}

}  // namespace opgraph::kernels
