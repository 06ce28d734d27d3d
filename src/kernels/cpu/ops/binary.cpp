// Arithmetic on two tensors with NumPy/PyTorch broadcasting (add, sub, mul,
// div with and without a rounding mode, maximum, minimum, atan2, pow, fmod,
// remainder), the variants that take a Scalar instead of one tensor, clamp
// with tensor bounds, bitwise ops with a Scalar and logical ops on tensors of
// any dtype (giving bool), and sum_to_size, which folds a gradient back onto
// the shape an input was broadcast from.
//
// There is no type promotion: both operands have one dtype, and the result
// has it too. The one exception is a 0-d operand, how an exported graph
// carries a Python number (x * 0.5, positions + 1): it takes the other
// operand's dtype, as PyTorch's wrapped numbers do, unless a floating-point
// number meets an integer tensor or a complex number a real one, which
// PyTorch would promote. add, sub, mul and div also take complex tensors.
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/util/elementwise.h"
#include "kernels/cpu/util/elementwise_map.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// add, sub and mul also take int32 and int64; div takes floating point only,
// since true division of integers would change the dtype. kComplex adds
// complex64 and complex128 (add, sub, mul and div).
template <bool kComplex = false, typename Fn>
void dispatch_arithmetic(DType dtype, bool integers, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Int32:
      if (integers) return fn(int32_t{});
      break;
    case DType::Int64:
      if (integers) return fn(int64_t{});
      break;
    case DType::Complex64:
      if constexpr (kComplex) return fn(std::complex<float>{});
      break;
    case DType::Complex128:
      if constexpr (kComplex) return fn(std::complex<double>{});
      break;
    default: break;
  }
  const char* expected = integers ? (kComplex ? "float32, float64, int32, int64, complex64 or complex128"
                                              : "float32, float64, int32 or int64")
                                  : (kComplex ? "float32, float64, complex64 or complex128" : "float32 or float64");
  throw Error(detail::concat(argument, ": expected ", expected, ", got ", dtype_name(dtype)));
}

// A Scalar argument (int or float) as T. Integer tensors take integer scalars
// only: a float would promote the result in PyTorch.
template <typename T>
T scalar_as(const AttrValue& value, std::string_view name) {
  if (const auto* integer = std::get_if<int64_t>(&value)) {
    OPGRAPH_CHECK((!std::is_same_v<T, bool> || *integer == 0 || *integer == 1), name,
                  ": expected a bool for a bool tensor (no type promotion), got ", *integer);
    return static_cast<T>(*integer);
  }
  const double real = std::get<double>(value);
  OPGRAPH_CHECK(std::is_floating_point_v<T> || is_complex_v<T>, name, ": expected an integer for a ",
                dtype_name(dtype_of<T>), " tensor (no type promotion), got ", real);
  return static_cast<T>(real);
}

// The arithmetic ops share their kernels over schemas that differ in whether
// the second operand (pow.Scalar's first) is a Scalar and in whether they take
// alpha or a rounding_mode, so those keep the raw kernel form: where each of
// these attributes sits in a schema's Attrs is found once, when the op is
// defined, and each call reads it there.
struct BinaryPositions {
  std::optional<size_t> scalar, alpha, rounding_mode;
};

// One call's attributes; null where the schema has none.
struct BinaryAttrs {
  const AttrValue* scalar = nullptr;
  const AttrValue* alpha = nullptr;
  const AttrValue* rounding_mode = nullptr;

  BinaryAttrs(const BinaryPositions& at, const Attrs& attrs) {
    if (at.scalar) scalar = &attrs[*at.scalar];
    if (at.alpha) alpha = &attrs[*at.alpha];
    if (at.rounding_mode) rounding_mode = &attrs[*at.rounding_mode];
  }
};

