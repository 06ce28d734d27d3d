// Ops whose results come from what only a run knows: aten::nonzero, whose
// output size depends on the input's values, and the scalar ops that
// torch.export writes for sizes and element values (aten::sym_size.int,
// aten::sym_numel, aten::sym_stride.int, aten::sym_storage_offset,
// aten::_local_scalar_dense).
//
// nonzero is defined with data-dependent shapes (OpDef::data_dependent_shapes):
// its shape function gives the largest output, one row per element, and the
// kernel reports how many rows it filled. The scalar ops return SymInt or
// Scalar; the registry gives them a 0-d tensor output: int64 for the sizes,
// the input's dtype for _local_scalar_dense (whose Scalar keeps it in ATen).
#include <cstring>
#include <numeric>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// ---- nonzero ----------------------------------------------------------------

std::vector<TensorMeta> nonzero_shape(const TensorMeta& self) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return {{DType::Int64, {self.numel(), self.dim()}}};
}

// Writes the index of every nonzero element of self[begin, end) in row-major
// order, from `out` on; returns how many. One division per dim for the first
// element, then the index is stepped like an odometer.
template <typename T>
int64_t write_nonzero(const T* self, const Shape& shape, int64_t begin, int64_t end, int64_t* out) {
  if (begin == end) return 0;  // an empty tensor has no index to start from
  const size_t rank = shape.size();
  Shape index(rank);
  for (size_t d = rank, rest = static_cast<size_t>(begin); d-- > 0;) {
    index[d] = static_cast<int64_t>(rest % static_cast<size_t>(shape[d]));
    rest /= static_cast<size_t>(shape[d]);
  }
  int64_t found = 0;
  for (int64_t i = begin; i < end; ++i) {
    if (self[i] != T(0)) {
      std::copy(index.begin(), index.end(), out + found * static_cast<int64_t>(rank));
      ++found;
    }
    for (size_t d = rank; d-- > 0 && ++index[d] == shape[d];) index[d] = 0;
  }
  return found;
}

template <typename T>
int64_t count_nonzero(const T* self, int64_t begin, int64_t end) {
  int64_t count = 0;
  for (int64_t i = begin; i < end; ++i) count += self[i] != T(0);
  return count;
}

// Counts each chunk's nonzeros, then each chunk writes its rows after the
// rows of the chunks before it: the output is the same as one pass's.
void nonzero_kernel(const KernelContext& context, const Tensor& self, const Tensor& output) {
  const int64_t n = self.numel(), rank = self.dim();
  auto* out = output.data_ptr<int64_t>();
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* data = self.data_ptr<const T>();
    const int64_t chunks = std::max<int64_t>(1, n / kParallelElements);
    const auto chunk_begin = [&](int64_t c) { return n / chunks * c + std::min(c, n % chunks); };
    std::vector<int64_t> first_row(static_cast<size_t>(chunks) + 1, 0);
    context.pool->parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) first_row[c + 1] = count_nonzero(data, chunk_begin(c), chunk_begin(c + 1));
    });
    std::partial_sum(first_row.begin(), first_row.end(), first_row.begin());
    context.pool->parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        write_nonzero(data, self.shape(), chunk_begin(c), chunk_begin(c + 1), out + first_row[c] * rank);
      }
    });
    context.set_output_shape(0, {first_row.back(), rank});
  });
}

// One element at a time, its index by division.
void nonzero_reference(const KernelContext& context, const Tensor& self, const Tensor& output) {
  const int64_t rank = self.dim();
  auto* out = output.data_ptr<int64_t>();
  int64_t rows = 0;
  for (int64_t i = 0; i < self.numel(); ++i) {
    if (element_as<double>(self, i) == 0) continue;
    for (int64_t d = rank - 1, rest = i; d >= 0; --d) {
      out[rows * rank + d] = rest % self.shape()[d];
      rest /= self.shape()[d];
    }
    ++rows;
  }
  context.set_output_shape(0, {rows, rank});
}

// ---- scalars of sizes and values --------------------------------------------

TensorMeta int_scalar_shape(const TensorMeta&) { return {DType::Int64, {}}; }

