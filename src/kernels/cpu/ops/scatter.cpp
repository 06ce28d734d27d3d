// Writing elements at positions held in index tensors or masks, into a copy
// of self: scatter (src and value), scatter_add, scatter_reduce, index_put
// (and index_put_), select_scatter, slice_scatter, masked_scatter; and the
// embedding ops that sum rows by index: embedding_dense_backward and
// _embedding_bag (and embedding_bag).
//
// Each is functional: the output starts as a copy of self (or of zeros) and
// self is left as it was. Where several elements land on one position they
// combine in the order of the index tensor's elements, in the fast kernel as
// in the reference, so both give one answer; scatter without a reduction
// keeps the last (ATen leaves that order unspecified). An index out of range
// is an error naming it, never a write outside the output.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/indexing.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/cpu/util/view_layout.h"

namespace opgraph::kernels {
namespace {

void copy_self(const Tensor& self, const Tensor& out) {
  Tensor result = out;
  result.copy_(self);
}

// ---- scatter family: out[..., index[..., i, ...], ...] (op)= src[..., i, ...] -----

enum class Reduce { kNone, kSum, kProd, kMean, kMax, kMin };

// Which op: where the values come from, and how they combine.
struct Scatter {
  bool scalar;            // scatter.value: a Scalar `value` in place of src
  Reduce reduce;          // unless read from the attributes:
  bool reduce_attribute;  // scatter_reduce's `reduce` and `include_self`
};

constexpr Scatter kScatterSrc{false, Reduce::kNone, false};
constexpr Scatter kScatterValue{true, Reduce::kNone, false};
constexpr Scatter kScatterAdd{false, Reduce::kSum, false};
constexpr Scatter kScatterReduce{false, Reduce::kNone, true};

struct Reduction {
  Reduce reduce;
  bool include_self;
};

// The four scatter schemas share these functions and differ in their
// attributes after `dim` (scatter.value's Scalar value, scatter_reduce's
// reduce and include_self), so they keep the raw kernel form: where each sits
// in a schema's Attrs is found when the op is defined (ScatterPositions), and
// a call reads it there (ScatterAttrs).
struct ScatterPositions {
  size_t dim;
  std::optional<size_t> value, reduce, include_self;
  explicit ScatterPositions(const Schema& schema)
      : dim(attribute_index(schema, "dim").value()),
        value(attribute_index(schema, "value")),
        reduce(attribute_index(schema, "reduce")),
        include_self(attribute_index(schema, "include_self")) {}
};

struct ScatterAttrs {
  int64_t dim;
  const AttrValue* value = nullptr;
  const std::string* reduce = nullptr;
  bool include_self = true;
  ScatterAttrs(const ScatterPositions& at, const Attrs& attrs) : dim(std::get<int64_t>(attrs[at.dim])) {
    if (at.value) value = &attrs[*at.value];
    if (at.reduce) reduce = &std::get<std::string>(attrs[*at.reduce]);
    if (at.include_self) include_self = std::get<bool>(attrs[*at.include_self]);
  }
};

template <const Scatter& kScatter>
Reduction reduction_of(const ScatterAttrs& attrs) {
  if (!kScatter.reduce_attribute) return {kScatter.reduce, true};
  const std::string& name = *attrs.reduce;
  static constexpr std::pair<std::string_view, Reduce> kNames[] = {{"sum", Reduce::kSum},
                                                                   {"prod", Reduce::kProd},
                                                                   {"mean", Reduce::kMean},
                                                                   {"amax", Reduce::kMax},
                                                                   {"amin", Reduce::kMin}};
  for (const auto& [known, reduce] : kNames) {
    if (name == known) return {reduce, attrs.include_self};
  }
  throw Error(detail::concat("reduce: expected one of sum, prod, mean, amax, amin, got '", name, "'"));
}

// scatter.value's Scalar, given as an int or a float.
double scalar_of(const AttrValue& value) {
  const auto* integer = std::get_if<int64_t>(&value);
  return integer ? static_cast<double>(*integer) : std::get<double>(value);
}

// A tensor of rank 0 is seen as rank 1, as ATen's scatter does.
Shape at_least_1d(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

template <const Scatter& kScatter>
std::vector<TensorMeta> scatter_shape(std::span<const TensorMeta* const> inputs, const ScatterAttrs& attrs) {
  const TensorMeta &self = *inputs[0], &index = *inputs[1];
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  check_index_dtype(index);
  const Reduction reduction = reduction_of<kScatter>(attrs);
  OPGRAPH_CHECK(reduction.reduce == Reduce::kNone || self.dtype != DType::Bool,
                "self: expected a numeric dtype for a reduction, got ", self.str());
  const int64_t dim = wrap_dim(attrs.dim, self.dim(), "dim");
  const Shape self_shape = at_least_1d(self.shape), index_shape = at_least_1d(index.shape);
  OPGRAPH_CHECK(index_shape.size() == self_shape.size(), "index: expected rank ", self.dim(), " like self ", self.str(),
                ", got ", index.str());
  Shape src_shape = index_shape;  // a Scalar value stands for a src as large as index
  if (!kScatter.scalar) {
    const TensorMeta& src = *inputs[2];
    OPGRAPH_CHECK(src.dtype == self.dtype, "src: expected ", dtype_name(self.dtype), " like self, got ", src.str());
    src_shape = at_least_1d(src.shape);
    OPGRAPH_CHECK(src_shape.size() == self_shape.size(), "src: expected rank ", self.dim(), " like self ", self.str(),
                  ", got ", src.str());
  }
  for (size_t d = 0; d < index_shape.size(); ++d) {
    OPGRAPH_CHECK(index_shape[d] <= src_shape[d] && (static_cast<int64_t>(d) == dim || index_shape[d] <= self_shape[d]),
                  "index: expected at most src's extents ", shape_str(src_shape), " and, except in dim ", dim,
                  ", self's ", shape_str(self_shape), "; got ", index.str());
  }
  return {self};
}

// Calls visit(target, i, source) for the elements of index, in order: i is
// the element's position in index, target where it scatters to in
// (contiguous) self but for dim, where the index decides, and source its
// position in src. Elements whose coordinates before `dim` differ never land
// on one position, so the fast kernel splits those blocks over threads.
template <bool kReference, typename Visit>
void for_each_scatter(const KernelContext& context, const Shape& self_shape, const Shape& index_shape,
                      const Shape& src_shape, int64_t dim, const Visit& visit) {
  const int64_t count = product(index_shape);
  if (count == 0) return;
  Strides target_strides = contiguous_strides(self_shape);
  target_strides[dim] = 0;
  const Strides src_strides = contiguous_strides(src_shape);
  if constexpr (kReference) {
    for (int64_t i = 0; i < count; ++i) {
      visit(strided_offset(i, index_shape, target_strides), i, strided_offset(i, index_shape, src_strides));
    }
  } else {
    const std::array<Strides, 3> strides{contiguous_strides(index_shape), target_strides, src_strides};
    const int64_t cols = index_shape.back(), rows = count / cols;
    const int64_t blocks = product(std::span(index_shape).first(dim));
    const int64_t rows_per_block = rows / blocks;
    parallel_items(context, blocks, rows_per_block * cols, [&](int64_t begin, int64_t end) {
      for_each_row(std::span<const int64_t>(index_shape), strides, begin * rows_per_block, end * rows_per_block,
                   [&](const std::array<int64_t, 3>& at) {
                     for (int64_t j = 0; j < cols; ++j) {
                       visit(at[1] + j * strides[1].back(), at[0] + j, at[2] + j * strides[2].back());
                     }
                   });
    });
  }
}

template <typename T>
T combine(Reduce reduce, T a, T b) {
  switch (reduce) {
    case Reduce::kSum:
    case Reduce::kMean: return static_cast<T>(a + b);
    case Reduce::kProd: return static_cast<T>(a * b);
    case Reduce::kMax: return b > a || b != b ? b : a;  // a NaN wins, as in ATen
    case Reduce::kMin: return b < a || b != b ? b : a;
    case Reduce::kNone: break;
  }
  return b;
}

// A mean's sum over its count: floored for integers, as ATen divides them.
template <typename T>
T mean_of(T sum, int64_t count) {
  if constexpr (std::is_same_v<T, bool>) {
    return sum;  // no reduction takes bool (see scatter_shape)
  } else if constexpr (std::is_floating_point_v<T>) {
    return sum / static_cast<T>(count);
  } else {
    const T quotient = static_cast<T>(sum / count);
    return quotient * count != sum && (sum < 0) != (count < 0) ? static_cast<T>(quotient - 1) : quotient;
  }
}

template <const Scatter& kScatter, bool kReference>
void scatter_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const ScatterAttrs& attrs) {
  const Tensor &self = inputs[0], &index = inputs[1], &out = outputs[0];
  copy_self(self, out);
  const Reduction reduction = reduction_of<kScatter>(attrs);
  const Shape self_shape = at_least_1d(self.shape()), index_shape = at_least_1d(index.shape());
  const Shape src_shape = kScatter.scalar ? index_shape : at_least_1d(inputs[2].shape());
  const int64_t dim = wrap_dim(attrs.dim, self.dim(), "dim");
  const int64_t n = self_shape[dim], stride = contiguous_strides(self_shape)[dim];
  // How many values each position holds so far, where it matters: for a mean,
  // and to take the first value as it is when self is not included.
  const bool counted = reduction.reduce == Reduce::kMean || !reduction.include_self;
  std::vector<int64_t> counts(counted ? out.numel() : 0, reduction.include_self ? 1 : 0);
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T* y = out.data_ptr<T>();
    const T value = kScatter.scalar ? static_cast<T>(scalar_of(*attrs.value)) : T{};
    const T* src = kScatter.scalar ? &value : inputs[2].data_ptr<const T>();
    dispatch_index(index.dtype(), [&](auto index_zero) {
      using Index = decltype(index_zero);
      const Index* at = index.data_ptr<const Index>();
      for_each_scatter<kReference>(context, self_shape, index_shape, src_shape, dim,
                                   [&](int64_t target, int64_t i, int64_t source) {
                                     const int64_t t = target + position(at, i, n) * stride;
                                     const T v = src[kScatter.scalar ? 0 : source];
                                     if (counted && counts[t]++ == 0) {
                                       y[t] = v;
                                     } else {
                                       y[t] = combine(reduction.reduce, y[t], v);
                                     }
                                   });
    });
    if (reduction.reduce == Reduce::kMean) {
      for (int64_t t = 0; t < out.numel(); ++t) {
        if (counts[t] > 1) y[t] = mean_of(y[t], counts[t]);
      }
    }
  });
}