// The ops: make<T>(attrs) returns the element function.
struct Add {
  static constexpr bool complex = true;
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs& attrs) {
    return [alpha = scalar_as<T>(*attrs.alpha, "alpha")](T a, T b) { return static_cast<T>(a + alpha * b); };
  }
};
struct Sub {
  static constexpr bool complex = true;
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs& attrs) {
    return [alpha = scalar_as<T>(*attrs.alpha, "alpha")](T a, T b) { return static_cast<T>(a - alpha * b); };
  }
};
struct Mul {
  static constexpr bool complex = true;
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) { return static_cast<T>(a * b); };
  }
};
// maximum and minimum propagate NaN from either side, as PyTorch's do.
struct Maximum {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); };
  }
};
struct Minimum {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); };
  }
};
struct Div {
  static constexpr bool complex = true;
  static constexpr bool integers = false;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) { return a / b; };
  }
};
struct Atan2 {
  static constexpr bool integers = false;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) { return std::atan2(a, b); };
  }
};

// Integer division and modulo never divide the lowest value by -1, which
// traps: the quotient wraps around as PyTorch's would, the remainder is 0.
template <typename T>
T integer_quotient(T a, T b) {
  return b == -1 ? wrapping_neg(a) : static_cast<T>(a / b);
}
template <typename T>
T integer_fmod(T a, T b) {
  return b == -1 ? T(0) : static_cast<T>(a % b);
}

// base ** exponent. Integers by squaring, wrapping on overflow; a negative
// exponent gives 0, except for bases 1 and -1, as in PyTorch.
template <typename T>
T power(T base, T exponent) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(base, exponent);
  } else {
    if (exponent < 0) return base == 1 ? T(1) : base == -1 ? T(exponent % 2 == 0 ? 1 : -1) : T(0);
    using U = std::make_unsigned_t<T>;
    U result = 1, square = static_cast<U>(base);
    for (U e = static_cast<U>(exponent); e != 0; e >>= 1) {
      if (e & 1) result = static_cast<U>(result * square);
      square = static_cast<U>(square * square);
    }
    return static_cast<T>(result);
  }
}
struct Pow {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T base, T exponent) { return power(base, exponent); };
  }
};
// pow.Scalar: the Scalar is the base, the tensor the exponent.
struct PowScalarBase {
  static constexpr bool integers = true;
  static constexpr std::array<const char*, 2> scalar_overload_names{"exponent", "self"};
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T exponent, T base) { return power(base, exponent); };
  }
};

// fmod, remainder and the rounded divisions raise on an integer divisor of
// zero, as PyTorch does, rather than trap.
struct Fmod {
  static constexpr bool integers = true, divides = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    if constexpr (std::is_integral_v<T>)
      return [](T a, T b) { return integer_fmod(a, b); };
    else
      return [](T a, T b) { return std::fmod(a, b); };
  }
};
// Python's modulo: the result takes the divisor's sign.
struct Remainder {
  static constexpr bool integers = true, divides = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    return [](T a, T b) {
      T r;
      if constexpr (std::is_integral_v<T>)
        r = integer_fmod(a, b);
      else
        r = std::fmod(a, b);
      return r != 0 && (r < 0) != (b < 0) ? static_cast<T>(r + b) : r;
    };
  }
};
struct DivTrunc {
  static constexpr bool integers = true, divides = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    if constexpr (std::is_integral_v<T>)
      return [](T a, T b) { return integer_quotient(a, b); };
    else
      return [](T a, T b) { return std::trunc(a / b); };
  }
};
// PyTorch's floor division: for floats, the quotient of a - fmod(a, b),
// which is exact, rounded to the nearest integer.
struct DivFloor {
  static constexpr bool integers = true, divides = true;
  template <typename T>
  static auto make(const BinaryAttrs&) {
    if constexpr (std::is_integral_v<T>) {
      return [](T a, T b) {
        const T quotient = integer_quotient(a, b);
        return (a < 0) != (b < 0) && integer_fmod(a, b) != 0 ? static_cast<T>(quotient - 1) : quotient;
      };
    } else {
      return [](T a, T b) {
        if (b == 0) return a / b;
        const T mod = std::fmod(a, b);
        T quotient = (a - mod) / b;
        if (mod != 0 && (b < 0) != (mod < 0)) quotient -= T(1);
        if (quotient == 0) return std::copysign(T(0), a / b);
        const T floored = std::floor(quotient);
        return quotient - floored > T(0.5) ? floored + T(1) : floored;
      };
    }
  }
};

