// Comparisons (eq, ne, lt, gt, le, ge) giving bool tensors, logical and
// bitwise ops on bool and integer tensors, and the ops that select with a
// mask: where and masked_fill. All broadcast like PyTorch.
//
// The two compared operands share one dtype, except that a 0-d tensor (how an
// exported graph carries a Python number) takes the other operand's dtype.
#include <functional>

#include "kernels/cpu/util/elementwise.h"

namespace opgraph::kernels {
namespace {

// The dtype `a` and `b` are computed in; a 0-d operand follows the other.
DType common_dtype(const TensorMeta& a, const char* a_name, const TensorMeta& b, const char* b_name) {
  if (a.dtype == b.dtype || b.dim() == 0) return a.dtype;
  if (a.dim() == 0) return b.dtype;
  throw Error(detail::concat(b_name, ": expected ", dtype_name(a.dtype), " like ", a_name,
                             " (no type promotion except from 0-d tensors), got ", b.str()));
}

// `t` read as T: itself, or its one element converted into `storage`.
template <typename T>
Input<T> operand(const Tensor& t, T& storage, const char* argument) {
  if (t.dtype() == dtype_of<T>) return {t.data_ptr<const T>(), t.shape()};
  storage = exact_scalar<T>(element_as<double>(t), argument);
  return {&storage, {}};
}

// A Scalar argument (int or float) as T, which must hold it exactly.
template <typename T>
T scalar_as(const AttrValue& value, const char* name) {
  const auto* integer = std::get_if<int64_t>(&value);
  return exact_scalar<T>(integer ? static_cast<double>(*integer) : std::get<double>(value), name);
}

// These ops share their kernels over a tensor form and a Scalar form (eq.Tensor
// and eq.Scalar, where.self and where.ScalarSelf, ...), so they keep the raw
// kernel form: a Scalar form's one attribute, found in its schema when the op
// is defined, reaches the shared functions as `scalar` (null for the tensor
// form).
using RawShape = std::vector<TensorMeta> (*)(std::span<const TensorMeta* const>, const AttrValue* scalar);
using RawKernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>,
                           const AttrValue* scalar);

void define_with_scalar(BuiltinOps& builtins, const char* schema, const char* scalar, RawShape shape, RawKernel cpu,
                        RawKernel reference, std::source_location where) {
  const std::optional<size_t> at = attribute_index(Schema::parse(schema), scalar);
  auto value = [at](const Attrs& attrs) { return at ? &attrs[*at] : nullptr; };
  auto kernel = [value](RawKernel fn) -> KernelFn {
    return [fn, value](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                       const Attrs& attrs) { fn(context, inputs, outputs, value(attrs)); };
  };
  define(builtins,
         {.schema = schema,
          .shape = [shape, value](std::span<const TensorMeta* const> inputs,
                                  const Attrs& attrs) { return shape(inputs, value(attrs)); },
          .cpu = kernel(cpu),
          .reference = kernel(reference)},
         where);
}

// ---- Comparisons and logical ops: (self, other) -> bool or self's dtype ------

enum class Result { Bool, Same };

struct AnyDType {
  static void check(DType, const char*) {}
};
// Bitwise ops take bool and integers, as in PyTorch.
struct IntegralDType {
  static void check(DType dtype, const char* argument) {
    OPGRAPH_CHECK(!is_floating_point(dtype), argument, ": expected bool or an integer dtype, got ", dtype_name(dtype));
  }
};
struct Eq : AnyDType, std::equal_to<> {};
struct Ne : AnyDType, std::not_equal_to<> {};
struct Lt : AnyDType, std::less<> {};
struct Gt : AnyDType, std::greater<> {};
struct Le : AnyDType, std::less_equal<> {};
struct Ge : AnyDType, std::greater_equal<> {};
struct And : IntegralDType, std::bit_and<> {};
struct Or : IntegralDType, std::bit_or<> {};
struct Xor : IntegralDType, std::bit_xor<> {};

template <typename Op, Result kResult, bool kScalar>
std::vector<TensorMeta> binary_shape(std::span<const TensorMeta* const> inputs, const AttrValue* scalar) {
  const TensorMeta& self = *inputs[0];
  DType dtype = self.dtype;
  Shape shape = self.shape;
  if constexpr (kScalar) {
    Op::check(dtype, "self");
    dispatch_elementwise(dtype, "self", [&](auto zero) { scalar_as<decltype(zero)>(*scalar, "other"); });
  } else {
    dtype = common_dtype(self, "self", *inputs[1], "other");
    Op::check(dtype, "self");
    shape = broadcast_shapes(self.shape, inputs[1]->shape);
  }
  return {{kResult == Result::Bool ? DType::Bool : dtype, std::move(shape)}};
}

template <typename Op, Result kResult, bool kScalar, bool kReference>
void binary_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   const AttrValue* scalar) {
  const DType dtype = kScalar ? inputs[0].dtype() : common_dtype(inputs[0].meta(), "self", inputs[1].meta(), "other");
  dispatch_elementwise(dtype, "self", [&](auto zero) {
    using T = decltype(zero);
    using Out = std::conditional_t<kResult == Result::Bool, bool, T>;
    if constexpr (std::is_base_of_v<IntegralDType, Op> && std::is_floating_point_v<T>) {
      IntegralDType::check(dtype, "self");
    } else {
      T self_storage{}, other_storage{};
      const Input<T> self = operand(inputs[0], self_storage, "self");
      Input<T> other{&other_storage, {}};
      if constexpr (kScalar) {
        other_storage = scalar_as<T>(*scalar, "other");
      } else {
        other = operand(inputs[1], other_storage, "other");
      }
      map_broadcast<Out, kReference>(context, outputs[0], [](T a, T b) -> Out { return Op{}(a, b); }, self, other);
    }
  });
}

