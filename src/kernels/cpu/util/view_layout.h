// Where a view of a contiguous tensor lies inside it: shape, strides and
// offset, in elements. The view ops (shape.cpp) copy out of such a layout;
// select_scatter and slice_scatter (scatter.cpp) write into one.
#pragma once

#include <optional>
#include <span>

#include "kernels/define.h"

namespace opgraph::kernels {

struct Layout {
  Shape shape;
  Strides strides;
  int64_t offset = 0;
  // The result's shape when it regroups `shape` (repeat reads a view of twice
  // the rank); else the result has `shape`.
  std::optional<Shape> result = std::nullopt;
};

using Ints = std::span<const int64_t>;

// self[..., index, ...] along `dim` (select.int's attributes).
Layout select_layout(const TensorMeta& self, int64_t dim, int64_t index);
// self[..., start:end:step, ...] along `dim` (slice.Tensor's attributes).
Layout slice_layout(const TensorMeta& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                    int64_t step);

}  // namespace opgraph::kernels