template <typename Op>
constexpr bool takes_complex() {
  if constexpr (requires { Op::complex; }) {
    return Op::complex;
  } else {
    return false;
  }
}

template <typename Op>
constexpr bool divides() {
  if constexpr (requires { Op::divides; }) {
    return Op::divides;
  } else {
    return false;
  }
}

// The names of the tensor and the Scalar of a Scalar overload.
template <typename Op>
constexpr std::array<const char*, 2> scalar_overload_names() {
  if constexpr (requires { Op::scalar_overload_names; }) {
    return Op::scalar_overload_names;
  } else {
    return {"self", "other"};
  }
}

template <typename T>
void check_divisor(T divisor, const char* argument) {
  if constexpr (std::is_integral_v<T>) {
    OPGRAPH_CHECK(divisor != 0, argument, ": integer division by zero (ZeroDivisionError in PyTorch)");
  }
}

// ---- Binary kernels -----------------------------------------------------------

template <typename T>
struct Operand {
  const T* data;
  std::span<const int64_t> shape;
};

// The fast paths where `full` has as many elements as the output (so it is laid
// out like it): the other operand is a scalar, or a row repeated along the
// leading dims. fn(full element, other element). False if neither applies.
template <typename T, typename Fn>
bool broadcast_full(const KernelContext& context, const T* full, Operand<T> other, T* y, std::span<const int64_t> shape,
                    Fn fn) {
  const int64_t n = shape_numel(shape), cols = shape_numel(other.shape);
  if (cols == 1) {
    const T b = *other.data;
    parallel_items(context, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = fn(full[i], b);
    });
    return true;
  }
  // A trailing row: `other`, without leading 1s, is the output's last dims.
  const auto row = std::find_if(other.shape.begin(), other.shape.end(), [](int64_t e) { return e != 1; });
  const auto row_rank = other.shape.end() - row;
  if (!std::equal(row, other.shape.end(), shape.end() - row_rank, shape.end())) return false;
  const T* b = other.data;
  parallel_items(context, n / cols, cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* a = full + r * cols;
      T* out = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) out[j] = fn(a[j], b[j]);
    }
  });
  return true;
}

template <typename T, typename Fn>
void broadcast_fast(const KernelContext& context, Operand<T> a, Operand<T> b, const Tensor& out, Fn fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  T* y = out.data_ptr<T>();
  const bool a_full = shape_numel(a.shape) == n, b_full = shape_numel(b.shape) == n;
  if (a_full && b_full) {
    parallel_items(context, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = fn(a.data[i], b.data[i]);
    });
    return;
  }
  if (a_full && broadcast_full(context, a.data, b, y, out.shape(), fn)) return;
  if (b_full && broadcast_full(context, b.data, a, y, out.shape(), [&](T x, T z) { return fn(z, x); })) return;

  Shape shape = out.shape();
  std::array<Strides, 3> strides{contiguous_strides(shape), broadcast_strides(a.shape, shape),
                                 broadcast_strides(b.shape, shape)};
  coalesce(shape, strides);
  const int64_t cols = shape.back();
  const auto rows = [&](auto step_a, auto step_b) {
    parallel_items(context, n / cols, cols, [&](int64_t begin, int64_t end) {
      for_each_row(std::span<const int64_t>(shape), strides, begin, end, [&](const std::array<int64_t, 3>& at) {
        T* out_row = y + at[0];
        const T* a_row = a.data + at[1];
        const T* b_row = b.data + at[2];
        for (int64_t j = 0; j < cols; ++j) out_row[j] = fn(a_row[j * step_a], b_row[j * step_b]);
      });
    });
  };
  // Inputs are contiguous, so after coalescing each operand steps through a
  // row by 1, or by 0 where it is broadcast along it (never both). As
  // compile-time constants the strides let GCC vectorize the rows.
  using Zero = std::integral_constant<int64_t, 0>;
  using One = std::integral_constant<int64_t, 1>;
  if (strides[1].back() == 0) return rows(Zero{}, One{});
  if (strides[2].back() == 0) return rows(One{}, Zero{});
  rows(One{}, One{});
}

