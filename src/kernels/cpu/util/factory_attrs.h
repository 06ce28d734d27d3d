// What the ops that make a tensor from attributes share (factory.cpp's fills
// and ranges, random.cpp's random tensors): the keyword arguments of their
// schemas and the reading of their size and dtype attributes.
#pragma once

#include "kernels/cpu/util/placement.h"

namespace opgraph::kernels {

// The keyword arguments every factory schema ends with.
inline constexpr const char* kFactoryOptions =
    "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None";

inline bool is_none(const Attrs& attrs, std::string_view name) {
  return std::holds_alternative<std::monostate>(attrs.get(name));
}

inline Shape size_attr(const Attrs& attrs, const char* name) {
  const auto& size = attrs.get<std::vector<int64_t>>(name);
  for (int64_t extent : size) {
    OPGRAPH_CHECK(extent >= 0, name, ": expected non-negative extents, got ", shape_str(size));
  }
  return Shape(size);
}

}  // namespace opgraph::kernels