template <typename Op, Result kResult, bool kScalar>
void define_binary(BuiltinOps& builtins, const char* schema,
                   std::source_location where = std::source_location::current()) {
  define_with_scalar(builtins, schema, "other", binary_shape<Op, kResult, kScalar>,
                     binary_kernel<Op, kResult, kScalar, false>, binary_kernel<Op, kResult, kScalar, true>, where);
}

// eq.Tensor, eq.Scalar, ... for one comparison.
template <typename Op>
void define_comparison(BuiltinOps& builtins, const char* name,
                       std::source_location where = std::source_location::current()) {
  const std::string tensor = detail::concat("aten::", name, ".Tensor(Tensor self, Tensor other) -> Tensor");
  const std::string scalar = detail::concat("aten::", name, ".Scalar(Tensor self, Scalar other) -> Tensor");
  define_binary<Op, Result::Bool, false>(builtins, tensor.c_str(), where);
  define_binary<Op, Result::Bool, true>(builtins, scalar.c_str(), where);
}

// ---- logical_not and bitwise_not ---------------------------------------------

TensorMeta logical_not_shape(const TensorMeta& self) {
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return {DType::Bool, self.shape};
}

TensorMeta bitwise_not_shape(const TensorMeta& self) {
  IntegralDType::check(self.dtype, "self");
  dispatch_elementwise(self.dtype, "self", [](auto) {});
  return self;
}

template <bool kLogical, bool kReference>
void not_kernel(const KernelContext& context, const Tensor& self_tensor, const Tensor& out) {
  dispatch_elementwise(self_tensor.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const Input<T> self{self_tensor.data_ptr<const T>(), self_tensor.shape()};
    if constexpr (kLogical) {
      map_broadcast<bool, kReference>(context, out, [](T a) { return !a; }, self);
    } else if constexpr (std::is_same_v<T, bool>) {
      map_broadcast<bool, kReference>(context, out, [](bool a) { return !a; }, self);
    } else if constexpr (std::is_integral_v<T>) {
      map_broadcast<T, kReference>(context, out, [](T a) { return static_cast<T>(~a); }, self);
    }
  });
}

// ---- where and masked_fill -------------------------------------------------

void check_condition(const TensorMeta& condition, const char* argument) {
  OPGRAPH_CHECK(condition.dtype == DType::Bool, argument, ": expected a bool tensor, got ", condition.str());
}

// where.self takes both branches as tensors; where.ScalarSelf and
// where.ScalarOther take one of them as a Scalar attribute.
enum class ScalarBranch { None, Self, Other };

template <ScalarBranch kScalar>
std::vector<TensorMeta> where_shape(std::span<const TensorMeta* const> inputs, const AttrValue* scalar) {
  const TensorMeta& condition = *inputs[0];
  check_condition(condition, "condition");
  if constexpr (kScalar == ScalarBranch::None) {
    const TensorMeta &self = *inputs[1], &other = *inputs[2];
    const DType dtype = common_dtype(self, "self", other, "other");
    dispatch_elementwise(dtype, "self", [](auto) {});
    return {{dtype, broadcast_shapes(broadcast_shapes(condition.shape, self.shape), other.shape)}};
  } else {
    const TensorMeta& tensor = *inputs[1];
    const bool self_is_scalar = kScalar == ScalarBranch::Self;
    dispatch_elementwise(tensor.dtype, self_is_scalar ? "other" : "self",
                         [&](auto zero) { scalar_as<decltype(zero)>(*scalar, self_is_scalar ? "self" : "other"); });
    return {{tensor.dtype, broadcast_shapes(condition.shape, tensor.shape)}};
  }
}