template <const Scatter& kScatter>
void define_scatter(BuiltinOps& builtins, const char* schema,
                    std::source_location where = std::source_location::current()) {
  using Kernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>, const ScatterAttrs&);
  const ScatterPositions at(Schema::parse(schema));
  auto kernel = [at](Kernel fn) -> KernelFn {
    return [fn, at](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) { fn(context, inputs, outputs, ScatterAttrs(at, attrs)); };
  };
  define(builtins,
         {.schema = schema,
          .shape = [at](std::span<const TensorMeta* const> inputs,
                        const Attrs& attrs) { return scatter_shape<kScatter>(inputs, ScatterAttrs(at, attrs)); },
          .cpu = kernel(scatter_kernel<kScatter, false>),
          .reference = kernel(scatter_kernel<kScatter, true>)},
         where);
}

// ---- index_put: out[indices] (+)= values ---------------------------------------

// A boolean mask among the indices (x[mask] = v, as torch.export writes it)
// over k dims of self stands for k index tensors: the coordinates of its true
// elements, in order. How many there are only the mask's values tell, so the
// shape function checks values against the indexed shape only without masks;
// the kernel checks them always.

// Every index in range before anything is written: out may be self's own
// memory (a state updated in place), which a failed call must leave as it was.
void check_indices(const Tensor& self, std::span<const Tensor> indices, const Indexing& plan) {
  for (int64_t d : plan.indexed) {
    const Tensor& index = indices[static_cast<size_t>(d)];
    dispatch_index(index.dtype(), [&](auto zero) {
      using Index = decltype(zero);
      const Index* at = index.data_ptr<const Index>();
      for (int64_t i = 0; i < index.numel(); ++i) position<true>(at, i, self.shape()[d]);
    });
  }
}

