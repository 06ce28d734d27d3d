// Reading elements at positions held in index tensors: gather and
// index_select along one dim, and index.Tensor, PyTorch's advanced indexing
// (x[i, :, j] with integer tensors i and j).
//
// index.Tensor takes negative indices (counted from the end, as Python's
// indexing does); gather and index_select take [0, n), as ATen's do. An index
// out of range is an error naming it, never a read outside the tensor.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/indexing.h"
#include "kernels/cpu/util/rows.h"

namespace opgraph::kernels {
namespace {

// ---- gather: out[..., i, ...] = self[..., index[..., i, ...], ...] -------------

TensorMeta gather_shape(const TensorMeta& self, int64_t dim_given, const TensorMeta& index, bool) {
  check_index_dtype(index);
  OPGRAPH_CHECK(index.dim() == self.dim() || (index.dim() <= 1 && self.dim() <= 1), "index: expected rank ", self.dim(),
                " like self ", self.str(), ", got ", index.str());
  const int64_t dim = wrap_dim(dim_given, self.dim(), "dim");
  for (int64_t d = 0; d < index.dim() && index.dim() == self.dim(); ++d) {
    OPGRAPH_CHECK(d == dim || index.shape[d] <= self.shape[d], "index: expected at most ", self.shape[d], " in dim ", d,
                  " like self ", self.str(), ", got ", index.str());
  }
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return {self.dtype, index.shape};
}

// One loop serves as kernel and reference: each element is one indexed read.
void gather_kernel(const KernelContext&, const Tensor& self, int64_t dim_given, const Tensor& index, bool,
                   const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t dim = wrap_dim(dim_given, self.dim(), "dim");
  const Shape& shape = index.shape();
  const Strides self_strides = contiguous_strides(self.shape());
  const int64_t n = self.dim() == 0 ? 1 : self.shape()[dim];
  const size_t item = self.itemsize();
  dispatch_index(index.dtype(), [&](auto zero) {
    using Index = decltype(zero);
    const Index* at = index.data_ptr<const Index>();
    std::vector<int64_t> coordinate(shape.size(), 0);
    for (int64_t i = 0; i < out.numel(); ++i) {
      int64_t source = 0;
      for (size_t d = 0; d < shape.size(); ++d) {
        source += (static_cast<int64_t>(d) == dim ? position(at, i, n) : coordinate[d]) * self_strides[d];
      }
      if (shape.empty()) source = position(at, i, n);
      std::memcpy(static_cast<char*>(out.data()) + i * item, static_cast<const char*>(self.data()) + source * item,
                  item);
      for (size_t d = shape.size(); d-- > 0;) {
        if (++coordinate[d] < shape[d]) break;
        coordinate[d] = 0;
      }
    }
  });
}

// ---- index_select: whole slices of `dim`, one per index ----------------------

TensorMeta index_select_shape(const TensorMeta& self, int64_t dim_given, const TensorMeta& index) {
  check_index_dtype(index);
  OPGRAPH_CHECK(index.dim() <= 1, "index: expected a 0-d or 1-d tensor, got ", index.str());
  const int64_t dim = wrap_dim(dim_given, self.dim(), "dim");
  Shape shape = self.shape;
  if (self.dim() > 0) shape[dim] = index.numel();
  return {self.dtype, shape};
}

// Copies each selected (inner)-sized slice with one memcpy per outer block.
template <bool kReference>
void index_select_kernel(const KernelContext&, const Tensor& self, int64_t dim_given, const Tensor& index,
                         const Tensor& out) {
  const int64_t dim = wrap_dim(dim_given, self.dim(), "dim");
  const DimLayout layout = layout_around(self.shape(), dim);
  const int64_t count = index.numel();
  const size_t item = self.itemsize();
  const auto* x = static_cast<const char*>(self.data());
  auto* y = static_cast<char*>(out.data());
  dispatch_index(index.dtype(), [&](auto zero) {
    using Index = decltype(zero);
    const Index* at = index.data_ptr<const Index>();
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t k = 0; k < count; ++k) {
        const int64_t source = (o * layout.size + position(at, k, layout.size)) * layout.inner;
        const int64_t target = (o * count + k) * layout.inner;
        if constexpr (kReference) {
          for (int64_t i = 0; i < layout.inner; ++i) {
            std::memcpy(y + (target + i) * item, x + (source + i) * item, item);
          }
        } else {
          std::memcpy(y + target * item, x + source * item, static_cast<size_t>(layout.inner) * item);
        }
      }
    }
  });
}

// ---- index.Tensor: x[i, None, j] with index tensors -------------------------------

}  // namespace

