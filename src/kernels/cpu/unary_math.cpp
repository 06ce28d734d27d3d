// Unary math: trigonometric and hyperbolic functions and their inverses,
// logarithms, expm1 and reciprocal on floating-point tensors; abs, sign and
// rounding (ceil, floor, round, trunc) also on integers; isinf and isnan on
// any dtype, giving bool.
//
// Each op is a struct run by elementwise_map.h's loops: in the tensor's type
// for the fast kernel, in double for the reference. log in float is
// vec_math.h's vectorizable one; the other transcendental functions are
// libm's (its float versions in float), within an ulp of the reference. log2
// and log10 stay libm's rather than scale log: they are exact at powers of 2
// and 10.
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/elementwise_map.h"
#include "kernels/cpu/vec_math.h"

namespace opgraph::kernels {
namespace {

// A floating-point function of one element, fn(x) in x's type.
template <auto kFn>
struct Math {
  static constexpr std::array<const char*, 1> inputs{"self"};
  Math(const Attrs&, DType) {}
  template <typename T>
  T operator()(T x) const { return kFn(x); }
};

// |x|; the lowest integer wraps to itself, as in PyTorch.
struct Abs {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  Abs(const Attrs&, DType) {}
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_neg(x) : x;
    return std::abs(x);
  }
};

// -1, 0 or 1 (0 for zeros of either sign and for NaN, as in PyTorch).
struct Sign {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::All;
  Sign(const Attrs&, DType) {}
  template <typename T>
  T operator()(T x) const { return static_cast<T>((T(0) < x) - (x < T(0))); }
};

// A rounding to an integral value: integers are theirs already.
template <auto kFn>
struct Rounding {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  Rounding(const Attrs&, DType) {}
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
  IsInf(const Attrs&, DType) {}
  template <typename T>
  bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::abs(x) == std::numeric_limits<T>::infinity();
    return false;
  }
};

struct IsNan {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::All;
  IsNan(const Attrs&, DType) {}
  template <typename T>
  bool operator()(T x) const { return x != x; }
};

}  // namespace

void register_unary_math_ops(Registry& registry) {
  define_elementwise<Math<[](auto x) { return std::sin(x); }>>(registry, "aten::sin(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::cos(x); }>>(registry, "aten::cos(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::tan(x); }>>(registry, "aten::tan(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::asin(x); }>>(registry, "aten::asin(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::acos(x); }>>(registry, "aten::acos(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::atan(x); }>>(registry, "aten::atan(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::sinh(x); }>>(registry, "aten::sinh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::cosh(x); }>>(registry, "aten::cosh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::asinh(x); }>>(registry, "aten::asinh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::acosh(x); }>>(registry, "aten::acosh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::atanh(x); }>>(registry, "aten::atanh(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::expm1(x); }>>(registry, "aten::expm1(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return fast_log(x); }>>(registry, "aten::log(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log2(x); }>>(registry, "aten::log2(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log10(x); }>>(registry, "aten::log10(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return std::log1p(x); }>>(registry, "aten::log1p(Tensor self) -> Tensor");
  define_elementwise<Math<[](auto x) { return decltype(x)(1) / x; }>>(registry,
                                                                      "aten::reciprocal(Tensor self) -> Tensor");
  define_elementwise<Abs>(registry, "aten::abs(Tensor self) -> Tensor");
  define_elementwise<Sign>(registry, "aten::sign(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::ceil(x); }>>(registry, "aten::ceil(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::floor(x); }>>(registry, "aten::floor(Tensor self) -> Tensor");
  define_elementwise<Rounding<[](auto x) { return std::trunc(x); }>>(registry, "aten::trunc(Tensor self) -> Tensor");
  // Halves to even, as PyTorch rounds, in the default rounding mode.
  define_elementwise<Rounding<[](auto x) { return std::nearbyint(x); }>>(registry,
                                                                         "aten::round(Tensor self) -> Tensor");
  define_elementwise<IsInf>(registry, "aten::isinf(Tensor self) -> Tensor");
  define_elementwise<IsNan>(registry, "aten::isnan(Tensor self) -> Tensor");
}

}  // namespace opgraph::kernels
