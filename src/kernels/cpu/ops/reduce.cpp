// Reductions over a list of dims: sum, mean, prod, var, amax and amin, any,
// argmax and argmin, and max and min with their indices.
//
// Every op sees its input as rows: the reduced dims are moved last (a scratch
// copy unless they already are), so each output reduces one contiguous row.
// sum and mean also read the columns of adjacent reduced dims in place. The
// references gather each output's elements by index arithmetic and reduce
// them in plain loops.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <type_traits>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"

namespace opgraph::kernels {
namespace {

// ---- Which dims, and the result's shape --------------------------------------

// The reductions share their kernels over schemas that differ in which of
// these attributes they have (sum has a dtype, sum.dim_IntList a dim list,
// argmax an optional int dim, var.dim unbiased and var.correction correction),
// so they keep the raw kernel form: where each attribute sits in a schema's
// Attrs is found once, when the op is defined, and a call reads it there.
struct ReductionPositions {
  std::optional<size_t> dim, keepdim, dtype, unbiased, correction;
  explicit ReductionPositions(const Schema& schema)
      : dim(attribute_index(schema, "dim")),
        keepdim(attribute_index(schema, "keepdim")),
        dtype(attribute_index(schema, "dtype")),
        unbiased(attribute_index(schema, "unbiased")),
        correction(attribute_index(schema, "correction")) {}
};

// One call's attributes, as a reduction reads them.
struct ReductionAttrs {
  const AttrValue* dim = nullptr;  // null where the schema has none: every dim
  bool keepdim = false;
  std::optional<DType> dtype;
  std::optional<bool> unbiased;
  const AttrValue* correction = nullptr;  // null, None, an int or a float

