// sum and mean over a list of dims.
#include <algorithm>
#include <optional>

#include "kernels/cpu/rows.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

enum class Kind { Sum, Mean };

// The dims to reduce, wrapped and sorted; None or [] means all of them, as in
// ATen. A scalar has nothing to reduce, though it accepts dim 0 and -1.
std::vector<int64_t> reduced_dims(const Attrs& attrs, int64_t rank) {
  const AttrValue& value = attrs.get("dim");
  const auto* given = std::get_if<std::vector<int64_t>>(&value);
  std::vector<int64_t> dims;
  if (given == nullptr || given->empty()) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  for (int64_t d : *given) {
    const int64_t wrapped = wrap_dim(d, rank, "dim");
    OPGRAPH_CHECK(std::find(dims.begin(), dims.end(), wrapped) == dims.end(), "dim: expected distinct dims, dim ",
                  wrapped, " appears more than once in ", attr_str(value));
    dims.push_back(wrapped);
  }
  if (rank == 0) dims.clear();
  std::sort(dims.begin(), dims.end());
  return dims;
}

std::vector<TensorMeta> reduce_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta& self = *inputs[0];
  check_floating(self, "self");
  check_dtype_argument(attrs, "dtype", self.dtype);
  const std::vector<int64_t> dims = reduced_dims(attrs, self.dim());
  const bool keepdim = attrs.get<bool>("keepdim");
  TensorMeta out{self.dtype, {}};
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced) out.shape.push_back(self.shape[d]);
    if (reduced && keepdim) out.shape.push_back(1);
  }
  return {out};
}

// The number of elements each output is reduced from.
int64_t reduced_count(const Tensor& self, std::span<const int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= self.size(d);
  return count;
}

// The input as (outer, size, inner) blocks with `size` the reduced elements,
// when the reduced dims are adjacent, as they usually are.
std::optional<DimLayout> adjacent_layout(std::span<const int64_t> shape, std::span<const int64_t> dims) {
  if (dims.empty()) return DimLayout{product(shape), 1, 1};
  if (dims.back() - dims.front() + 1 != static_cast<int64_t>(dims.size())) return std::nullopt;
  return DimLayout{product(shape.first(dims.front())), product(shape.subspan(dims.front(), dims.size())),
                   product(shape.subspan(dims.back() + 1))};
}

// Sums of `width` columns of `size` elements, `stride` apart, into out.
template <typename T>
void sum_columns(const T* x, T* out, int64_t size, int64_t stride, int64_t width, double scale) {
  double sum[kColumnTile] = {};
  for (int64_t k = 0; k < size; ++k) {
    for (int64_t j = 0; j < width; ++j) sum[j] += x[k * stride + j];
  }
  for (int64_t j = 0; j < width; ++j) out[j] = static_cast<T>(sum[j] * scale);
}

// Each output sums one contiguous row when the reduced dims are the trailing
// ones, or one column of a block when they are adjacent; otherwise the input
// is first permuted so that they are trailing.
KernelFn reduce_cpu(Kind kind) {
  return [kind](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const Attrs& attrs) {
    const std::vector<int64_t> dims = reduced_dims(attrs, inputs[0].dim());
    const std::optional<DimLayout> adjacent = adjacent_layout(inputs[0].shape(), dims);
    const bool columns = adjacent && adjacent->inner > 1;
    const Tensor self = columns ? inputs[0] : permuted_contiguous(inputs[0], dims_last_order(inputs[0].dim(), dims));
    const int64_t count = reduced_count(inputs[0], dims);
    const double scale = kind == Kind::Mean ? 1.0 / static_cast<double>(count) : 1.0;
    dispatch_floating(self.dtype(), "self", [&](auto zero) {
      using T = decltype(zero);
      const T* x = self.data_ptr<const T>();
      T* out = outputs[0].data_ptr<T>();
      if (columns) {
        const DimLayout& l = *adjacent;
        parallel_column_tiles(context, l, [&](int64_t o, int64_t first, int64_t width) {
          sum_columns(x + o * l.size * l.inner + first, out + o * l.inner + first, l.size, l.inner, width, scale);
        });
        return;
      }
      parallel_rows(context, outputs[0].numel(), count, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) out[r] = static_cast<T>(row_sum(x + r * count, count) * scale);
      });
    });
  };
}

// Walks the input in order, adding each element into the output its kept
// indices name.
KernelFn reduce_reference(Kind kind) {
  return [kind](const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                const Attrs& attrs) {
    const Tensor& self = inputs[0];
    const std::vector<int64_t> dims = reduced_dims(attrs, self.dim());
    dispatch_floating(self.dtype(), "self", [&](auto zero) {
      using T = decltype(zero);
      const T* x = self.data_ptr<const T>();
      std::vector<double> sums(static_cast<size_t>(outputs[0].numel()), 0.0);
      std::vector<int64_t> index(static_cast<size_t>(self.dim()), 0);
      for (int64_t flat = 0; flat < self.numel(); ++flat) {
        int64_t out_flat = 0;
        for (int64_t d = 0; d < self.dim(); ++d) {
          if (!std::binary_search(dims.begin(), dims.end(), d)) out_flat = out_flat * self.size(d) + index[d];
        }
        sums[out_flat] += x[flat];
        for (int64_t d = self.dim() - 1; d >= 0 && ++index[d] == self.size(d); --d) index[d] = 0;
      }
      const double count = static_cast<double>(reduced_count(self, dims));
      T* out = outputs[0].data_ptr<T>();
      for (size_t i = 0; i < sums.size(); ++i) out[i] = static_cast<T>(kind == Kind::Mean ? sums[i] / count : sums[i]);
    });
  };
}

}  // namespace

void register_reduce_ops(Registry& registry) {
  define(registry, {.schema = "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
                              "ScalarType? dtype=None) -> Tensor",
                    .shape = reduce_shape,
                    .cpu = reduce_cpu(Kind::Sum),
                    .reference = reduce_reference(Kind::Sum)});
  define(registry, {.schema = "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, "
                              "ScalarType? dtype=None) -> Tensor",
                    .shape = reduce_shape,
                    .cpu = reduce_cpu(Kind::Mean),
                    .reference = reduce_reference(Kind::Mean)});
}

}  // namespace opgraph::kernels
