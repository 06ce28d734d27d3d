// Ops that make a tensor from attributes: arange, full, zeros, ones, empty,
// empty_strided, scalar_tensor, and the *_like, new_* and fill variants that
// take the shape or dtype from a tensor.
//
// The dtype follows PyTorch: the `dtype` attribute if given; else, for the
// *_like and new_* ops, the tensor's; else from the value (a whole number
// gives int64, a float float32). empty fills with zeros so that a graph
// reading it stays deterministic. empty_strided's result is contiguous, as
// every result is, and its `stride` is not read: every element is zero, so no
// layout of them could show another value, and the ops that read the result
// see only its shape.
#include <cmath>

#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/factory_attrs.h"

namespace opgraph::kernels {
namespace {

// The dtype a Scalar attribute infers when none is asked for.
DType scalar_dtype(const AttrValue& value) {
  return std::holds_alternative<int64_t>(value) ? DType::Int64 : DType::Float32;
}

// A Scalar attribute as T, keeping int64 values exact.
template <typename T>
T scalar_as(const AttrValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<T>(*integer);
  return static_cast<T>(std::get<double>(value));
}

// ---- Filled tensors ------------------------------------------------------------

// Where each op takes its parts from.
struct Fill {
  enum Source { kAttribute, kSelf, kScalar } shape, dtype;  // kScalar: 0-d
  const char* value;                                        // the Scalar attribute to fill with, or null for `constant`
  int constant;                                             // 0 or 1, when `value` is null
};

// One fill kernel serves the fourteen fill schemas, which differ in which of
// size, the value to fill with, dtype and the placement attributes they have,
// so the fills keep the raw kernel form: where each sits in a schema's Attrs
// is found when the op is defined (FillPositions), and a call reads it there.
struct FillPositions {
  std::optional<size_t> size, value, dtype;
  PlacementPositions placement;
  FillPositions(const Schema& schema, const Fill& fill)
      : size(attribute_index(schema, "size")),
        value(fill.value ? attribute_index(schema, fill.value) : std::nullopt),
        dtype(attribute_index(schema, "dtype")),
        placement(schema) {}
};

template <const Fill& kFill>
std::vector<TensorMeta> fill_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs,
                                   const FillPositions& at) {
  at.placement.check(attrs);
  const Shape shape = kFill.shape == Fill::kSelf ? inputs[0]->shape
                      : kFill.shape == Fill::kScalar
                          ? Shape{}
                          : checked_size(std::get<std::vector<int64_t>>(attrs[*at.size]), "size");
  DType dtype = DType::Float32;
  if constexpr (kFill.dtype == Fill::kSelf) {
    dtype = inputs[0]->dtype;
  } else if constexpr (kFill.value != nullptr) {
    dtype = scalar_dtype(attrs[*at.value]);
  }
  if (at.dtype) {
    if (const auto* requested = std::get_if<DType>(&attrs[*at.dtype])) dtype = *requested;
  }
  dispatch_elementwise(dtype, "dtype", [](auto) {});
  return {{dtype, shape}};
}

// One loop serves as fast kernel and reference: a fill is already plain.
template <const Fill& kFill>
void fill_kernel(std::span<const Tensor> outputs, const Attrs& attrs, const FillPositions& at) {
  dispatch_elementwise(outputs[0].dtype(), "dtype", [&](auto zero) {
    using T = decltype(zero);
    T value = static_cast<T>(kFill.constant);
    if constexpr (kFill.value != nullptr) value = scalar_as<T>(attrs[*at.value]);
    std::fill_n(outputs[0].data_ptr<T>(), outputs[0].numel(), value);
  });
}

template <const Fill& kFill>
void define_fill(BuiltinOps& builtins, const char* schema,
                 std::source_location where = std::source_location::current()) {
  const FillPositions at(Schema::parse(schema), kFill);
  const KernelFn kernel = [at](const KernelContext&, std::span<const Tensor>, std::span<const Tensor> outputs,
                               const Attrs& attrs) { fill_kernel<kFill>(outputs, attrs, at); };
  define(builtins,
         {.schema = schema,
          .shape = [at](std::span<const TensorMeta* const> inputs,
                        const Attrs& attrs) { return fill_shape<kFill>(inputs, attrs, at); },
          .cpu = kernel,
          .reference = kernel},
         where);
}

constexpr Fill kFull{Fill::kAttribute, Fill::kAttribute, "fill_value", 0};
constexpr Fill kZeros{Fill::kAttribute, Fill::kAttribute, nullptr, 0};
constexpr Fill kOnes{Fill::kAttribute, Fill::kAttribute, nullptr, 1};
constexpr Fill kScalarTensor{Fill::kScalar, Fill::kAttribute, "s", 0};
constexpr Fill kFullLike{Fill::kSelf, Fill::kSelf, "fill_value", 0};
constexpr Fill kZerosLike{Fill::kSelf, Fill::kSelf, nullptr, 0};
constexpr Fill kOnesLike{Fill::kSelf, Fill::kSelf, nullptr, 1};
constexpr Fill kNewFull{Fill::kAttribute, Fill::kSelf, "fill_value", 0};
constexpr Fill kNewZeros{Fill::kAttribute, Fill::kSelf, nullptr, 0};
constexpr Fill kNewOnes{Fill::kAttribute, Fill::kSelf, nullptr, 1};
constexpr Fill kFillScalar{Fill::kSelf, Fill::kSelf, "value", 0};

// ---- arange ----------------------------------------------------------------------

struct Range {
  double start, step;
  int64_t length;
};

// The three arange schemas share these functions and differ in which of
// start and step they have, so they keep the raw kernel form, reading their
// attributes at the indexes found when each op is defined.
struct RangePositions {
  std::optional<size_t> start, end, step, dtype;
  PlacementPositions placement;
  explicit RangePositions(const Schema& schema)
      : start(attribute_index(schema, "start")),
        end(attribute_index(schema, "end")),
        step(attribute_index(schema, "step")),
        dtype(attribute_index(schema, "dtype")),
        placement(schema) {}
};

double scalar_or(const Attrs& attrs, std::optional<size_t> at, double fallback) {
  return at ? scalar_as<double>(attrs[*at]) : fallback;
}

Range range_of(const Attrs& attrs, const RangePositions& at) {
  const double start = scalar_or(attrs, at.start, 0.0), end = scalar_or(attrs, at.end, 0.0);
  const double step = scalar_or(attrs, at.step, 1.0);
  OPGRAPH_CHECK(std::isfinite(start) && std::isfinite(end), "start and end: expected finite values, got ", start,
                " and ", end);
  OPGRAPH_CHECK(step != 0, "step: expected a non-zero step, got 0");
  OPGRAPH_CHECK(step > 0 ? end >= start : end <= start, "step: ", step, " does not lead from start ", start, " to end ",
                end);
  return {start, step, static_cast<int64_t>(std::ceil((end - start) / step))};
}

std::vector<TensorMeta> arange_shape(const Attrs& attrs, const RangePositions& at) {
  at.placement.check(attrs);
  const Range range = range_of(attrs, at);
  DType dtype = DType::Int64;  // unless a bound or the step is a float
  for (std::optional<size_t> bound : {at.start, at.end, at.step}) {
    if (bound && std::holds_alternative<double>(attrs[*bound])) dtype = DType::Float32;
  }
  if (const auto* requested = std::get_if<DType>(&attrs[*at.dtype])) dtype = *requested;
  OPGRAPH_CHECK(dtype != DType::Bool, "dtype: expected a numeric dtype, got bool");
  dispatch_elementwise(dtype, "dtype", [](auto) {});
  return {{dtype, {range.length}}};
}

// start + i * step, computed in double as PyTorch does before rounding.
void arange_kernel(std::span<const Tensor> outputs, const Attrs& attrs, const RangePositions& at) {
  const Range range = range_of(attrs, at);
  dispatch_elementwise(outputs[0].dtype(), "dtype", [&](auto zero) {
    using T = decltype(zero);
    T* out = outputs[0].data_ptr<T>();
    for (int64_t i = 0; i < range.length; ++i)
      out[i] = static_cast<T>(range.start + static_cast<double>(i) * range.step);
  });
}

void define_arange(BuiltinOps& builtins, const std::string& schema,
                   std::source_location where = std::source_location::current()) {
  const RangePositions at(Schema::parse(schema));
  const KernelFn kernel = [at](const KernelContext&, std::span<const Tensor>, std::span<const Tensor> outputs,
                               const Attrs& attrs) { arange_kernel(outputs, attrs, at); };
  define(builtins,
         {.schema = schema.c_str(),
          .shape = [at](std::span<const TensorMeta* const>, const Attrs& attrs) { return arange_shape(attrs, at); },
          .cpu = kernel,
          .reference = kernel},
         where);
}

}  // namespace

