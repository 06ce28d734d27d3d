// Joining a list of tensors: cat along an existing dim, stack along a new one.
//
// Both are a copy in which every output row (the elements that share their
// indices before the joined dim) is the inputs' rows side by side, so one
// kernel serves both, split over threads by output rows or bytes. The
// references place one element at a time through index arithmetic. Any dtype
// works; the inputs must share it, since a copy has no dtype to promote to.
#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cpu/util/dims.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

std::string element(size_t i) { return "tensors[" + std::to_string(i) + "]"; }

// PyTorch's cat skips 1-D tensors of shape (0,), a legacy stand-in for "no
// tensor", whatever the other inputs' shapes.
bool skipped_by_cat(const TensorMeta& t) { return t.dim() == 1 && t.shape[0] == 0; }

void check_list(std::span<const TensorMeta* const> tensors) {
  OPGRAPH_CHECK(!tensors.empty(), "tensors: expected a non-empty list of tensors");
  for (size_t i = 1; i < tensors.size(); ++i) {
    OPGRAPH_CHECK(tensors[i]->dtype == tensors[0]->dtype, element(i), ": expected ", dtype_name(tensors[0]->dtype),
                  " like tensors[0], got ", tensors[i]->str(), " (dtypes are not promoted)");
  }
}

// ---- Shape functions ------------------------------------------------------

TensorMeta cat_shape(std::span<const TensorMeta* const> tensors, int64_t dim_given) {
  check_list(tensors);
  for (size_t i = 0; i < tensors.size(); ++i) {
    OPGRAPH_CHECK(tensors[i]->dim() > 0, element(i), ": expected a tensor of rank 1 or more, got ", tensors[i]->str(),
                  " (cat joins along an existing dimension; stack adds one)");
  }
  auto kept = std::find_if(tensors.begin(), tensors.end(), [](const TensorMeta* t) { return !skipped_by_cat(*t); });
  // As in PyTorch, only (0,) tensors give a (0,) result, whatever dim says.
  if (kept == tensors.end()) return {tensors[0]->dtype, {0}};
  const TensorMeta& first = **kept;
  const std::string first_name = element(kept - tensors.begin());
  const int64_t dim = wrap_dim(dim_given, first.dim(), "dim");
  Shape shape = first.shape;
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorMeta& t = *tensors[i];
    if (skipped_by_cat(t)) continue;
    OPGRAPH_CHECK(t.dim() == first.dim(), element(i), ": expected rank ", first.dim(), " like ", first_name, ", got ",
                  t.str());
    for (int64_t d = 0; d < t.dim(); ++d) {
      OPGRAPH_CHECK(d == dim || t.shape[d] == first.shape[d], element(i), ": expected size ", first.shape[d],
                    " in dimension ", d, " like ", first_name, ", got ", t.str(), " (sizes must match except in dim ",
                    dim, ")");
    }
    shape[dim] += t.shape[dim];
  }
  return {first.dtype, shape};
}

TensorMeta stack_shape(std::span<const TensorMeta* const> tensors, int64_t dim_given) {
  check_list(tensors);
  const TensorMeta& first = *tensors[0];
  for (size_t i = 1; i < tensors.size(); ++i) {
    OPGRAPH_CHECK(tensors[i]->shape == first.shape, element(i), ": expected shape ", shape_str(first.shape),
                  " like tensors[0], got ", tensors[i]->str());
  }
  const int64_t dim = wrap_dim(dim_given, first.dim() + 1, "dim");
  Shape shape = first.shape;
  shape.insert(shape.begin() + dim, static_cast<int64_t>(tensors.size()));
  return {first.dtype, shape};
}

// ---- Kernel -----------------------------------------------------------------

// Below this many bytes a copy runs on one thread: waking a worker costs about
// as much as copying them.
constexpr int64_t kParallelCopyBytes = int64_t(1) << 18;
// Output rows up to this long are copied input by input over tiles of rows
// that stay in cache, in copies of a fixed size the compiler can inline;
// longer rows segment by segment with memcpy.
constexpr int64_t kNarrowRowBytes = 4096;
constexpr int64_t kTileBytes = int64_t(1) << 14;

// cat and stack alike: every output row (`rows` of them, the product of the
// output's extents before the joined dim) is the inputs' segments side by
// side, input i's being the bytes [offsets[i], offsets[i + 1]) of the row.
struct JoinPlan {
  char* out;
  std::vector<const char*> inputs;
  std::vector<int64_t> offsets;
  int64_t rows, row_bytes;

  int64_t segment(size_t i) const { return offsets[i + 1] - offsets[i]; }
};

// Copies output bytes [begin, end), segment by segment from the one that holds
// `begin`; empty segments are stepped over.
void copy_segments(const JoinPlan& plan, int64_t begin, int64_t end) {
  int64_t row = begin / plan.row_bytes, at = begin % plan.row_bytes;
  size_t i = std::upper_bound(plan.offsets.begin(), plan.offsets.end(), at) - plan.offsets.begin() - 1;
  for (int64_t p = begin; p < end;) {
    const int64_t n = std::min(end - p, plan.offsets[i + 1] - at);
    if (n > 0) {
      std::memcpy(plan.out + p, plan.inputs[i] + row * plan.segment(i) + (at - plan.offsets[i]),
                  static_cast<size_t>(n));
    }
    p += n;
    at += n;
    if (at == plan.offsets[i + 1] && ++i == plan.inputs.size()) {
      i = 0;
      at = 0;
      ++row;
    }
  }
}