void check_values(const TensorMeta& values, const Indexing& plan) {
  bool fits = values.shape.size() <= plan.out_shape.size();
  for (size_t i = 1; fits && i <= values.shape.size(); ++i) {
    const int64_t have = values.shape[values.shape.size() - i], want = plan.out_shape[plan.out_shape.size() - i];
    fits = have == want || have == 1;
  }
  OPGRAPH_CHECK(fits, "values: expected a shape that broadcasts to the indexed ", shape_str(plan.out_shape), ", got ",
                values.str());
}

TensorMeta index_put_shape(const TensorMeta& self, std::span<const TensorMeta* const> indices, const TensorMeta& values,
                           bool) {
  const size_t count = indices.size();
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  OPGRAPH_CHECK(values.dtype == self.dtype, "values: expected ", dtype_name(self.dtype), " like self, got ",
                values.str());
  static const TensorMeta kMaskIndex{DType::Int64, {1}};  // stands for a mask's coordinates along one dim
  std::vector<const TensorMeta*> metas;
  bool masked = false;
  for (size_t i = 0; i < count; ++i) {
    const TensorMeta* index = indices[i];
    if (index == nullptr || index->dtype != DType::Bool) {
      metas.push_back(index);
      continue;
    }
    const size_t d = metas.size();
    OPGRAPH_CHECK(index->dim() > 0 && d + index->shape.size() <= self.shape.size() &&
                      std::equal(index->shape.begin(), index->shape.end(), self.shape.begin() + d),
                  "indices[", i, "]: expected a mask of self's extents from dim ", d, " of ", self.str(), ", got ",
                  index->str());
    metas.insert(metas.end(), index->shape.size(), &kMaskIndex);
    masked = true;
  }
  const Indexing plan = plan_indexing(self, metas);
  if (!masked) check_values(values, plan);
  return self;
}

