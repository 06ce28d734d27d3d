// What the ops that make a tensor from attributes share (factory.cpp's fills
// and ranges, random.cpp's random tensors): the keyword arguments of their
// schemas and the checking of their size attribute.
#pragma once

#include <span>

#include "kernels/cpu/util/placement.h"

namespace opgraph::kernels {

// The keyword arguments every factory schema ends with.
inline constexpr const char* kFactoryOptions =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

// A size attribute's extents, checked to be at least 0.
inline Shape checked_size(std::span<const int64_t> size, const char* name) {
  for (int64_t extent : size) {
    OPGRAPH_CHECK(extent >= 0, name, ": expected non-negative extents, got ", shape_str(size));
  }
  return Shape(size.begin(), size.end());
}

}  // namespace opgraph::kernels