template <ScalarBranch kScalar, bool kReference>
void where_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  const AttrValue* scalar) {
  dispatch_elementwise(outputs[0].dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T self_storage{}, other_storage{};
    Input<T> self{&self_storage, {}}, other{&other_storage, {}};
    if constexpr (kScalar == ScalarBranch::Self) {
      self_storage = scalar_as<T>(*scalar, "self");
      other = operand(inputs[1], other_storage, "other");
    } else if constexpr (kScalar == ScalarBranch::Other) {
      self = operand(inputs[1], self_storage, "self");
      other_storage = scalar_as<T>(*scalar, "other");
    } else {
      self = operand(inputs[1], self_storage, "self");
      other = operand(inputs[2], other_storage, "other");
    }
    const Input<bool> condition{inputs[0].data_ptr<const bool>(), inputs[0].shape()};
    map_broadcast<T, kReference>(
        context, outputs[0], [](bool c, T a, T b) { return c ? a : b; }, condition, self, other);
  });
}

template <ScalarBranch kScalar>
void define_where(BuiltinOps& builtins, const char* schema,
                  std::source_location where = std::source_location::current()) {
  define_with_scalar(builtins, schema, kScalar == ScalarBranch::Self ? "self" : "other", where_shape<kScalar>,
                     where_kernel<kScalar, false>, where_kernel<kScalar, true>, where);
}

// masked_fill.Scalar takes `value` as an attribute, masked_fill.Tensor as a 0-d tensor.
template <bool kScalar>
std::vector<TensorMeta> masked_fill_shape(std::span<const TensorMeta* const> inputs, const AttrValue* scalar) {
  const TensorMeta &self = *inputs[0], &mask = *inputs[1];
  check_condition(mask, "mask");
  const Shape shape = broadcast_shapes(self.shape, mask.shape);
  OPGRAPH_CHECK(shape == self.shape, "mask: expected a shape that broadcasts to self's ", shape_str(self.shape),
                ", got ", mask.str());
  dispatch_elementwise(self.dtype, "self", [&](auto zero) {
    if constexpr (kScalar) scalar_as<decltype(zero)>(*scalar, "value");
  });
  if constexpr (!kScalar) {
    OPGRAPH_CHECK(inputs[2]->dim() == 0, "value: expected a 0-d tensor, got ", inputs[2]->str());
  }
  return {self};
}

template <bool kScalar, bool kReference>
void masked_fill_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                        const AttrValue* scalar) {
  dispatch_elementwise(outputs[0].dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T value{};
    if constexpr (kScalar) {
      value = scalar_as<T>(*scalar, "value");
    } else {
      value = exact_scalar<T>(element_as<double>(inputs[2]), "value");
    }
    const Input<T> self{inputs[0].data_ptr<const T>(), inputs[0].shape()};
    const Input<bool> mask{inputs[1].data_ptr<const bool>(), inputs[1].shape()};
    map_broadcast<T, kReference>(context, outputs[0], [value](T a, bool m) { return m ? value : a; }, self, mask);
  });
}

}  // namespace

void register_compare_ops(BuiltinOps& builtins) {
  define_comparison<Eq>(builtins, "eq");
  define_comparison<Ne>(builtins, "ne");
  define_comparison<Lt>(builtins, "lt");
  define_comparison<Gt>(builtins, "gt");
  define_comparison<Le>(builtins, "le");
  define_comparison<Ge>(builtins, "ge");
  define_binary<And, Result::Same, false>(builtins, "aten::__and__.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<And, Result::Same, false>(builtins, "aten::bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Or, Result::Same, false>(builtins, "aten::__or__.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Or, Result::Same, false>(builtins, "aten::bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Xor, Result::Same, false>(builtins, "aten::bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor");
  define(builtins, {.schema = "aten::logical_not(Tensor self) -> Tensor",
                    .shape = logical_not_shape,
                    .cpu = not_kernel<true, false>,
                    .reference = not_kernel<true, true>});
  define(builtins, {.schema = "aten::bitwise_not(Tensor self) -> Tensor",
                    .shape = bitwise_not_shape,
                    .cpu = not_kernel<false, false>,
                    .reference = not_kernel<false, true>});
  define_where<ScalarBranch::None>(builtins, "aten::where.self(Tensor condition, Tensor self, Tensor other) -> Tensor");
  define_where<ScalarBranch::Self>(builtins,
                                   "aten::where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor");
  define_where<ScalarBranch::Other>(builtins,
                                    "aten::where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor");
  define_with_scalar(builtins, "aten::masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", "value",
                     masked_fill_shape<true>, masked_fill_kernel<true, false>, masked_fill_kernel<true, true>,
                     std::source_location::current());
  define_with_scalar(builtins, "aten::masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", "value",
                     masked_fill_shape<false>, masked_fill_kernel<false, false>, masked_fill_kernel<false, true>,
                     std::source_location::current());
  // torch.export keeps the in-place form where a module fills a tensor it has
  // just made (nn.MultiheadAttention's padding mask), and later nodes read its
  // result. With outputs allocated by the caller it runs as the functional
  // form: the result is written to the output, self is left as it was.
  define_with_scalar(builtins, "aten::masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
                     "value", masked_fill_shape<true>, masked_fill_kernel<true, false>, masked_fill_kernel<true, true>,
                     std::source_location::current());
}

}  // namespace opgraph::kernels