// The index tensors with each mask replaced by the coordinates of its true
// elements, one int64 tensor per dim it covers.
std::vector<Tensor> unmasked(std::span<const Tensor> indices) {
  std::vector<Tensor> result;
  for (const Tensor& index : indices) {
    if (!index.defined() || index.dtype() != DType::Bool) {
      result.push_back(index);
      continue;
    }
    const bool* mask = index.data_ptr<const bool>();
    const auto count = static_cast<int64_t>(std::count(mask, mask + index.numel(), true));
    const size_t first = result.size();
    for (int64_t k = 0; k < index.dim(); ++k) result.push_back(Tensor::empty({count}, DType::Int64));
    for (int64_t i = 0, n = 0; i < index.numel(); ++i) {
      if (!mask[i]) continue;
      for (int64_t k = index.dim() - 1, rest = i; k >= 0; rest /= index.shape()[k], --k) {
        result[first + k].data_ptr<int64_t>()[n] = rest % index.shape()[k];
      }
      ++n;
    }
  }
  return result;
}

// Walks the indexed shape with an odometer. The fast kernel takes the
// trailing dims that self holds contiguously, and that values either walks in
// the same order or repeats one element over, as one block per step.
template <bool kReference>
void index_put_kernel(const KernelContext&, const Tensor& self, std::span<const Tensor> given_indices,
                      const Tensor& values, bool accumulate, const Tensor& out) {
  const std::vector<Tensor> indices = unmasked(given_indices);
  const Indexing plan = plan_indexing(self.meta(), indices);
  check_values(values.meta(), plan);
  check_indices(self, indices, plan);
  copy_self(self, out);
  const Shape& shape = plan.out_shape;
  const int64_t total = product(shape);
  if (total == 0) return;
  const Strides value_strides = broadcast_strides(values.shape(), shape);
  const Strides dense = contiguous_strides(shape);
  const bool along = !shape.empty() && value_strides.back() != 0;  // values walk the block, else repeat
  // Whether values walk dim k as the block does (or repeat one element over it).
  const auto values_fit = [&](size_t k) { return shape[k] == 1 || value_strides[k] == (along ? dense[k] : 0); };
  const size_t outer = kReference ? shape.size() : plan.block_start(self.dim(), values_fit);
  const int64_t block = product(std::span(shape).subspan(outer));
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T* y = out.data_ptr<T>();
    const T* v = values.data_ptr<const T>();
    std::vector<int64_t> coordinate(outer, 0);
    for (int64_t step = 0, steps = total / block; step < steps; ++step) {
      T* target = y + plan.offset(coordinate, self, indices);
      const T* from = v;
      for (size_t k = 0; k < outer; ++k) from += coordinate[k] * value_strides[k];
      const int64_t from_step = along ? 1 : 0;
      if (accumulate) {
        for (int64_t j = 0; j < block; ++j) target[j] = static_cast<T>(target[j] + from[j * from_step]);
      } else {
        for (int64_t j = 0; j < block; ++j) target[j] = from[j * from_step];
      }
      for (size_t k = outer; k-- > 0;) {
        if (++coordinate[k] < shape[k]) break;
        coordinate[k] = 0;
      }
    }
  });
}

// ---- select_scatter and slice_scatter: src written into a view of self ------------

// The typed shape function and kernels of the op that writes src into the
// view of self kLayout makes from the op's attributes.
template <auto kLayout, typename Signature = decltype(kLayout)>
struct ViewScatter;

template <auto kLayout, typename... A>
struct ViewScatter<kLayout, Layout (*)(const TensorMeta&, A...)> {
  static TensorMeta shape(const TensorMeta& self, const TensorMeta& src, A... attributes) {
    const TensorMeta view{self.dtype, kLayout(self, attributes...).shape};
    OPGRAPH_CHECK(src == view, "src: expected ", view.str(), ", the part of self ", self.str(), " it replaces, got ",
                  src.str());
    return self;
  }

  static void cpu(const KernelContext&, const Tensor& self, const Tensor& src, A... attributes, const Tensor& out) {
    copy_self(self, out);
    const Layout layout = kLayout(self.meta(), attributes...);
    out.as_strided(layout.shape, layout.strides, layout.offset).copy_(src);
  }

  // Element by element through the layout's index arithmetic.
  static void reference(const KernelContext&, const Tensor& self, const Tensor& src_tensor, A... attributes,
                        const Tensor& output) {
    copy_self(self, output);
    const Layout layout = kLayout(self.meta(), attributes...);
    const auto* src = static_cast<const char*>(src_tensor.data());
    auto* out = static_cast<char*>(output.data());
    const auto item = static_cast<int64_t>(self.itemsize());
    for (int64_t i = 0; i < src_tensor.numel(); ++i) {
      const int64_t target = layout.offset + strided_offset(i, layout.shape, layout.strides);
      std::memcpy(out + target * item, src + i * item, static_cast<size_t>(item));
    }
  }
};