void register_factory_ops(BuiltinOps& builtins) {
  const auto schema = [](const char* head, const char* tail = "") {
    return detail::concat("aten::", head, kFactoryOptions, tail, ") -> Tensor");
  };
  const std::string like_tail = ", MemoryFormat? memory_format=None";
  define_arange(builtins, schema("arange(Scalar end, *, "));
  define_arange(builtins, schema("arange.start(Scalar start, Scalar end, *, "));
  define_arange(builtins, schema("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "));
  define_fill<kFull>(builtins, schema("full(SymInt[] size, Scalar fill_value, *, ").c_str());
  define_fill<kZeros>(builtins, schema("zeros(SymInt[] size, *, ").c_str());
  define_fill<kOnes>(builtins, schema("ones(SymInt[] size, *, ").c_str());
  define_fill<kZeros>(builtins, schema("empty.memory_format(SymInt[] size, *, ", like_tail.c_str()).c_str());
  define_fill<kZeros>(builtins, schema("empty_strided(SymInt[] size, SymInt[] stride, *, ").c_str());
  define_fill<kScalarTensor>(builtins, schema("scalar_tensor(Scalar s, *, ").c_str());
  define_fill<kFullLike>(builtins, schema("full_like(Tensor self, Scalar fill_value, *, ", like_tail.c_str()).c_str());
  define_fill<kZerosLike>(builtins, schema("zeros_like(Tensor self, *, ", like_tail.c_str()).c_str());
  define_fill<kOnesLike>(builtins, schema("ones_like(Tensor self, *, ", like_tail.c_str()).c_str());
  define_fill<kZerosLike>(builtins, schema("empty_like(Tensor self, *, ", like_tail.c_str()).c_str());
  define_fill<kNewFull>(builtins, schema("new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ").c_str());
  define_fill<kNewZeros>(builtins, schema("new_zeros(Tensor self, SymInt[] size, *, ").c_str());
  define_fill<kNewOnes>(builtins, schema("new_ones(Tensor self, SymInt[] size, *, ").c_str());
  define_fill<kNewZeros>(builtins, schema("new_empty(Tensor self, SymInt[] size, *, ").c_str());
  define_fill<kFillScalar>(builtins, "aten::fill.Scalar(Tensor self, Scalar value) -> Tensor");
}

}  // namespace opgraph::kernels
