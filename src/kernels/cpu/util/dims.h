// Dim arithmetic that shape functions and kernels share: a dim argument
// wrapped into range, and the number of elements of a list of extents.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "opgraph/core/error.h"

namespace opgraph::kernels {

// `dim` in [-rank, rank) (a scalar counts as rank 1, as in ATen) -> [0, rank).
inline int64_t wrap_dim(int64_t dim, int64_t rank, const char* argument) {
  const int64_t extent = std::max<int64_t>(rank, 1);
  OPGRAPH_CHECK(dim >= -extent && dim < extent, argument, ": expected a dim in [", -extent, ", ", extent - 1,
                "] for a tensor of rank ", rank, ", got ", dim);
  return dim < 0 ? dim + extent : dim;
}

inline int64_t product(std::span<const int64_t> extents) {
  int64_t n = 1;
  for (int64_t e : extents) n *= e;
  return n;
}

}  // namespace opgraph::kernels