template <auto kLayout>
void define_view_scatter(BuiltinOps& builtins, const char* schema,
                         std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = ViewScatter<kLayout>::shape,
          .cpu = ViewScatter<kLayout>::cpu,
          .reference = ViewScatter<kLayout>::reference,
          .in_place_input = 0},
         where);
}

// ---- masked_scatter: source's elements, in order, where mask is true ------------

TensorMeta masked_scatter_shape(const TensorMeta& self, const TensorMeta& mask, const TensorMeta& source) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  OPGRAPH_CHECK(mask.dtype == DType::Bool, "mask: expected bool, got ", mask.str());
  OPGRAPH_CHECK(source.dtype == self.dtype, "source: expected ", dtype_name(self.dtype), " like self, got ",
                source.str());
  return {self.dtype, broadcast_shapes(self.shape, mask.shape)};
}

// Takes source's elements one after the other; running out is an error.
template <typename T>
struct Source {
  const T* data;
  int64_t size, next = 0;

  T take() {
    OPGRAPH_CHECK(next < size, "source: mask holds more true elements than source's ", size);
    return data[next++];
  }
};

// One pass in order, the merged broadcast shape row by row; with kReference
// element by element through index arithmetic.
template <bool kReference>
void masked_scatter_kernel(const KernelContext& context, const Tensor& self, const Tensor& mask,
                           const Tensor& source_tensor, const Tensor& out) {
  if (out.numel() == 0) return;
  dispatch_elementwise(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    Source<T> source{source_tensor.data_ptr<const T>(), source_tensor.numel()};
    const Input<T> x{self.data_ptr<const T>(), self.shape()};
    const Input<bool> m{mask.data_ptr<const bool>(), mask.shape()};
    const auto pick = [&source](T value, bool masked) { return masked ? source.take() : value; };
    if constexpr (kReference) {
      map_broadcast<T, true>(context, out, pick, x, m);
    } else {
      Shape shape = out.shape().empty() ? Shape{1} : out.shape();
      std::array<Strides, 3> strides{contiguous_strides(shape), broadcast_strides(x.shape, shape),
                                     broadcast_strides(m.shape, shape)};
      if (out.numel() > 1) coalesce(shape, strides);
      const int64_t cols = shape.back();
      T* y = out.data_ptr<T>();
      for_each_row(std::span<const int64_t>(shape), strides, 0, out.numel() / cols,
                   [&](const std::array<int64_t, 3>& at) {
                     const T* self_row = x.data + at[1];
                     const bool* mask_row = m.data + at[2];
                     for (int64_t j = 0; j < cols; ++j) {
                       y[at[0] + j] = pick(self_row[j * strides[1].back()], mask_row[j * strides[2].back()]);
                     }
                   });
    }
  });
}

// ---- embedding_dense_backward: the gradient of embedding's weight -------------

// grad_output (..., D) with indices (...) -> (num_weights, D).
TensorMeta embedding_backward_shape(const TensorMeta& grad, const TensorMeta& indices, int64_t num_weights, int64_t,
                                    bool) {
  check_floating(grad, "grad_output");
  check_index_dtype(indices, "indices");
  OPGRAPH_CHECK(
      grad.dim() == indices.dim() + 1 && std::equal(indices.shape.begin(), indices.shape.end(), grad.shape.begin()),
      "grad_output: expected indices' shape ", shape_str(indices.shape), " and one more dim, got ", grad.str());
  OPGRAPH_CHECK(num_weights >= 0, "num_weights: expected a non-negative count, got ", num_weights);
  return {grad.dtype, {num_weights, grad.shape.back()}};
}

// Per row of the result: the weight each of its indices' gradient rows gets
// (0 for padding_idx; 1, or 1 / how often the index occurs with
// scale_grad_by_freq), checking every index.
template <typename Index>
std::vector<double> row_scales(const Index* at, int64_t count, int64_t num_weights, int64_t padding_idx,
                               bool scale_grad_by_freq) {
  std::vector<double> occurrences(num_weights, 0.0);
  for (int64_t i = 0; i < count; ++i) occurrences[position(at, i, num_weights)] += 1;
  std::vector<double> scale(num_weights, 1.0);
  if (scale_grad_by_freq) {
    for (int64_t k = 0; k < num_weights; ++k) scale[k] = occurrences[k] > 0 ? 1.0 / occurrences[k] : 1.0;
  }
  if (padding_idx >= 0 && padding_idx < num_weights) scale[padding_idx] = 0;
  return scale;
}