  ReductionAttrs(const ReductionPositions& at, const Attrs& attrs) {
    if (at.dim) dim = &attrs[*at.dim];
    if (at.keepdim) keepdim = std::get<bool>(attrs[*at.keepdim]);
    if (at.dtype && !std::holds_alternative<std::monostate>(attrs[*at.dtype])) {
      dtype = std::get<DType>(attrs[*at.dtype]);
    }
    if (at.unbiased) unbiased = std::get<bool>(attrs[*at.unbiased]);
    if (at.correction) correction = &attrs[*at.correction];
  }
};

// The dims to reduce, wrapped and sorted. `dim` is a list, one int, None or
// absent (a full reduction); None, absent or [] mean all dims, as in ATen,
// except that [] reduces none for ops that say so (any.dims). A scalar has
// nothing to reduce, though it accepts dim 0 and -1.
std::vector<int64_t> reduced_dims(const ReductionAttrs& attrs, int64_t rank, bool empty_is_all) {
  const AttrValue* value = attrs.dim;
  std::vector<int64_t> given;
  if (value != nullptr) {
    if (const auto* list = std::get_if<std::vector<int64_t>>(value)) given = *list;
    if (const auto* one = std::get_if<int64_t>(value)) given = {*one};
  }
  std::vector<int64_t> dims;
  if (value == nullptr || std::holds_alternative<std::monostate>(*value) || (given.empty() && empty_is_all)) {
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
    return dims;
  }
  for (int64_t d : given) {
    const int64_t wrapped = wrap_dim(d, rank, "dim");
    OPGRAPH_CHECK(std::find(dims.begin(), dims.end(), wrapped) == dims.end(), "dim: expected distinct dims, dim ",
                  wrapped, " appears more than once in ", attr_str(*value));
    dims.push_back(wrapped);
  }
  if (rank == 0) dims.clear();
  std::sort(dims.begin(), dims.end());
  return dims;
}

// The number of elements each output is reduced from.
int64_t reduced_count(std::span<const int64_t> shape, std::span<const int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= shape[d];
  return count;
}

// The dtypes an op takes.
enum class Inputs { Floating, Numeric, All };

void check_input(Inputs accepted, const TensorMeta& self) {
  if (accepted == Inputs::Floating) return check_floating(self, "self");
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  OPGRAPH_CHECK(accepted == Inputs::All || self.dtype != DType::Bool, "self: expected a numeric dtype, got ",
                self.str());
}

template <Inputs kInputs, typename Fn>
void dispatch_input(DType dtype, Fn&& fn) {
  if constexpr (kInputs == Inputs::Floating) {
    dispatch_floating(dtype, "self", fn);
  } else {
    dispatch_elementwise(dtype, "self", fn);
  }
}

// An op is a type with
//   kInputs, kEmptyIsAll (what dim=[] means) and kNeedsElements (no identity:
//     reducing no elements is an error);
//   outputs(input dtype, attrs): the result dtypes, checking a dtype argument;
//   a constructor from the attributes;
//   fast(x, n) and plain(row): the result for the n elements of a row, as the
//     C++ type of the output, or an Extreme for values and indices.
template <typename Op>
std::vector<TensorMeta> reduction_shape(std::span<const TensorMeta* const> inputs, const ReductionAttrs& attrs) {
  const TensorMeta& self = *inputs[0];
  check_input(Op::kInputs, self);
  const std::vector<int64_t> dims = reduced_dims(attrs, self.dim(), Op::kEmptyIsAll);
  if constexpr (Op::kNeedsElements) {
    for (int64_t d : dims) {
      OPGRAPH_CHECK(self.shape[d] > 0, "self: expected a non-zero size along reduced dim ", d,
                    " (this reduction has no identity), got ", self.str());
    }
  }
  Shape shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    const bool reduced = std::binary_search(dims.begin(), dims.end(), d);
    if (!reduced) shape.push_back(self.shape[d]);
    if (reduced && attrs.keepdim) shape.push_back(1);
  }
  std::vector<TensorMeta> outputs;
  for (DType dtype : Op::outputs(self.dtype, attrs)) outputs.push_back({dtype, shape});
  return outputs;
}

// ---- Writing a row's result ------------------------------------------------------

template <typename T>
struct Extreme {
  T value;
  int64_t index;
};

template <typename R>
void store(std::span<const Tensor> outputs, int64_t r, R result) {
  outputs[0].data_ptr<R>()[r] = result;
}

template <typename T>
void store(std::span<const Tensor> outputs, int64_t r, Extreme<T> result) {
  outputs[0].data_ptr<T>()[r] = result.value;
  outputs[1].data_ptr<int64_t>()[r] = result.index;
}

// ---- Kernels -----------------------------------------------------------------------

template <typename Op>
void reduction_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   const ReductionAttrs& attrs) {
  const Op op(attrs);
  const std::vector<int64_t> dims = reduced_dims(attrs, inputs[0].dim(), Op::kEmptyIsAll);
  const Tensor self = permuted_contiguous(inputs[0], dims_last_order(inputs[0].dim(), dims));
  const int64_t count = reduced_count(inputs[0].shape(), dims);
  dispatch_input<Op::kInputs>(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    parallel_rows(context, outputs[0].numel(), count, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) store(outputs, r, op.template fast<T>(x + r * count, count));
    });
  });
}

// Walks the input in order, copying each element to the next place in the row
// of the output its kept indices name; then reduces each row.
template <typename Op>
void reduction_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const ReductionAttrs& attrs) {
  const Op op(attrs);
  const Tensor& self = inputs[0];
  const std::vector<int64_t> dims = reduced_dims(attrs, self.dim(), Op::kEmptyIsAll);
  const int64_t count = reduced_count(self.shape(), dims);
  dispatch_input<Op::kInputs>(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    const auto rows = std::make_unique<T[]>(static_cast<size_t>(self.numel()));
    std::vector<int64_t> filled(static_cast<size_t>(outputs[0].numel()), 0);
    std::vector<int64_t> index(static_cast<size_t>(self.dim()), 0);
    for (int64_t flat = 0; flat < self.numel(); ++flat) {
      int64_t out_flat = 0;
      for (int64_t d = 0; d < self.dim(); ++d) {
        if (!std::binary_search(dims.begin(), dims.end(), d)) out_flat = out_flat * self.size(d) + index[d];
      }
      rows[out_flat * count + filled[out_flat]++] = x[flat];
      for (int64_t d = self.dim() - 1; d >= 0 && ++index[d] == self.size(d); --d) index[d] = 0;
    }
    for (int64_t r = 0; r < outputs[0].numel(); ++r) {
      store(outputs, r, op.template plain<T>(std::span<const T>(rows.get() + r * count, count)));
    }
  });
}

using ReductionKernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>,
                                 const ReductionAttrs&);

// `kernel` as the raw form takes it, reading the attributes where `schema` has them.
KernelFn at_positions(ReductionKernel kernel, const ReductionPositions& positions) {
  return
      [kernel, positions](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const Attrs& attrs) { kernel(context, inputs, outputs, ReductionAttrs(positions, attrs)); };
}

template <typename Op>
void define_reduction(BuiltinOps& builtins, const char* schema, ReductionKernel cpu = reduction_cpu<Op>,
                      std::source_location where = std::source_location::current()) {
  const ReductionPositions positions(Schema::parse(schema));
  define(builtins,
         {.schema = schema,
          .shape = [positions](
                       std::span<const TensorMeta* const> inputs,
                       const Attrs& attrs) { return reduction_shape<Op>(inputs, ReductionAttrs(positions, attrs)); },
          .cpu = at_positions(cpu, positions),
          .reference = at_positions(reduction_reference<Op>, positions)},
         where);
}

// ---- sum and mean ------------------------------------------------------------------

enum class Kind { Sum, Mean };

template <Kind kKind>
struct SumOp {
  static constexpr Inputs kInputs = Inputs::Floating;
  static constexpr bool kEmptyIsAll = true, kNeedsElements = false;
  static std::vector<DType> outputs(DType input, const ReductionAttrs& attrs) {
    check_dtype_argument(attrs.dtype, "dtype", input);
    return {input};
  }
  explicit SumOp(const ReductionAttrs&) {}
  template <typename T>
  T plain(std::span<const T> row) const {
    double sum = 0;
    for (T v : row) sum += v;
    return static_cast<T>(kKind == Kind::Mean ? sum / static_cast<double>(row.size()) : sum);
  }
};

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
template <Kind kind>
void sum_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
             const ReductionAttrs& attrs) {
  const std::vector<int64_t> dims = reduced_dims(attrs, inputs[0].dim(), true);
  const std::optional<DimLayout> adjacent = adjacent_layout(inputs[0].shape(), dims);
  const bool columns = adjacent && adjacent->inner > 1;
  const Tensor self = columns ? inputs[0] : permuted_contiguous(inputs[0], dims_last_order(inputs[0].dim(), dims));
  const int64_t count = reduced_count(inputs[0].shape(), dims);
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
}

// ---- prod --------------------------------------------------------------------------

// Floats multiply in double; integers and bools in int64, wrapping on
// overflow as ATen's do (through uint64, where int64 overflow is undefined).
template <typename T>
using ProdOf = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;
template <typename T>
using ProdAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

struct ProdOp {
  static constexpr Inputs kInputs = Inputs::All;
  static constexpr bool kEmptyIsAll = true, kNeedsElements = false;
  static std::vector<DType> outputs(DType input, const ReductionAttrs& attrs) {
    const bool floating = input == DType::Float32 || input == DType::Float64;
    const DType result = floating ? input : DType::Int64;
    OPGRAPH_CHECK(!attrs.dtype || *attrs.dtype == result, "dtype: expected None or ", dtype_name(result),
                  " (the product's dtype for ", dtype_name(input), " input; conversion is not supported), got ",
                  attrs.dtype ? dtype_name(*attrs.dtype) : "None");
    return {result};
  }
  explicit ProdOp(const ReductionAttrs&) {}
  template <typename T>
  ProdOf<T> fast(const T* x, int64_t n) const {
    using Acc = ProdAcc<T>;
    return static_cast<ProdOf<T>>(
        reduce_lanes(n, Acc{1}, [x](int64_t i) { return static_cast<Acc>(x[i]); }, [](Acc a, Acc b) { return a * b; }));
  }
  template <typename T>
  ProdOf<T> plain(std::span<const T> row) const {
    ProdAcc<T> product = 1;
    for (T v : row) product *= static_cast<ProdAcc<T>>(v);
    return static_cast<ProdOf<T>>(product);
  }
};

