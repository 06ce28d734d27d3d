// Shared by the kernels that reduce or normalize along some dims (softmax,
// reductions, norms): the reduced dims are made the trailing, contiguous ones,
// so every kernel is a loop over rows of contiguous data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/parallel.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// The order of dims that keeps the others in place and moves `dims` last.
inline std::vector<int64_t> dims_last_order(int64_t rank, std::span<const int64_t> dims) {
  std::vector<int64_t> order;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) order.push_back(d);
  }
  order.insert(order.end(), dims.begin(), dims.end());
  return order;
}

inline bool is_identity(std::span<const int64_t> order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// `t` with its dims in `order`, contiguous: a scratch copy unless the order is
// the identity.
inline Tensor permuted_contiguous(const Tensor& t, std::span<const int64_t> order) {
  return is_identity(order) ? t : t.permute(order).contiguous();
}

// A tensor seen around one of its dims: `outer` blocks of `size` x `inner`
// elements, so element (o, k, i) lies at (o * size + k) * inner + i.
struct DimLayout {
  int64_t outer, size, inner;
};

inline DimLayout layout_around(std::span<const int64_t> shape, int64_t dim) {
  if (shape.empty()) return {1, 1, 1};
  return {product(shape.first(dim)), shape[dim], product(shape.subspan(dim + 1))};
}

// Reducing along a dim that is not the last walks columns, kColumnTile at a
// time: wide enough for vector registers, narrow enough that per-column state
// fits on the stack.
inline constexpr int64_t kColumnTile = 64;

// For a layout with inner > 1: calls body(o, first, width) for every tile of
// `width` <= kColumnTile adjacent columns [first, first + width) of outer block
// o; element k of column j lies at (o * size + k) * inner + j.
template <typename Body>
void parallel_column_tiles(const KernelContext& context, const DimLayout& layout, Body&& body) {
  const int64_t tiles_per_block = (layout.inner + kColumnTile - 1) / kColumnTile;
  parallel_rows(context, layout.outer * tiles_per_block, layout.size * kColumnTile, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t first = (t % tiles_per_block) * kColumnTile;
      body(t / tiles_per_block, first, std::min(kColumnTile, layout.inner - first));
    }
  });
}

// Reduces map(0) ... map(n - 1) with `combine`, in kLanes independent
// accumulators: without -ffast-math GCC may not reorder a floating-point
// reduction, but it vectorizes lanes that the source already keeps apart.
// 128 bytes of lanes fill two AVX-512 registers (four AVX2 ones): enough
// independent chains to hide the latency of each add or max.
template <typename Acc, typename Map, typename Combine>
Acc reduce_lanes(int64_t n, Acc init, Map&& map, Combine&& combine) {
  constexpr int64_t kLanes = 128 / sizeof(Acc);
  Acc lanes[kLanes];
  std::fill(lanes, lanes + kLanes, init);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = combine(lanes[j], map(i + j));
  }
  for (int64_t j = 0; i + j < n; ++j) lanes[j] = combine(lanes[j], map(i + j));
  // Folding the lanes in halves vectorizes too, where one chain through them
  // would cost a short row more than its loop.
  for (int64_t half = kLanes / 2; half > 0; half /= 2) {
    for (int64_t j = 0; j < half; ++j) lanes[j] = combine(lanes[j], lanes[j + half]);
  }
  return lanes[0];
}

// Sum of x[0..n) accumulated in double.
template <typename T>
double row_sum(const T* x, int64_t n) {
  return reduce_lanes(
      n, 0.0, [x](int64_t i) { return static_cast<double>(x[i]); }, [](double a, double b) { return a + b; });
}

// Max of x[0..n); -inf for an empty row.
template <typename T>
T row_max(const T* x, int64_t n) {
  return reduce_lanes(
      n, -std::numeric_limits<T>::infinity(), [x](int64_t i) { return x[i]; }, [](T a, T b) { return a > b ? a : b; });
}

}  // namespace opgraph::kernels