// Element by element, each operand read through its broadcast strides.
template <typename T, typename Fn>
void broadcast_reference(Operand<T> a, Operand<T> b, const Tensor& out, Fn fn) {
  const Shape& shape = out.shape();
  const Strides strides_a = broadcast_strides(a.shape, shape), strides_b = broadcast_strides(b.shape, shape);
  T* y = out.data_ptr<T>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    y[i] = fn(a.data[strided_offset(i, shape, strides_a)], b.data[strided_offset(i, shape, strides_b)]);
  }
}

DType result_dtype(const TensorMeta& self, const TensorMeta& other) {
  if (self.dtype == other.dtype) return self.dtype;
  // A number of a wider kind than the tensor (a float for an integer tensor, a
  // complex number for a real one) would promote the result in PyTorch.
  const auto kind = [](DType dtype) { return is_complex(dtype) ? 2 : is_floating_point(dtype) ? 1 : 0; };
  const auto takes_dtype_of = [&](const TensorMeta& number, const TensorMeta& tensor) {
    return number.dim() == 0 && kind(number.dtype) <= kind(tensor.dtype);
  };
  if (takes_dtype_of(other, self)) return self.dtype;
  if (takes_dtype_of(self, other)) return other.dtype;
  throw Error(detail::concat("other: expected ", dtype_name(self.dtype),
                             " like self (there is no type promotion), got ", dtype_name(other.dtype)));
}

// `t` as an operand of type T: its data, or its one element converted into `storage`.
template <typename T>
Operand<T> operand(const Tensor& t, T& storage) {
  if (t.dtype() == dtype_of<T>) return {t.data_ptr<const T>(), t.shape()};
  storage = element_as<T>(t);
  return {&storage, {}};
}

// The second operand is the tensor `other`, or with kScalar the Scalar `other`.
template <typename Op, bool kScalar, bool kReference>
void binary_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   const BinaryAttrs& attrs) {
  constexpr auto kNames = scalar_overload_names<Op>();
  dispatch_arithmetic<takes_complex<Op>()>(outputs[0].dtype(), Op::integers, kNames[0], [&](auto zero) {
    using T = decltype(zero);
    T self_number{}, scalar{};
    const Operand<T> a = operand(inputs[0], self_number);
    Operand<T> b{&scalar, {}};
    if constexpr (kScalar) {
      scalar = scalar_as<T>(*attrs.scalar, kNames[1]);
    } else {
      b = operand(inputs[1], scalar);
      if constexpr (divides<Op>()) {
        std::for_each(b.data, b.data + shape_numel(b.shape), [](T divisor) { check_divisor(divisor, "other"); });
      }
    }
    if constexpr (kReference) {
      broadcast_reference(a, b, outputs[0], Op::template make<T>(attrs));
    } else {
      broadcast_fast(context, a, b, outputs[0], Op::template make<T>(attrs));
    }
  });
}