// ---- var -----------------------------------------------------------------------------

// Two passes in double: the mean, then the squared deviations from it, over
// max(0, n - correction) as ATen divides (NaN or inf when that is 0).
struct VarOp {
  static constexpr Inputs kInputs = Inputs::Floating;
  static constexpr bool kEmptyIsAll = true, kNeedsElements = false;
  static std::vector<DType> outputs(DType input, const ReductionAttrs&) { return {input}; }

  double correction = 1;  // var.correction's None, var.dim's unbiased=True
  explicit VarOp(const ReductionAttrs& attrs) {
    if (attrs.unbiased) correction = *attrs.unbiased ? 1 : 0;
    const AttrValue* given = attrs.correction;
    if (given != nullptr && !std::holds_alternative<std::monostate>(*given)) {
      const auto* integer = std::get_if<int64_t>(given);
      correction = integer ? static_cast<double>(*integer) : std::get<double>(*given);
    }
  }
  double divisor(int64_t n) const { return std::max(0.0, static_cast<double>(n) - correction); }

  template <typename T>
  T fast(const T* x, int64_t n) const {
    const double mean = row_sum(x, n) / static_cast<double>(n);
    const double squares = reduce_lanes(
        n, 0.0,
        [x, mean](int64_t i) {
          const double d = x[i] - mean;
          return d * d;
        },
        [](double a, double b) { return a + b; });
    return static_cast<T>(squares / divisor(n));
  }
  template <typename T>
  T plain(std::span<const T> row) const {
    double sum = 0, squares = 0;
    for (T v : row) sum += v;
    const double mean = sum / static_cast<double>(row.size());
    for (T v : row) squares += (v - mean) * (v - mean);
    return static_cast<T>(squares / divisor(static_cast<int64_t>(row.size())));
  }
};

// ---- any -------------------------------------------------------------------------------

// any.dims reduces nothing for dim=[], where any(self) and dim=None reduce all.
struct AnyOp {
  static constexpr Inputs kInputs = Inputs::All;
  static constexpr bool kEmptyIsAll = false, kNeedsElements = false;
  static std::vector<DType> outputs(DType, const ReductionAttrs&) { return {DType::Bool}; }
  explicit AnyOp(const ReductionAttrs&) {}
  template <typename T>
  bool fast(const T* x, int64_t n) const {
    return reduce_lanes(n, false, [x](int64_t i) { return x[i] != T{}; }, [](bool a, bool b) { return a || b; });
  }
  template <typename T>
  bool plain(std::span<const T> row) const {
    for (T v : row) {
      if (v != T{}) return true;
    }
    return false;
  }
};

// ---- Extremes: amax, amin, argmax, argmin, max.dim, min.dim ---------------------------

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Whether a max (kMax) or min prefers `a` to `b`: NaN wins, as in ATen.
template <bool kMax, typename T>
bool prefers(T a, T b) {
  return is_nan(a) || (kMax ? a > b : a < b);
}

// The extreme of a nonempty row and the first index holding it: the fast
// kernel finds the value with independent lanes, then its first place.
template <bool kMax, typename T>
Extreme<T> fast_extreme(const T* x, int64_t n) {
  const T best =
      reduce_lanes(n, x[0], [x](int64_t i) { return x[i]; }, [](T a, T b) { return prefers<kMax>(b, a) ? b : a; });
  int64_t i = 0;
  while (!(x[i] == best || (is_nan(best) && is_nan(x[i])))) ++i;
  return {x[i], i};  // -0.0 where that came first, though the lanes may have kept 0.0
}

