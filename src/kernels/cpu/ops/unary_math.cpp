// Unary math: trigonometric and hyperbolic functions and their inverses,
// logarithms, expm1 and reciprocal on floating-point tensors; abs, sign and
// rounding (ceil, floor, round, trunc) also on integers, abs also on complex
// tensors (their magnitude, a real tensor); isinf and isnan on any dtype,
// giving bool.
//
// Each op is a struct run by elementwise_map.h's loops: in the tensor's type
// for the fast kernel, in double for the reference. log in float is
// vec_math.h's vectorizable one; the other transcendental functions are
// libm's (its float versions in float), within an ulp of the reference. log2
// and log10 stay libm's rather than scale log: they are exact at powers of 2
// and 10.
#include <array>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "kernels/cpu/util/elementwise_map.h"
#include "kernels/cpu/util/vec_math.h"

namespace opgraph::kernels {
namespace {

// A floating-point function of one element, fn(x) in x's type.
template <auto kFn>
struct Math {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return kFn(x);
  }
};

// |x|; the lowest integer wraps to itself, as in PyTorch.
struct Abs {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_neg(x) : x;
    return std::abs(x);
  }
};

// abs of a complex tensor: its magnitude, of the parts' type (complex64 ->
// float32), computed as std::hypot does to avoid overflow; the reference in
// double. Other dtypes go to Abs.
TensorMeta abs_shape(const TensorMeta& self) {
  if (!is_complex(self.dtype)) return ElementwiseMap<Abs>::shape(self);
  return {real_part_dtype(self.dtype), self.shape};
}

template <bool kReference>
void abs_kernel(const KernelContext& context, const Tensor& self, const Tensor& out) {
  if (!is_complex(self.dtype())) {
    return (kReference ? ElementwiseMap<Abs>::reference : ElementwiseMap<Abs>::fast)(context, self, out);
  }
  const auto magnitudes = [&](auto zero) {
    using T = decltype(zero);
    const auto* x = self.data_ptr<const std::complex<T>>();
    T* y = out.data_ptr<T>();
    if constexpr (kReference) {
      for (int64_t i = 0; i < out.numel(); ++i) {
        y[i] = static_cast<T>(std::hypot(double(x[i].real()), double(x[i].imag())));
      }
    } else {
      parallel_items(context, out.numel(), 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) y[i] = std::hypot(x[i].real(), x[i].imag());
      });
    }
  };
  if (self.dtype() == DType::Complex64) return magnitudes(float{});
  magnitudes(double{});
}

// -1, 0 or 1 (0 for zeros of either sign and for NaN, as in PyTorch).
struct Sign {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::All;
  template <typename T>
  T operator()(T x) const {
    return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};

// A rounding to an integral value: integers are theirs already.
template <auto kFn>
struct Rounding {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x;
    return kFn(x);
  }
};

// Integers and bools are never infinite nor NaN.
struct IsInf {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::All;
  template <typename T>
  bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x) == std::numeric_limits<T>::infinity();
    return false;
  }
};

struct IsNan {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::All;
  template <typename T>
  bool operator()(T x) const {
    return x != x;
  }
};

}  // namespace

void register_unary_math_ops(BuiltinOps& builtins) {
  define_elementwise<Math<[](auto x) { return std::sin(x); }>>(builtins, "aten::sin(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::cos(x); }>>(builtins, "aten::cos(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::tan(x); }>>(builtins, "aten::tan(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::asin(x); }>>(builtins, "aten::asin(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::acos(x); }>>(builtins, "aten::acos(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::atan(x); }>>(builtins, "aten::atan(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::sinh(x); }>>(builtins, "aten::sinh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::cosh(x); }>>(builtins, "aten::cosh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::asinh(x); }>>(builtins, "aten::asinh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::acosh(x); }>>(builtins, "aten::acosh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::atanh(x); }>>(builtins, "aten::atanh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::expm1(x); }>>(builtins, "aten::expm1(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return fast_log(x); }>>(builtins, "aten::log(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log2(x); }>>(builtins, "aten::log2(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log10(x); }>>(builtins, "aten::log10(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log1p(x); }>>(builtins, "aten::log1p(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return decltype(x)(1) / x; }>>(builtins,
                                                                      "aten::reciprocal(Tensor self) -> Tensor");
  define(builtins,
         {.schema = "aten::abs(Tensor self) -> Tensor", .shape = abs_shape, OPGRAPH_CPU_AND_REFERENCE(abs_kernel)});
  define_elementwise<Sign>(builtins, "aten::sign(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::ceil(x); }>>(builtins, "aten::ceil(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::floor(x); }>>(builtins, "aten::floor(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::trunc(x); }>>(builtins, "aten::trunc(Tensor self) -> Tensor");
  // Halves to even, as PyTorch rounds, in the default rounding mode.
  define_elementwise<Rounding<[](auto x) { return std::nearbyint(x); }>>(builtins,
                                                                         "aten::round(Tensor self) -> Tensor");
  define_elementwise<IsInf>(builtins, "aten::isinf(Tensor self) -> Tensor");
  define_elementwise<IsNan>(builtins, "aten::isnan(Tensor self) -> Tensor");
}

}  // namespace opgraph::kernels