// sym_size and sym_stride: a dim of self, which a 0-d tensor does not have.
TensorMeta dim_scalar_shape(const TensorMeta& self, int64_t dim) {
  OPGRAPH_CHECK(self.dim() > 0, "self: expected a tensor with dims, got ", self.str());
  wrap_dim(dim, self.dim(), "dim");
  return int_scalar_shape(self);
}

void write_int(const Tensor& out, int64_t value) { *out.data_ptr<int64_t>() = value; }

void sym_size_kernel(const KernelContext&, const Tensor& self, int64_t dim, const Tensor& out) {
  write_int(out, self.size(wrap_dim(dim, self.dim(), "dim")));
}

void sym_numel_kernel(const KernelContext&, const Tensor& self, const Tensor& out) { write_int(out, self.numel()); }

// The strides the kernel is given: a Session passes contiguous tensors, a
// direct call passes the caller's (the op accepts strided inputs).
void sym_stride_kernel(const KernelContext&, const Tensor& self, int64_t dim, const Tensor& out) {
  write_int(out, self.stride(wrap_dim(dim, self.dim(), "dim")));
}

// An opgraph tensor starts where its data does: its offset into that is 0.
void sym_storage_offset_kernel(const KernelContext&, const Tensor&, const Tensor& out) { write_int(out, 0); }

// A Session passes contiguous tensors; a direct call's strided input is
// copied first (the op does not accept strided inputs), so self is always
// contiguous in every memory format it can be asked about.
TensorMeta is_contiguous_shape(const TensorMeta&, std::string_view format) {
  OPGRAPH_CHECK(format == "contiguous_format" || format == "preserve_format",
                "memory_format: opgraph tensors are row-major (contiguous_format), got ", format);
  return {DType::Bool, {}};
}

void is_contiguous_kernel(const KernelContext&, const Tensor&, std::string_view, const Tensor& out) {
  *out.data_ptr<bool>() = true;
}

TensorMeta local_scalar_shape(const TensorMeta& self) {
  OPGRAPH_CHECK(self.numel() == 1, "self: expected a tensor with one element, got ", self.str());
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return {self.dtype, {}};
}

void local_scalar_kernel(const KernelContext&, const Tensor& self, const Tensor& out) {
  std::memcpy(out.data(), self.data(), out.nbytes());
}

}  // namespace

void register_data_dependent_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::nonzero(Tensor self) -> Tensor",
                    .shape = nonzero_shape,
                    .cpu = nonzero_kernel,
                    .reference = nonzero_reference,
                    .data_dependent_shapes = true});
  define(builtins, {.schema = "aten::sym_size.int(Tensor self, int dim) -> SymInt",
                    .shape = dim_scalar_shape,
                    .cpu = sym_size_kernel,
                    .reference = sym_size_kernel,
                    .accepts_strided_inputs = true});
  define(builtins, {.schema = "aten::sym_numel(Tensor self) -> SymInt",
                    .shape = int_scalar_shape,
                    .cpu = sym_numel_kernel,
                    .reference = sym_numel_kernel,
                    .accepts_strided_inputs = true});
  define(builtins, {.schema = "aten::sym_stride.int(Tensor self, int dim) -> SymInt",
                    .shape = dim_scalar_shape,
                    .cpu = sym_stride_kernel,
                    .reference = sym_stride_kernel,
                    .accepts_strided_inputs = true});
  define(builtins, {.schema = "aten::sym_storage_offset(Tensor self) -> SymInt",
                    .shape = int_scalar_shape,
                    .cpu = sym_storage_offset_kernel,
                    .reference = sym_storage_offset_kernel,
                    .accepts_strided_inputs = true});
  define(builtins,
         {.schema = "aten::sym_is_contiguous(Tensor self, MemoryFormat memory_format=contiguous_format) -> SymBool",
          .shape = is_contiguous_shape,
          .cpu = is_contiguous_kernel,
          .reference = is_contiguous_kernel});
  define(builtins, {.schema = "aten::_local_scalar_dense(Tensor self) -> Scalar",
                    .shape = local_scalar_shape,
                    .cpu = local_scalar_kernel,
                    .reference = local_scalar_kernel});
}

}  // namespace opgraph::kernels