template <bool kMax, typename T>
Extreme<T> plain_extreme(std::span<const T> row) {
  Extreme<T> best{row[0], 0};
  for (size_t i = 1; i < row.size() && !is_nan(best.value); ++i) {
    if (prefers<kMax>(row[i], best.value)) best = {row[i], static_cast<int64_t>(i)};
  }
  return best;
}

// What an extreme reduction returns: the value, the index, or both.
enum class Returns { Value, Index, Both };

template <bool kMax, Returns kReturns>
struct ExtremeOp {
  static constexpr Inputs kInputs = kReturns == Returns::Index ? Inputs::Numeric : Inputs::All;
  static constexpr bool kEmptyIsAll = true, kNeedsElements = true;
  static std::vector<DType> outputs(DType input, const ReductionAttrs&) {
    if (kReturns == Returns::Value) return {input};
    if (kReturns == Returns::Index) return {DType::Int64};
    return {input, DType::Int64};
  }
  explicit ExtremeOp(const ReductionAttrs&) {}
  template <typename T>
  static auto result(Extreme<T> e) {
    if constexpr (kReturns == Returns::Value) {
      return e.value;
    } else if constexpr (kReturns == Returns::Index) {
      return e.index;
    } else {
      return e;
    }
  }
  template <typename T>
  auto fast(const T* x, int64_t n) const {
    if constexpr (kReturns == Returns::Value) {  // no index to find
      return reduce_lanes(
          n, x[0], [x](int64_t i) { return x[i]; }, [](T a, T b) { return prefers<kMax>(b, a) ? b : a; });
    } else {
      return result(fast_extreme<kMax>(x, n));
    }
  }
  template <typename T>
  auto plain(std::span<const T> row) const {
    return result(plain_extreme<kMax>(row));
  }
};

}  // namespace

void register_reduce_ops(BuiltinOps& builtins) {
  using Sum = SumOp<Kind::Sum>;
  using Mean = SumOp<Kind::Mean>;
  define_reduction<Sum>(builtins,
                        "aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
                        "ScalarType? dtype=None) -> Tensor",
                        sum_cpu<Kind::Sum>);
  define_reduction<Mean>(builtins,
                         "aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, "
                         "ScalarType? dtype=None) -> Tensor",
                         sum_cpu<Kind::Mean>);
  define_reduction<Mean>(builtins, "aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", sum_cpu<Kind::Mean>);
  define_reduction<ProdOp>(builtins, "aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor");
  define_reduction<ProdOp>(builtins,
                           "aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, "
                           "ScalarType? dtype=None) -> Tensor");
  define_reduction<VarOp>(builtins,
                          "aten::var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
                          "bool keepdim=False) -> Tensor");
  define_reduction<VarOp>(builtins,
                          "aten::var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor");
  define_reduction<AnyOp>(builtins, "aten::any(Tensor self) -> Tensor");
  define_reduction<AnyOp>(builtins, "aten::any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor");
  define_reduction<AnyOp>(builtins, "aten::any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor");
  define_reduction<ExtremeOp<true, Returns::Value>>(
      builtins, "aten::amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  define_reduction<ExtremeOp<false, Returns::Value>>(
      builtins, "aten::amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor");
  define_reduction<ExtremeOp<true, Returns::Index>>(
      builtins, "aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  define_reduction<ExtremeOp<false, Returns::Index>>(
      builtins, "aten::argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor");
  define_reduction<ExtremeOp<true, Returns::Both>>(
      builtins, "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  define_reduction<ExtremeOp<false, Returns::Both>>(
      builtins, "aten::min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
}

}  // namespace opgraph::kernels