template <typename Op, bool kScalar>
std::vector<TensorMeta> binary_shape(std::span<const TensorMeta* const> inputs, const BinaryAttrs& attrs) {
  constexpr auto kNames = scalar_overload_names<Op>();
  const TensorMeta& self = *inputs[0];
  const DType dtype = kScalar ? self.dtype : result_dtype(self, *inputs[1]);
  dispatch_arithmetic<takes_complex<Op>()>(dtype, Op::integers, kNames[0], [&](auto zero) {
    using T = decltype(zero);
    static_cast<void>(Op::template make<T>(attrs));  // checks alpha
    if constexpr (kScalar) {
      const T scalar = scalar_as<T>(*attrs.scalar, kNames[1]);
      if constexpr (divides<Op>()) check_divisor(scalar, kNames[1]);
    }
  });
  return {{dtype, kScalar ? self.shape : broadcast_shapes(self.shape, inputs[1]->shape)}};
}

using BinaryShape = std::vector<TensorMeta> (*)(std::span<const TensorMeta* const>, const BinaryAttrs&);
using BinaryKernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>,
                              const BinaryAttrs&);

// Defines an op whose functions read their attributes where `schema` has
// them; `scalar` names its Scalar operand.
void define_positional(BuiltinOps& builtins, const char* schema, const char* scalar, BinaryShape shape,
                       BinaryKernel cpu, BinaryKernel reference, const char* backward, std::source_location where) {
  const Schema parsed = Schema::parse(schema);
  const BinaryPositions at{attribute_index(parsed, scalar), attribute_index(parsed, "alpha"),
                           attribute_index(parsed, "rounding_mode")};
  auto kernel = [at](BinaryKernel fn) -> KernelFn {
    return [fn, at](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) { fn(context, inputs, outputs, BinaryAttrs(at, attrs)); };
  };
  define(builtins,
         {.schema = schema,
          .shape = [shape, at](std::span<const TensorMeta* const> inputs,
                               const Attrs& attrs) { return shape(inputs, BinaryAttrs(at, attrs)); },
          .cpu = kernel(cpu),
          .reference = kernel(reference),
          .backward = backward},
         where);
}

template <typename Op, bool kScalar>
void define_binary(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                   std::source_location where = std::source_location::current()) {
  define_positional(builtins, schema, scalar_overload_names<Op>()[1], binary_shape<Op, kScalar>,
                    binary_kernel<Op, kScalar, false>, binary_kernel<Op, kScalar, true>, backward, where);
}

// ---- div with a rounding mode --------------------------------------------------

// Calls fn.operator()<Op>() with Op the division `rounding_mode` asks for: true
// division for None (floating point only), else rounded towards zero or down.
template <typename Fn>
decltype(auto) by_rounding_mode(const BinaryAttrs& attrs, Fn&& fn) {
  if (std::holds_alternative<std::monostate>(*attrs.rounding_mode)) return fn.template operator()<Div>();
  const std::string& mode = std::get<std::string>(*attrs.rounding_mode);
  if (mode == "trunc") return fn.template operator()<DivTrunc>();
  OPGRAPH_CHECK(mode == "floor", "rounding_mode: expected None, \"trunc\" or \"floor\", got \"", mode, "\"");
  return fn.template operator()<DivFloor>();
}

template <bool kScalar>
std::vector<TensorMeta> div_mode_shape(std::span<const TensorMeta* const> inputs, const BinaryAttrs& attrs) {
  return by_rounding_mode(attrs, [&]<typename Op>() { return binary_shape<Op, kScalar>(inputs, attrs); });
}

template <bool kScalar, bool kReference>
void div_mode_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                     const BinaryAttrs& attrs) {
  by_rounding_mode(attrs,
                   [&]<typename Op>() { binary_kernel<Op, kScalar, kReference>(context, inputs, outputs, attrs); });
}

template <bool kScalar>
void define_div_mode(BuiltinOps& builtins, const char* schema,
                     std::source_location where = std::source_location::current()) {
  define_positional(builtins, schema, "other", div_mode_shape<kScalar>, div_mode_kernel<kScalar, false>,
                    div_mode_kernel<kScalar, true>, nullptr, where);
}

// ---- atan2.out ------------------------------------------------------------------

