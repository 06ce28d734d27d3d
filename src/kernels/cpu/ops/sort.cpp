// sort and topk along one dim: values with their int64 indices.
//
// Each line along the dim is ordered as (value, index) pairs with ties going
// to the lower index: the order of torch.sort(stable=True), which is also a
// valid result of its default unstable sort. NaN counts as larger than every
// number, as in PyTorch. topk orders only the k first entries of a line.
#include <algorithm>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"

namespace opgraph::kernels {
namespace {

// NaN is the one value unequal to itself; integers and bools never are.
template <typename T>
bool is_nan(T v) {
  return v != v;
}

// Whether `a` strictly comes before `b`, ascending or descending.
template <typename T>
bool before(T a, T b, bool descending) {
  if (descending) return is_nan(a) ? !is_nan(b) : a > b;
  return is_nan(b) ? !is_nan(a) : a < b;
}

// What to select along which dim: the k first of each line in the order.
struct Selection {
  int64_t dim, k;
  bool descending;
};

// sort keeps the whole line, in `descending` order.
Selection sort_selection(std::span<const int64_t> shape, int64_t dim, bool descending) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t wrapped = wrap_dim(dim, rank, "dim");
  return {wrapped, rank == 0 ? 1 : shape[wrapped], descending};
}

// topk keeps the k first, the largest or the smallest.
Selection topk_selection(std::span<const int64_t> shape, int64_t k, int64_t dim, bool largest) {
  Selection selection = sort_selection(shape, dim, largest);
  OPGRAPH_CHECK(k >= 0 && k <= selection.k, "k: expected a k in [0, ", selection.k, "] (the size of dim ",
                selection.dim, "), got ", k);
  // A scalar is its own single entry, whatever k is, as in ATen.
  if (!shape.empty()) selection.k = k;
  return selection;
}

std::vector<TensorMeta> select_shape(const TensorMeta& self, const Selection& selection) {
  Shape shape = self.shape;
  if (!shape.empty()) shape[selection.dim] = selection.k;
  return {{self.dtype, shape}, {DType::Int64, shape}};
}

std::vector<TensorMeta> sort_shape(const TensorMeta& self, int64_t dim, bool descending) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return select_shape(self, sort_selection(self.shape, dim, descending));
}

std::vector<TensorMeta> topk_shape(const TensorMeta& self, int64_t k, int64_t dim, bool largest, bool) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  OPGRAPH_CHECK(self.dtype != DType::Bool, "self: expected a numeric dtype, got ", self.str(),
                " (ATen's topk takes no bool)");
  return select_shape(self, topk_selection(self.shape, k, dim, largest));
}

template <typename T>
struct Entry {
  T value;
  int64_t index;
};

// The fast order: (value, index) pairs sorted in place, only the first k
// when k is less than the line.
struct SortPairs {
  template <typename T>
  void operator()(std::vector<Entry<T>>& line, int64_t k, bool descending) const {
    const auto order = [descending](const Entry<T>& a, const Entry<T>& b) {
      return before(a.value, b.value, descending) || (!before(b.value, a.value, descending) && a.index < b.index);
    };
    if (k == static_cast<int64_t>(line.size())) {
      std::sort(line.begin(), line.end(), order);
    } else {
      std::partial_sort(line.begin(), line.begin() + k, line.end(), order);
    }
  }
};

// The reference order: the whole line stably sorted by value alone.
struct StableSort {
  template <typename T>
  void operator()(std::vector<Entry<T>>& line, int64_t, bool descending) const {
    std::stable_sort(line.begin(), line.end(), [descending](const Entry<T>& a, const Entry<T>& b) {
      return before(a.value, b.value, descending);
    });
  }
};

// Copies each line along the dim out as entries, orders them with `order`
// and writes the first k back. The reference runs on the calling thread.
template <typename Order, bool kReference>
void select(const KernelContext& context, const Tensor& self, const Selection& s, const Tensor& values_out,
            const Tensor& indices_out) {
  const DimLayout l = layout_around(self.shape(), s.dim);
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    T* values = values_out.data_ptr<T>();
    int64_t* indices = indices_out.data_ptr<int64_t>();
    const auto lines = [&](int64_t begin, int64_t end) {
      std::vector<Entry<T>> line(static_cast<size_t>(l.size));
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = r / l.inner, i = r % l.inner;
        const T* in = x + o * l.size * l.inner + i;
        for (int64_t j = 0; j < l.size; ++j) line[j] = {in[j * l.inner], j};
        Order{}(line, s.k, s.descending);
        const int64_t at = o * s.k * l.inner + i;
        for (int64_t j = 0; j < s.k; ++j) {
          values[at + j * l.inner] = line[j].value;
          indices[at + j * l.inner] = line[j].index;
        }
      }
    };
    if constexpr (kReference) {
      lines(0, l.outer * l.inner);
    } else {
      parallel_rows(context, l.outer * l.inner, l.size, lines);
    }
  });
}

template <typename Order, bool kReference>
void sort_kernel(const KernelContext& context, const Tensor& self, int64_t dim, bool descending, const Tensor& values,
                 const Tensor& indices) {
  select<Order, kReference>(context, self, sort_selection(self.shape(), dim, descending), values, indices);
}

// `sorted` is always honoured: the k first come in order.
template <typename Order, bool kReference>
void topk_kernel(const KernelContext& context, const Tensor& self, int64_t k, int64_t dim, bool largest, bool,
                 const Tensor& values, const Tensor& indices) {
  select<Order, kReference>(context, self, topk_selection(self.shape(), k, dim, largest), values, indices);
}

}  // namespace

void register_sort_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
          .shape = sort_shape,
          .cpu = sort_kernel<SortPairs, false>,
          .reference = sort_kernel<StableSort, true>});
  define(builtins, {.schema = "aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> "
                              "(Tensor values, Tensor indices)",
                    .shape = topk_shape,
                    .cpu = topk_kernel<SortPairs, false>,
                    .reference = topk_kernel<StableSort, true>});
}

}  // namespace opgraph::kernels
