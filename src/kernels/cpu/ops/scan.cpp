// Ops along one dim that carry a value from each position to the next:
// cumsum, and diff with its optional prepend and append.
//
// Both see the tensor around the dim as (outer, size, inner) blocks (rows.h)
// and walk the dim in the outer loop, so the inner loop runs over contiguous
// columns.
#include <memory>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"

namespace opgraph::kernels {
namespace {

// ---- cumsum ---------------------------------------------------------------------

// Integer and bool inputs sum in int64, as in PyTorch, unless `dtype` says.
DType cumsum_dtype(const TensorMeta& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_floating_point(self.dtype) ? self.dtype : DType::Int64;
}

TensorMeta cumsum_shape(const TensorMeta& self, int64_t dim, std::optional<DType> requested) {
  wrap_dim(dim, self.dim(), "dim");
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  const DType dtype = cumsum_dtype(self, requested);
  OPGRAPH_CHECK(dtype != DType::Bool, "dtype: expected a numeric dtype for a sum, got bool");
  dispatch_elementwise(dtype, "dtype", [](auto) {});
  return {dtype, self.shape};
}

// The output's dtype is the one the shape function chose.
template <bool kReference>
void cumsum_kernel(const KernelContext& context, const Tensor& self, int64_t dim, std::optional<DType>,
                   const Tensor& out) {
  const DimLayout layout = layout_around(self.shape(), wrap_dim(dim, self.dim(), "dim"));
  dispatch_elementwise(self.dtype(), "self", [&](auto from) {
    using In = decltype(from);
    dispatch_elementwise(out.dtype(), "dtype", [&](auto to) {
      using Out = decltype(to);
      const In* x = self.data_ptr<const In>();
      Out* y = out.data_ptr<Out>();
      const auto blocks = [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          const int64_t base = o * layout.size * layout.inner;
          if constexpr (kReference) {
            for (int64_t i = 0; i < layout.inner; ++i) {  // one column at a time
              Out sum = 0;
              for (int64_t k = 0; k < layout.size; ++k) {
                sum = static_cast<Out>(sum + static_cast<Out>(x[base + k * layout.inner + i]));
                y[base + k * layout.inner + i] = sum;
              }
            }
          } else {  // each row adds the previous row of sums, across all columns
            for (int64_t k = 0; k < layout.size; ++k) {
              const In* row = x + base + k * layout.inner;
              Out* sums = y + base + k * layout.inner;
              const Out* previous = sums - layout.inner;
              for (int64_t i = 0; i < layout.inner; ++i) {
                sums[i] = static_cast<Out>((k > 0 ? previous[i] : Out(0)) + static_cast<Out>(row[i]));
              }
            }
          }
        }
      };
      if constexpr (kReference) {
        blocks(0, layout.outer);
      } else {
        parallel_rows(context, layout.outer, layout.size * layout.inner,
                      [&](int64_t begin, int64_t end) { dispatch_cpu([&] { blocks(begin, end); }); });
      }
    });
  });
}

// ---- diff -------------------------------------------------------------------------

// out = the n-th forward difference along `dim` of cat(prepend, self, append).
// Bool tensors differ by xor, as in PyTorch.
struct Diff {
  int64_t dim, n, length;  // length: of the concatenation along dim
};

Diff diff_of(const TensorMeta& self, int64_t n, int64_t dim_given, const TensorMeta* prepend,
             const TensorMeta* append) {
  OPGRAPH_CHECK(self.dim() > 0, "self: expected a tensor of rank 1 or more, got a scalar");
  const int64_t dim = wrap_dim(dim_given, self.dim(), "dim");
  OPGRAPH_CHECK(n >= 0, "n: expected a non-negative order, got ", n);
  int64_t length = self.shape[dim];
  for (size_t k = 1; k <= 2; ++k) {
    const TensorMeta* part = k == 1 ? prepend : append;
    if (part == nullptr) continue;
    const char* name = k == 1 ? "prepend" : "append";
    OPGRAPH_CHECK(part->dtype == self.dtype && part->dim() == self.dim(), name, ": expected a ", dtype_name(self.dtype),
                  " tensor of rank ", self.dim(), " like self, got ", part->str());
    for (int64_t d = 0; d < self.dim(); ++d) {
      OPGRAPH_CHECK(d == dim || part->shape[d] == self.shape[d], name, ": expected ", self.shape[d], " in dim ", d,
                    " like self ", self.str(), ", got ", part->str());
    }
    length += part->shape[dim];
  }
  return {dim, n, length};
}

TensorMeta diff_shape(const TensorMeta& self, int64_t n, int64_t dim, const TensorMeta* prepend,
                      const TensorMeta* append) {
  const Diff diff = diff_of(self, n, dim, prepend, append);
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  Shape shape = self.shape;
  shape[diff.dim] = std::max<int64_t>(diff.length - diff.n, 0);
  return {self.dtype, shape};
}

template <typename T>
T difference(T later, T earlier) {
  if constexpr (std::is_same_v<T, bool>) {
    return later != earlier;
  } else {
    return static_cast<T>(later - earlier);
  }
}

// Concatenates into scratch and differences in place, n times; each pass
// shortens the dim by one. One loop serves both as kernel and reference: the
// op runs on position ids and masks, far from any hot path.
void diff_kernel(const KernelContext&, const Tensor& self, int64_t n, int64_t dim, const Tensor* prepend,
                 const Tensor* append, const Tensor& output) {
  const Diff diff =
      diff_of(self.meta(), n, dim, prepend ? &prepend->meta() : nullptr, append ? &append->meta() : nullptr);
  const std::array<const Tensor*, 3> inputs{&self, prepend, append};
  dispatch_elementwise(output.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const DimLayout out = layout_around(output.shape(), diff.dim);
    // Not std::vector: vector<bool> packs bits and has no data().
    const auto work = std::make_unique<T[]>(static_cast<size_t>(out.outer * diff.length * out.inner));
    // cat(prepend, self, append) along the dim into `work`.
    int64_t at = 0;
    for (size_t k : {1, 0, 2}) {
      if (inputs[k] == nullptr) continue;
      const DimLayout part = layout_around(inputs[k]->shape(), diff.dim);
      const T* x = inputs[k]->data_ptr<const T>();
      for (int64_t o = 0; o < part.outer; ++o) {
        std::copy_n(x + o * part.size * part.inner, part.size * part.inner,
                    work.get() + (o * diff.length + at) * out.inner);
      }
      at += part.size;
    }
    int64_t length = diff.length;
    for (int64_t pass = 0; pass < diff.n && length > 0; ++pass, --length) {
      for (int64_t o = 0; o < out.outer; ++o) {
        T* block = work.get() + o * diff.length * out.inner;
        for (int64_t k = 0; k + 1 < length; ++k) {
          for (int64_t i = 0; i < out.inner; ++i) {
            block[k * out.inner + i] = difference(block[(k + 1) * out.inner + i], block[k * out.inner + i]);
          }
        }
      }
    }
    T* y = output.data_ptr<T>();
    for (int64_t o = 0; o < out.outer; ++o) {
      std::copy_n(work.get() + o * diff.length * out.inner, out.size * out.inner, y + o * out.size * out.inner);
    }
  });
}

}  // namespace

void register_scan_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
                    .shape = cumsum_shape,
                    OPGRAPH_CPU_AND_REFERENCE(cumsum_kernel)});
  define(builtins, {.schema = "aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) "
                              "-> Tensor",
                    .shape = diff_shape,
                    .cpu = diff_kernel,
                    .reference = diff_kernel});
}

}  // namespace opgraph::kernels