// Columns split over threads: every thread adds all gradient rows, each into
// its own columns.
template <bool kReference>
void embedding_backward_kernel(const KernelContext& context, const Tensor& grad, const Tensor& indices, int64_t,
                               int64_t padding_idx, bool scale_grad_by_freq, const Tensor& out) {
  const int64_t num_weights = out.size(0), cols = out.size(1), count = indices.numel();
  dispatch_floating(grad.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    const T* g = grad.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    std::fill_n(y, out.numel(), T{});
    dispatch_index(indices.dtype(), [&](auto index_zero) {
      using Index = decltype(index_zero);
      const Index* at = indices.data_ptr<const Index>();
      const std::vector<double> scale = row_scales(at, count, num_weights, padding_idx, scale_grad_by_freq);
      if constexpr (kReference) {
        std::vector<double> sum(out.numel(), 0.0);
        for (int64_t i = 0; i < count; ++i) {
          for (int64_t c = 0; c < cols; ++c) sum[at[i] * cols + c] += scale[at[i]] * g[i * cols + c];
        }
        std::transform(sum.begin(), sum.end(), y, [](double s) { return static_cast<T>(s); });
      } else {
        parallel_items(context, cols, count, [&](int64_t begin, int64_t end) {
          for (int64_t i = 0; i < count; ++i) {
            const T s = static_cast<T>(scale[at[i]]);
            if (s == 0) continue;
            T* row = y + at[i] * cols;
            const T* from = g + i * cols;
            for (int64_t c = begin; c < end; ++c) row[c] += s * from[c];
          }
        });
      }
    });
  });
}

// ---- _embedding_bag: sums, means or maxima of bags of embedding rows ------------

enum class BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

// The three embedding_bag schemas share these functions and differ in
// padding_idx (an int, an int? or absent), so they keep the raw kernel form:
// where each attribute sits in a schema's Attrs is found when the op is
// defined (BagPositions), and a call reads it there (BagAttrs).
struct BagPositions {
  size_t mode, include_last_offset;
  std::optional<size_t> padding_idx;
  explicit BagPositions(const Schema& schema)
      : mode(attribute_index(schema, "mode").value()),
        include_last_offset(attribute_index(schema, "include_last_offset").value()),
        padding_idx(attribute_index(schema, "padding_idx")) {}
};

struct BagAttrs {
  BagMode mode;
  bool include_last_offset;
  int64_t padding_idx = -1;  // -1 for None or absent

  BagAttrs(const BagPositions& at, const Attrs& attrs)
      : mode(checked_mode(std::get<int64_t>(attrs[at.mode]))),
        include_last_offset(std::get<bool>(attrs[at.include_last_offset])) {
    if (!at.padding_idx) return;
    if (const auto* index = std::get_if<int64_t>(&attrs[*at.padding_idx])) padding_idx = *index;
  }

  static BagMode checked_mode(int64_t mode) {
    OPGRAPH_CHECK(mode >= 0 && mode <= 2, "mode: expected 0 (sum), 1 (mean) or 2 (max), got ", mode);
    return static_cast<BagMode>(mode);
  }
};

// Outputs (output, offset2bag, bag_size, max_indices), shaped as ATen's CPU
// kernel shapes them: offset2bag is empty where ATen skips it (float32 sums
// without padding_idx), bag_size counts only for mean and max, and
// max_indices is per element for max, else bag_size for mean and zeros for sum.
std::vector<TensorMeta> embedding_bag_shape(std::span<const TensorMeta* const> inputs, const BagAttrs& attrs) {
  const TensorMeta &weight = *inputs[0], &indices = *inputs[1], &offsets = *inputs[2];
  const TensorMeta* per_sample_weights = inputs[3];
  check_floating(weight, "weight");
  OPGRAPH_CHECK(weight.dim() == 2, "weight: expected rank 2 (num_embeddings, embedding_dim), got ", weight.str());
  check_index_dtype(indices, "indices");
  OPGRAPH_CHECK(indices.dim() == 1, "indices: expected a 1-d tensor, got ", indices.str());
  OPGRAPH_CHECK(offsets.dim() == 1 && offsets.dtype == indices.dtype, "offsets: expected a 1-d ",
                dtype_name(indices.dtype), " tensor like indices, got ", offsets.str());
  const BagMode mode = attrs.mode;
  if (per_sample_weights != nullptr) {
    OPGRAPH_CHECK(mode == BagMode::kSum, "per_sample_weights: only mode 0 (sum) takes them, got mode ",
                  static_cast<int64_t>(mode));
    check_same_meta(*per_sample_weights, "per_sample_weights", {weight.dtype, indices.shape}, "indices");
  }
  const bool include_last_offset = attrs.include_last_offset;
  OPGRAPH_CHECK(!include_last_offset || offsets.numel() > 0,
                "offsets: expected at least one offset with include_last_offset, got none");
  const int64_t bags = offsets.numel() - (include_last_offset ? 1 : 0), dim = weight.shape[1];
  const bool offset2bag = mode != BagMode::kSum || weight.dtype != DType::Float32 || attrs.padding_idx >= 0;
  const Shape max_indices = mode == BagMode::kMax ? Shape{bags, dim} : Shape{bags};
  return {{weight.dtype, {bags, dim}},
          {indices.dtype, {offset2bag ? indices.numel() : 0}},
          {indices.dtype, {bags}},
          {indices.dtype, max_indices}};
}