// ATen writes the result into `out` (resized to the broadcast shape) and
// returns it. The caller allocates outputs here, so the op runs as its
// functional form: the result goes to the output, `out` is left as it was,
// and stands only for the result's dtype.
std::vector<TensorMeta> atan2_out_shape(std::span<const TensorMeta* const> inputs, const BinaryAttrs& attrs) {
  std::vector<TensorMeta> result = binary_shape<Atan2, false>(inputs, attrs);
  OPGRAPH_CHECK(inputs[2]->dtype == result[0].dtype, "out: expected ", dtype_name(result[0].dtype),
                " like the result (there is no type promotion), got ", inputs[2]->str());
  return result;
}

// ---- clamp with tensor bounds ---------------------------------------------------

// A bound has self's dtype, or is a 0-d tensor that converts to it without
// promotion (an integer number for an integer tensor).
void check_bound(const TensorMeta& self, const TensorMeta* bound, const char* argument) {
  if (!bound || bound->dtype == self.dtype) return;
  OPGRAPH_CHECK(bound->dim() == 0 && (is_floating_point(self.dtype) || !is_floating_point(bound->dtype)), argument,
                ": expected ", dtype_name(self.dtype), " like self (there is no type promotion), got ", bound->str());
}

TensorMeta clamp_tensor_shape(const TensorMeta& self, const TensorMeta* min, const TensorMeta* max) {
  dispatch_arithmetic(self.dtype, true, "self", [](auto) {});
  OPGRAPH_CHECK(min || max, "min and max: expected at least one of them to be a tensor, got None for both");
  Shape shape = self.shape;
  for (const TensorMeta* bound : {min, max}) {
    check_bound(self, bound, bound == min ? "min" : "max");
    if (bound) shape = broadcast_shapes(shape, bound->shape);
  }
  return {self.dtype, std::move(shape)};
}

// min(max(x, min), max) in PyTorch's order (max wins when min > max), NaN from
// any of the three giving NaN. A bound given as None is the dtype's extreme.
template <bool kReference>
void clamp_tensor_kernel(const KernelContext& context, const Tensor& self, const Tensor* min, const Tensor* max,
                         const Tensor& out) {
  const std::array<const Tensor*, 3> inputs{&self, min, max};
  dispatch_arithmetic(out.dtype(), true, "self", [&](auto zero) {
    using T = decltype(zero);
    using Limits = std::numeric_limits<T>;
    std::array<T, 3> numbers{T{}, Limits::has_infinity ? -Limits::infinity() : Limits::lowest(),
                             Limits::has_infinity ? Limits::infinity() : Limits::max()};
    std::array<Input<T>, 3> operands;
    for (size_t i = 0; i < 3; ++i) {
      const Operand<T> given = inputs[i] ? operand(*inputs[i], numbers[i]) : Operand<T>{&numbers[i], {}};
      operands[i] = {given.data, given.shape};
    }
    const auto clamp = [](T x, T low, T high) {
      const T raised = x < low || low != low ? low : x;
      return raised > high || high != high ? high : raised;
    };
    map_broadcast<T, kReference>(context, out, clamp, operands[0], operands[1], operands[2]);
  });
}

// ---- bitwise ops with a Scalar, logical ops -----------------------------------

template <typename Fn>
void dispatch_integral(DType dtype, const char* argument, Fn&& fn) {
  OPGRAPH_CHECK(!is_floating_point(dtype), argument, ": expected bool or an integer dtype, got ", dtype_name(dtype));
  dispatch_elementwise(dtype, argument, [&](auto zero) {
    if constexpr (!std::is_floating_point_v<decltype(zero)>) fn(zero);
  });
}

TensorMeta bitwise_scalar_shape(const TensorMeta& self, const AttrValue& other) {
  dispatch_integral(self.dtype, "self",
                    [&](auto zero) { static_cast<void>(scalar_as<decltype(zero)>(other, "other")); });
  return self;
}

