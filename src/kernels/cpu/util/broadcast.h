// NumPy/PyTorch broadcasting for the elementwise kernels: the result shape,
// the strides that read an operand as if expanded to it, and row-wise loops
// over operands whose dims have been merged where possible.
#pragma once

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Below this many elements, waking the pool costs more than the loop itself.
inline constexpr int64_t kParallelThreshold = int64_t{1} << 16;

inline Shape broadcast_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  Shape shape(std::max(a.size(), b.size()));
  for (size_t i = 1; i <= shape.size(); ++i) {  // aligned on the right
    const int64_t x = i <= a.size() ? a[a.size() - i] : 1;
    const int64_t y = i <= b.size() ? b[b.size() - i] : 1;
    OPGRAPH_CHECK(x == y || x == 1 || y == 1, "self and other: shapes ", shape_str(a), " and ", shape_str(b),
                  " cannot be broadcast together (dimension -", i, " is ", x, " vs ", y, ")");
    shape[shape.size() - i] = x == 1 ? y : x;
  }
  return shape;
}

// Element strides that read a contiguous tensor of `shape` as if expanded to
// `target`: 0 along the dims it is broadcast over.
inline Strides broadcast_strides(std::span<const int64_t> shape, std::span<const int64_t> target) {
  Strides strides(target.size(), 0);
  int64_t stride = 1;
  for (size_t i = 1; i <= shape.size(); ++i) {
    const int64_t extent = shape[shape.size() - i];
    if (extent != 1) strides[target.size() - i] = stride;
    stride *= extent;
  }
  return strides;
}

// Where the i-th element (row-major over `shape`) lies under `strides`.
inline int64_t strided_offset(int64_t i, std::span<const int64_t> shape, std::span<const int64_t> strides) {
  int64_t offset = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    offset += i % shape[d] * strides[d];
    i /= shape[d];
  }
  return offset;
}

// Drops extent-1 dims and merges neighbours that every operand walks as one,
// so that the innermost loop runs as long as possible. Needs numel > 1.
template <size_t N>
void coalesce(Shape& shape, std::array<Strides, N>& strides) {
  size_t rank = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool merge = rank > 0;
    for (const Strides& s : strides) merge = merge && s[rank - 1] == s[d] * shape[d];
    if (merge) {
      shape[rank - 1] *= shape[d];
    } else {
      shape[rank++] = shape[d];
    }
    for (Strides& s : strides) s[rank - 1] = s[d];
  }
  shape.resize(rank);
  for (Strides& s : strides) s.resize(rank);
}

// Calls row(offsets) for rows [begin, end) of `shape` seen as
// (numel / shape.back(), shape.back()); offsets[k] is where the row starts in
// operand k. An odometer over the outer dims keeps the offsets current.
template <size_t N, typename Row>
void for_each_row(std::span<const int64_t> shape, const std::array<Strides, N>& strides, int64_t begin, int64_t end,
                  const Row& row) {
  const size_t outer = shape.size() - 1;
  std::vector<int64_t> index(outer);
  std::array<int64_t, N> offsets{};
  int64_t rest = begin;
  for (size_t d = outer; d-- > 0;) {
    index[d] = rest % shape[d];
    rest /= shape[d];
    for (size_t k = 0; k < N; ++k) offsets[k] += index[d] * strides[k][d];
  }
  for (int64_t r = begin; r < end; ++r) {
    row(offsets);
    for (size_t d = outer; d-- > 0;) {
      for (size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (++index[d] < shape[d]) break;
      for (size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * shape[d];
      index[d] = 0;
    }
  }
}

// Runs body(begin, end), vectorized for the CPU, over `items` items of
// `item_size` elements each, split over the pool only when the total is large.
template <typename Body>
void parallel_items(const KernelContext& context, int64_t items, int64_t item_size, const Body& body) {
  const auto vectorized = [&](int64_t begin, int64_t end) { dispatch_cpu([&] { body(begin, end); }); };
  if (items * item_size < kParallelThreshold) return vectorized(0, items);
  context.pool->parallel_for(0, items, std::max<int64_t>(1, kParallelThreshold / 2 / item_size), vectorized);
}

}  // namespace opgraph::kernels