// Bag b holds indices [offsets[b], offsets[b + 1]); the last bag runs to the
// end of indices. With include_last_offset the offset after it must say so,
// as PyTorch documents (CSR format): ATen's kernels disagree on other values.
template <typename Index>
struct Bags {
  const Index* indices;
  const Index* offsets;
  int64_t count, size;  // bags, indices

  int64_t begin(int64_t b) const { return offsets[b]; }
  int64_t end(int64_t b) const { return b + 1 < count ? offsets[b + 1] : size; }
};

// Checks the offsets and indices, and fills the outputs other than `output`
// and max's max_indices.
template <typename Index>
void bag_bookkeeping(const Bags<Index>& bags, int64_t num_weights, const BagAttrs& attrs,
                     std::span<const Tensor> outputs) {
  const int64_t padding_idx = attrs.padding_idx;
  const BagMode mode = attrs.mode;
  if (attrs.include_last_offset) {
    OPGRAPH_CHECK(bags.offsets[bags.count] == bags.size,
                  "offsets: with include_last_offset, expected the last offset "
                  "to be ",
                  bags.size, " (the number of indices), got ", int64_t{bags.offsets[bags.count]});
  }
  for (int64_t b = 0; b < bags.count; ++b) {
    OPGRAPH_CHECK((b > 0 || bags.begin(b) == 0) && bags.begin(b) <= bags.end(b) && bags.end(b) <= bags.size,
                  "offsets: expected non-decreasing offsets from 0 to at most ", bags.size, ", got ", bags.begin(b),
                  " for bag ", b, " ending at ", bags.end(b));
  }
  for (int64_t i = 0; i < bags.size; ++i) position(bags.indices, i, num_weights);
  Index* offset2bag = outputs[1].data_ptr<Index>();
  std::fill_n(offset2bag, outputs[1].numel(), Index{0});  // with no bags, no index has one
  Index* bag_size = outputs[2].data_ptr<Index>();
  for (int64_t b = 0; b < bags.count; ++b) {
    int64_t size = 0;
    for (int64_t i = bags.begin(b); i < bags.end(b); ++i) {
      if (outputs[1].numel() > 0) offset2bag[i] = static_cast<Index>(b);
      size += bags.indices[i] != padding_idx;
    }
    bag_size[b] = static_cast<Index>(mode == BagMode::kSum ? 0 : size);
  }
  if (mode != BagMode::kMax) {
    Index* max_indices = outputs[3].data_ptr<Index>();
    for (int64_t b = 0; b < bags.count; ++b) max_indices[b] = mode == BagMode::kMean ? bag_size[b] : Index{0};
  }
}

// Bags split over threads; each bag's rows added (or compared) whole, in
// order. The reference accumulates each element of each bag in double.
template <bool kReference>
void embedding_bag_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const BagAttrs& attrs) {
  const Tensor &weight = inputs[0], &indices = inputs[1], &per_sample_weights = inputs[3];
  const int64_t num_weights = weight.size(0), dim = weight.size(1), padding_idx = attrs.padding_idx;
  const BagMode mode = attrs.mode;
  dispatch_floating(weight.dtype(), "weight", [&](auto zero) {
    using T = decltype(zero);
    const T* w = weight.data_ptr<const T>();
    const T* scales = per_sample_weights.defined() ? per_sample_weights.data_ptr<const T>() : nullptr;
    T* y = outputs[0].data_ptr<T>();
    dispatch_index(indices.dtype(), [&](auto index_zero) {
      using Index = decltype(index_zero);
      const Bags<Index> bags{indices.data_ptr<const Index>(), inputs[2].data_ptr<const Index>(), outputs[0].size(0),
                             indices.numel()};
      bag_bookkeeping(bags, num_weights, attrs, outputs);
      const Index* bag_size = outputs[2].data_ptr<const Index>();
      Index* argmax = mode == BagMode::kMax ? outputs[3].data_ptr<Index>() : nullptr;
      const auto bag = [&](int64_t b) {
        T* row = y + b * dim;
        if constexpr (kReference) {
          for (int64_t c = 0; c < dim; ++c) {
            double acc = 0;
            int64_t best = -1;
            for (int64_t i = bags.begin(b); i < bags.end(b); ++i) {
              const int64_t k = bags.indices[i];
              if (k == padding_idx) continue;
              const double v = w[k * dim + c];
              if (mode != BagMode::kMax) acc += v * (scales ? scales[i] : 1.0);
              if (mode == BagMode::kMax && (best < 0 || v > acc)) acc = v, best = k;
            }
            if (mode == BagMode::kMean && bag_size[b] > 0) acc /= static_cast<double>(bag_size[b]);
            row[c] = static_cast<T>(acc);
            if (argmax) argmax[b * dim + c] = static_cast<Index>(std::max<int64_t>(best, 0));
          }
        } else {
          std::fill_n(row, dim, T{});
          if (argmax) std::fill_n(argmax + b * dim, dim, Index{0});
          bool first = true;
          for (int64_t i = bags.begin(b); i < bags.end(b); ++i) {
            const int64_t k = bags.indices[i];
            if (k == padding_idx) continue;
            const T* from = w + k * dim;
            if (mode == BagMode::kMax) {
              for (int64_t c = 0; c < dim; ++c) {
                if (first || from[c] > row[c]) row[c] = from[c], argmax[b * dim + c] = static_cast<Index>(k);
              }
            } else {
              const T scale = scales ? scales[i] : T{1};
              for (int64_t c = 0; c < dim; ++c) row[c] += scale * from[c];
            }
            first = false;
          }
          if (mode == BagMode::kMean && bag_size[b] > 0) {
            const T count = static_cast<T>(bag_size[b]);
            for (int64_t c = 0; c < dim; ++c) row[c] /= count;
          }
        }
      };
      if constexpr (kReference) {
        for (int64_t b = 0; b < bags.count; ++b) bag(b);
      } else {
        const int64_t per_bag = bags.count > 0 ? std::max<int64_t>(bags.size / bags.count, 1) * dim : dim;
        parallel_items(context, bags.count, per_bag, [&](int64_t begin, int64_t end) {
          for (int64_t b = begin; b < end; ++b) bag(b);
        });
      }
    });
  });
}

