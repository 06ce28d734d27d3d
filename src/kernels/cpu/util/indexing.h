// Positions held in index tensors, shared by the ops that read at them
// (gather.cpp: gather, index_select, index.Tensor) and those that write at
// them (scatter.cpp: scatter, index_put, embedding backward and bags).
#pragma once

#include <vector>

#include "kernels/define.h"

namespace opgraph::kernels {

inline void check_index_dtype(const TensorMeta& index, const char* argument = "index") {
  OPGRAPH_CHECK(index.dtype == DType::Int64 || index.dtype == DType::Int32, argument, ": expected int64 or int32, got ",
                index.str());
}

// index[i] as a position in [0, n); kNegative: counting from the end below 0.
template <bool kNegative = false, typename Index>
int64_t position(const Index* index, int64_t i, int64_t n) {
  const int64_t at = index[i];
  OPGRAPH_CHECK(at >= (kNegative ? -n : 0) && at < n, "index: ", at, " at position ", i,
                " is out of range for a dim of size ", n);
  return at < 0 ? at + n : at;
}

// Calls fn(Index{}) for the C++ type of an int64 or int32 index tensor.
template <typename Fn>
void dispatch_index(DType dtype, Fn&& fn) {
  if (dtype == DType::Int64) return fn(int64_t{});
  fn(int32_t{});
}

// Advanced indexing, x[i, None, j] with index tensors i and j (None entries
// take the whole dim): the index tensors broadcast to one shape B. The indexed
// result has B in place of the indexed dims if those are adjacent, else B
// first, followed by the other dims in order. Each of its dims reads either a
// dim of self directly or a dim of B.
struct Indexing {
  Shape out_shape;
  std::vector<int64_t> self_dim;       // per output dim: the dim of self it walks, or -1 for a dim of B
  std::vector<int64_t> indexed;        // dims of self that an index tensor selects along
  std::vector<Strides> index_strides;  // per index tensor: its strides over the output dims (0 elsewhere)
  Strides self_strides;                // of self, contiguous

  // Where in (contiguous) self the element at `coordinate` of the first
  // coordinate.size() output dims lies, the rest at 0; `indices` holds one
  // tensor per dim of self, undefined where None. Negative indices count from
  // the end; one out of range is an error.
  int64_t offset(std::span<const int64_t> coordinate, const Tensor& self, std::span<const Tensor> indices) const;

  // The first of the trailing output dims that read the last dims of self in
  // order, untouched by any index, and for which keep(k) holds: the dims a
  // kernel may copy as one contiguous block.
  template <typename Keep>
  size_t block_start(int64_t self_rank, const Keep& keep) const {
    size_t first = out_shape.size();
    for (int64_t d = self_rank - 1; first > 0 && self_dim[first - 1] == d && d > indexed.back() && keep(first - 1);
         --d) {
      --first;
    }
    return first;
  }
};

Indexing plan_indexing(const TensorMeta& self, std::span<const TensorMeta* const> indices);

// The same for index tensors a kernel holds (undefined for None).
inline Indexing plan_indexing(const TensorMeta& self, std::span<const Tensor> indices) {
  std::vector<const TensorMeta*> metas;
  for (const Tensor& index : indices) metas.push_back(index.defined() ? &index.meta() : nullptr);
  return plan_indexing(self, metas);
}

}  // namespace opgraph::kernels