template <typename Fn, bool kReference>
void bitwise_scalar_kernel(const KernelContext& context, const Tensor& self, const AttrValue& other_given,
                           const Tensor& out) {
  dispatch_integral(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T other = scalar_as<T>(other_given, "other");
    map_broadcast<T, kReference>(
        context, out, [other](T a) { return static_cast<T>(Fn{}(a, other)); },
        Input<T>{self.data_ptr<const T>(), self.shape()});
  });
}

template <typename Fn>
void define_bitwise_scalar(BuiltinOps& builtins, const char* schema,
                           std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = bitwise_scalar_shape,
          .cpu = bitwise_scalar_kernel<Fn, false>,
          .reference = bitwise_scalar_kernel<Fn, true>},
         where);
}

// Logical ops read their operands as truth values, so a 0-d operand of any
// dtype (a number) meets a tensor of any other; two tensors share a dtype.
DType logical_dtype(const TensorMeta& self, const TensorMeta& other) {
  if (self.dtype == other.dtype || other.dim() == 0) return self.dtype;
  if (self.dim() == 0) return other.dtype;
  throw Error(detail::concat("other: expected ", dtype_name(self.dtype),
                             " like self (there is no type promotion except from 0-d tensors), got ", other.str()));
}

TensorMeta logical_shape(const TensorMeta& self, const TensorMeta& other) {
  dispatch_elementwise(logical_dtype(self, other), "self", [](auto) {});
  return {DType::Bool, broadcast_shapes(self.shape, other.shape)};
}

// `t` as an operand of type T, a 0-d `t` of another dtype by its truth value.
template <typename T>
Input<T> truth_operand(const Tensor& t, T& storage) {
  if (t.dtype() == dtype_of<T>) return {t.data_ptr<const T>(), t.shape()};
  storage = static_cast<T>(element_as<bool>(t));
  return {&storage, {}};
}

template <typename Fn, bool kReference>
void logical_kernel(const KernelContext& context, const Tensor& self, const Tensor& other, const Tensor& out) {
  dispatch_elementwise(logical_dtype(self.meta(), other.meta()), "self", [&](auto zero) {
    using T = decltype(zero);
    T self_number{}, other_number{};
    map_broadcast<bool, kReference>(
        context, out, [](T a, T b) { return Fn{}(a != T(0), b != T(0)); }, truth_operand(self, self_number),
        truth_operand(other, other_number));
  });
}

template <typename Fn>
void define_logical(BuiltinOps& builtins, const char* schema,
                    std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = logical_shape,
          .cpu = logical_kernel<Fn, false>,
          .reference = logical_kernel<Fn, true>},
         where);
}

// ---- sum_to_size ----------------------------------------------------------------

TensorMeta sum_to_size_shape(const TensorMeta& self, std::span<const int64_t> size) {
  dispatch_floating(self.dtype, "self", [](auto) {});
  bool expandable = size.size() <= self.shape.size();
  for (size_t i = 1; expandable && i <= size.size(); ++i) {
    const int64_t extent = size[size.size() - i];
    expandable = extent == 1 || extent == self.shape[self.shape.size() - i];
  }
  OPGRAPH_CHECK(expandable, "size: expected a shape that broadcasts to self's ", shape_str(self.shape), ", got ",
                shape_str(size));
  return {self.dtype, Shape(size.begin(), size.end())};
}