void define_embedding_bag(BuiltinOps& builtins, const char* schema,
                          std::source_location where = std::source_location::current()) {
  using Kernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>, const BagAttrs&);
  const BagPositions at(Schema::parse(schema));
  auto kernel = [at](Kernel fn) -> KernelFn {
    return [fn, at](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) { fn(context, inputs, outputs, BagAttrs(at, attrs)); };
  };
  define(builtins,
         {.schema = schema,
          .shape = [at](std::span<const TensorMeta* const> inputs,
                        const Attrs& attrs) { return embedding_bag_shape(inputs, BagAttrs(at, attrs)); },
          .cpu = kernel(embedding_bag_kernel<false>),
          .reference = kernel(embedding_bag_kernel<true>)},
         where);
}

}  // namespace

void register_scatter_ops(BuiltinOps& builtins) {
  define_scatter<kScatterSrc>(builtins, "aten::scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  define_scatter<kScatterValue>(builtins,
                                "aten::scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor");
  define_scatter<kScatterAdd>(builtins, "aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor");
  define_scatter<kScatterReduce>(builtins,
                                 "aten::scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, "
                                 "*, bool include_self=True) -> Tensor");
  define(builtins,
         {.schema = "aten::index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
          .shape = index_put_shape,
          OPGRAPH_CPU_AND_REFERENCE(index_put_kernel),
          .in_place_input = 0});
  // torch.export keeps the in-place form of x[mask] = v; with outputs
  // allocated by the caller it runs as the functional form, self unchanged.
  define(builtins,
         {.schema = "aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) "
                    "-> Tensor(a!)",
          .shape = index_put_shape,
          OPGRAPH_CPU_AND_REFERENCE(index_put_kernel),
          .in_place_input = 0});
  define_view_scatter<select_layout>(builtins,
                                     "aten::select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor");
  define_view_scatter<slice_layout>(builtins,
                                    "aten::slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
                                    "SymInt? end=None, SymInt step=1) -> Tensor");
  define(builtins, {.schema = "aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
                    .shape = masked_scatter_shape,
                    OPGRAPH_CPU_AND_REFERENCE(masked_scatter_kernel)});
  define(builtins, {.schema = "aten::embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
                              "SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
                    .shape = embedding_backward_shape,
                    OPGRAPH_CPU_AND_REFERENCE(embedding_backward_kernel)});
  define_embedding_bag(builtins,
                       "aten::_embedding_bag(Tensor weight, Tensor indices, Tensor offsets, "
                       "bool scale_grad_by_freq=False, int mode=0, bool sparse=False, Tensor? per_sample_weights=None, "
                       "bool include_last_offset=False, int padding_idx=-1) -> (Tensor, Tensor, Tensor, Tensor)");
  // torch.export keeps nn.EmbeddingBag as these unless the graph is decomposed.
  define_embedding_bag(builtins,
                       "aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, "
                       "bool scale_grad_by_freq, int mode, bool sparse, Tensor? per_sample_weights, "
                       "bool include_last_offset, int? padding_idx) -> (Tensor, Tensor, Tensor, Tensor)");
  define_embedding_bag(builtins,
                       "aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, "
                       "bool scale_grad_by_freq=False, int mode=0, bool sparse=False, "
                       "Tensor? per_sample_weights=None, bool include_last_offset=False) "
                       "-> (Tensor, Tensor, Tensor, Tensor)");
}

}  // namespace opgraph::kernels