Indexing plan_indexing(const TensorMeta& self, std::span<const TensorMeta* const> indices) {
  OPGRAPH_CHECK(static_cast<int64_t>(indices.size()) <= self.dim(), "indices: ", indices.size(),
                " indices for a tensor of rank ", self.dim());
  Indexing plan;
  Shape broadcast;
  for (size_t d = 0; d < indices.size(); ++d) {
    const TensorMeta* index = indices[d];
    if (index == nullptr) continue;
    OPGRAPH_CHECK(index->dtype == DType::Int64 || index->dtype == DType::Int32, "indices[", d,
                  "]: expected an int64 or int32 tensor (boolean masks give a data-dependent shape), got ",
                  index->str());
    plan.indexed.push_back(static_cast<int64_t>(d));
    Shape shape(std::max(broadcast.size(), index->shape.size()));
    for (size_t i = 1; i <= shape.size(); ++i) {
      const int64_t a = i <= broadcast.size() ? broadcast[broadcast.size() - i] : 1;
      const int64_t b = i <= index->shape.size() ? index->shape[index->shape.size() - i] : 1;
      OPGRAPH_CHECK(a == b || a == 1 || b == 1, "indices[", d, "]: shape ", shape_str(index->shape),
                    " does not broadcast with the other indices' ", shape_str(broadcast));
      shape[shape.size() - i] = a == 1 ? b : a;
    }
    broadcast = std::move(shape);
  }
  OPGRAPH_CHECK(!plan.indexed.empty(), "indices: expected at least one index tensor, got only None");
  const bool adjacent = plan.indexed.back() - plan.indexed.front() + 1 == static_cast<int64_t>(plan.indexed.size());
  const int64_t first = adjacent ? plan.indexed.front() : 0;  // where B goes among the output dims
  const auto is_indexed = [&](int64_t d) {
    return std::find(plan.indexed.begin(), plan.indexed.end(), d) != plan.indexed.end();
  };
  size_t b_start = 0;
  for (int64_t d = 0; d <= self.dim(); ++d) {
    if (d == first) {
      b_start = plan.out_shape.size();
      plan.out_shape.insert(plan.out_shape.end(), broadcast.begin(), broadcast.end());
      plan.self_dim.insert(plan.self_dim.end(), broadcast.size(), -1);
    }
    if (d == self.dim() || is_indexed(d)) continue;
    plan.out_shape.push_back(self.shape[d]);
    plan.self_dim.push_back(d);
  }
  for (int64_t d : plan.indexed) {
    const TensorMeta& index = *indices[d];
    Strides strides(plan.out_shape.size(), 0);
    const Strides own = contiguous_strides(index.shape);
    for (size_t i = 1; i <= index.shape.size(); ++i) {
      if (index.shape[index.shape.size() - i] != 1) strides[b_start + broadcast.size() - i] = own[own.size() - i];
    }
    plan.index_strides.push_back(std::move(strides));
  }
  plan.self_strides = contiguous_strides(self.shape);
  return plan;
}

int64_t Indexing::offset(std::span<const int64_t> coordinate, const Tensor& self,
                         std::span<const Tensor> indices) const {
  int64_t source = 0;
  for (size_t k = 0; k < coordinate.size(); ++k) {
    if (self_dim[k] >= 0) source += coordinate[k] * self_strides[self_dim[k]];
  }
  for (size_t j = 0; j < indexed.size(); ++j) {
    const Tensor& index = indices[indexed[j]];
    int64_t at = 0;
    for (size_t k = 0; k < coordinate.size(); ++k) at += coordinate[k] * index_strides[j][k];
    const int64_t d = indexed[j];
    dispatch_index(index.dtype(), [&](auto zero) {
      using Index = decltype(zero);
      source += position<true>(index.data_ptr<const Index>(), at, self.shape()[d]) * self_strides[d];
    });
  }
  return source;
}

namespace {

TensorMeta index_shape(const TensorMeta& self, std::span<const TensorMeta* const> indices) {
  return {self.dtype, plan_indexing(self, indices).out_shape};
}

// Walks the output with an odometer; the trailing output dims that read self
// directly and contiguously (the dims after the last indexed one) are copied
// as one block per step, or with kReference element by element.
template <bool kReference>
void index_kernel(const KernelContext&, const Tensor& self, std::span<const Tensor> indices, const Tensor& out) {
  if (out.numel() == 0) return;
  const Indexing plan = plan_indexing(self.meta(), indices);
  // Output dims [outer_rank, rank) read the last dims of self, in order, untouched by any index.
  const size_t outer_rank =
      kReference ? plan.out_shape.size() : plan.block_start(self.dim(), [](size_t) { return true; });
  const int64_t block = product(std::span(plan.out_shape).subspan(outer_rank));
  const auto item = static_cast<int64_t>(self.itemsize());
  const auto* x = static_cast<const char*>(self.data());
  auto* y = static_cast<char*>(out.data());
  std::vector<int64_t> coordinate(outer_rank, 0);
  for (int64_t step = 0, count = out.numel() / block; step < count; ++step) {
    const int64_t source = plan.offset(coordinate, self, indices);
    std::memcpy(y + step * block * item, x + source * item, static_cast<size_t>(block * item));
    for (size_t k = outer_rank; k-- > 0;) {
      if (++coordinate[k] < plan.out_shape[k]) break;
      coordinate[k] = 0;
    }
  }
}

}  // namespace

void register_gather_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
                    .shape = gather_shape,
                    .cpu = gather_kernel,
                    .reference = gather_kernel});
  define(builtins, {.schema = "aten::index_select(Tensor self, int dim, Tensor index) -> Tensor",
                    .shape = index_select_shape,
                    OPGRAPH_CPU_AND_REFERENCE(index_select_kernel)});
  define(builtins, {.schema = "aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
                    .shape = index_shape,
                    OPGRAPH_CPU_AND_REFERENCE(index_kernel)});
}

}  // namespace opgraph::kernels