// Sums are accumulated in double: a float32 gradient may fold many elements.
template <bool kReference>
void sum_to_size_kernel(const KernelContext&, const Tensor& self, std::span<const int64_t>, const Tensor& out) {
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    std::vector<double> sum(static_cast<size_t>(out.numel()), 0.0);
    Shape shape = self.shape();
    std::array<Strides, 2> strides{contiguous_strides(shape), broadcast_strides(out.shape(), shape)};
    if constexpr (kReference) {
      for (int64_t i = 0; i < self.numel(); ++i) sum[strided_offset(i, shape, strides[1])] += x[i];
    } else if (self.numel() == out.numel()) {
      std::copy(x, x + self.numel(), y);  // nothing to fold
      return;
    } else if (self.numel() > 0) {
      coalesce(shape, strides);
      const int64_t cols = shape.back();
      const bool folds_row = strides[1].back() == 0;  // else the row maps onto a row of the result
      for_each_row(std::span<const int64_t>(shape), strides, 0, self.numel() / cols,
                   [&](const std::array<int64_t, 2>& at) {
                     const T* row = x + at[0];
                     double* target = sum.data() + at[1];
                     if (folds_row) {
                       double total = 0;
                       for (int64_t j = 0; j < cols; ++j) total += row[j];
                       *target += total;
                     } else {
                       for (int64_t j = 0; j < cols; ++j) target[j] += row[j];
                     }
                   });
    }
    std::transform(sum.begin(), sum.end(), y, [](double s) { return static_cast<T>(s); });
  });
}

}  // namespace

void register_binary_ops(BuiltinOps& builtins) {
  define_binary<Add, false>(builtins, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                            "opgraph::add_backward");
  define_binary<Sub, false>(builtins, "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                            "opgraph::sub_backward");
  define_binary<Mul, false>(builtins, "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", "opgraph::mul_backward");
  define_binary<Div, false>(builtins, "aten::div.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Maximum, false>(builtins, "aten::maximum(Tensor self, Tensor other) -> Tensor");
  define_binary<Minimum, false>(builtins, "aten::minimum(Tensor self, Tensor other) -> Tensor");
  define_binary<Add, true>(builtins, "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  define_binary<Sub, true>(builtins, "aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  define_binary<Mul, true>(builtins, "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor");
  define_binary<Div, true>(builtins, "aten::div.Scalar(Tensor self, Scalar other) -> Tensor");
  define_binary<Atan2, false>(builtins, "aten::atan2(Tensor self, Tensor other) -> Tensor");
  define_positional(builtins, "aten::atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)", "other",
                    atan2_out_shape, binary_kernel<Atan2, false, false>, binary_kernel<Atan2, false, true>, nullptr,
                    std::source_location::current());
  define_binary<Pow, false>(builtins, "aten::pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor");
  define_binary<PowScalarBase, true>(builtins, "aten::pow.Scalar(Scalar self, Tensor exponent) -> Tensor");
  define_binary<Fmod, false>(builtins, "aten::fmod.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Fmod, true>(builtins, "aten::fmod.Scalar(Tensor self, Scalar other) -> Tensor");
  define_binary<Remainder, false>(builtins, "aten::remainder.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Remainder, true>(builtins, "aten::remainder.Scalar(Tensor self, Scalar other) -> Tensor");
  define_div_mode<false>(builtins, "aten::div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor");
  define_div_mode<true>(builtins, "aten::div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor");
  define(builtins, {.schema = "aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
                    .shape = clamp_tensor_shape,
                    OPGRAPH_CPU_AND_REFERENCE(clamp_tensor_kernel)});
  define_bitwise_scalar<std::bit_and<>>(builtins, "aten::bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor");
  define_bitwise_scalar<std::bit_or<>>(builtins, "aten::bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor");
  define_bitwise_scalar<std::bit_xor<>>(builtins, "aten::bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor");
  define_logical<std::logical_and<>>(builtins, "aten::logical_and(Tensor self, Tensor other) -> Tensor");
  define_logical<std::logical_or<>>(builtins, "aten::logical_or(Tensor self, Tensor other) -> Tensor");
  define_logical<std::not_equal_to<>>(builtins, "aten::logical_xor(Tensor self, Tensor other) -> Tensor");
  define(builtins, {.schema = "aten::sum_to_size(Tensor self, SymInt[] size) -> Tensor",
                    .shape = sum_to_size_shape,
                    OPGRAPH_CPU_AND_REFERENCE(sum_to_size_kernel)});
}

}  // namespace opgraph::kernels