// `count` blocks of kBytes (`bytes` when kBytes is 0), consecutive in src, to
// every `dst_stride` bytes of dst.
template <int64_t kBytes>
void scatter_blocks(char* dst, int64_t dst_stride, const char* src, int64_t count, int64_t bytes) {
  const int64_t size = kBytes ? kBytes : bytes;
  for (int64_t k = 0; k < count; ++k) std::memcpy(dst + k * dst_stride, src + k * size, static_cast<size_t>(size));
}

// Copies output rows [begin, end), a tile at a time.
void copy_narrow_rows(const JoinPlan& plan, int64_t begin, int64_t end) {
  const int64_t tile = std::max<int64_t>(1, kTileBytes / plan.row_bytes);
  for (int64_t first = begin; first < end; first += tile) {
    const int64_t count = std::min(tile, end - first);
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      char* dst = plan.out + first * plan.row_bytes + plan.offsets[i];
      const char* src = plan.inputs[i] + first * plan.segment(i);
      switch (plan.segment(i)) {
        case 0: break;
        case 1: scatter_blocks<1>(dst, plan.row_bytes, src, count, 1); break;
        case 2: scatter_blocks<2>(dst, plan.row_bytes, src, count, 2); break;
        case 4: scatter_blocks<4>(dst, plan.row_bytes, src, count, 4); break;
        case 8: scatter_blocks<8>(dst, plan.row_bytes, src, count, 8); break;
        case 16: scatter_blocks<16>(dst, plan.row_bytes, src, count, 16); break;
        default: scatter_blocks<0>(dst, plan.row_bytes, src, count, plan.segment(i));
      }
    }
  }
}

// Runs body(begin, end) over [0, units) of `unit_bytes` each, on the pool's
// threads once there are enough bytes to pay for them.
template <typename Body>
void parallel_copy(const KernelContext& context, int64_t units, int64_t unit_bytes, Body&& body) {
  const int64_t grain = std::max<int64_t>(1, kParallelCopyBytes / unit_bytes);
  if (units <= grain || context.pool == nullptr) {
    body(int64_t{0}, units);
  } else {
    context.pool->parallel_for(0, units, grain, body);
  }
}

// cat and stack alike: `dim` is the output's.
void join_cpu(const KernelContext& context, std::span<const Tensor> inputs, int64_t dim_given, const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t dim = wrap_dim(dim_given, out.dim(), "dim");
  JoinPlan plan{static_cast<char*>(out.data()), {}, {0}, product(std::span(out.shape()).first(dim)), 0};
  for (const Tensor& input : inputs) {
    plan.inputs.push_back(static_cast<const char*>(input.data()));
    plan.offsets.push_back(plan.offsets.back() + input.numel() / plan.rows * static_cast<int64_t>(input.itemsize()));
  }
  plan.row_bytes = plan.offsets.back();
  if (plan.row_bytes <= kNarrowRowBytes) {
    parallel_copy(context, plan.rows, plan.row_bytes,
                  [&plan](int64_t begin, int64_t end) { copy_narrow_rows(plan, begin, end); });
  } else {
    parallel_copy(context, plan.rows * plan.row_bytes, 1,
                  [&plan](int64_t begin, int64_t end) { copy_segments(plan, begin, end); });
  }
}

// ---- References -------------------------------------------------------------

// Copies each element of the contiguous `input` to the element of `out` at
// the multi-index destination(index) returns, one element at a time.
template <typename Destination>
void place_elements(const Tensor& input, const Tensor& out, Destination&& destination) {
  const auto item = static_cast<int64_t>(input.itemsize());
  const Strides out_strides = contiguous_strides(out.shape());
  std::vector<int64_t> index(input.dim(), 0);
  for (int64_t flat = 0; flat < input.numel(); ++flat) {
    const std::vector<int64_t> target = destination(index);
    int64_t position = 0;
    for (size_t d = 0; d < target.size(); ++d) position += target[d] * out_strides[d];
    std::memcpy(static_cast<char*>(out.data()) + position * item, static_cast<const char*>(input.data()) + flat * item,
                static_cast<size_t>(item));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < input.size(static_cast<int64_t>(d))) break;
      index[d] = 0;
    }
  }
}

// Input i's element (..., k, ...) lands at (..., offset_i + k, ...), offset_i
// being the extents along dim of the inputs before it.
void cat_reference(const KernelContext&, std::span<const Tensor> inputs, int64_t dim_given, const Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t dim = wrap_dim(dim_given, out.dim(), "dim");
  int64_t offset = 0;
  for (const Tensor& input : inputs) {
    if (skipped_by_cat(input.meta())) continue;
    place_elements(input, out, [&](std::vector<int64_t> index) {
      index[dim] += offset;
      return index;
    });
    offset += input.size(dim);
  }
}

// Input i's element (..., k, ...) lands at (..., i, k, ...), i at dim.
void stack_reference(const KernelContext&, std::span<const Tensor> inputs, int64_t dim_given, const Tensor& out) {
  const int64_t dim = wrap_dim(dim_given, out.dim(), "dim");
  for (size_t i = 0; i < inputs.size(); ++i) {
    place_elements(inputs[i], out, [&](std::vector<int64_t> index) {
      index.insert(index.begin() + dim, static_cast<int64_t>(i));
      return index;
    });
  }
}

}  // namespace

void register_concat_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::cat(Tensor[] tensors, int dim=0) -> Tensor",
                    .shape = cat_shape,
                    .cpu = join_cpu,
                    .reference = cat_reference});
  define(builtins, {.schema = "aten::stack(Tensor[] tensors, int dim=0) -> Tensor",
                    .shape = stack_shape,
                    .cpu = join_cpu,
                    .reference = stack_reference});
}

}  // namespace opgraph::kernels
