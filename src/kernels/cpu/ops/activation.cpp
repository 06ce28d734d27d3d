// Activation functions (relu, gelu, silu, sigmoid, tanh, hardtanh, elu,
// leaky_relu, hardswish, hardsigmoid), their gradients and the elementwise
// math of transformer blocks (neg, exp, sqrt, rsqrt, erf, pow with a scalar
// exponent, rsub, clamp): maps over tensors of one shape and one
// floating-point dtype (neg also takes integers).
//
// Each op is a small struct run by elementwise_map.h's loops, in the tensor's
// type for the fast kernel and in double for the reference.
// exp, erf and tanh are vec_math.h's: vectorizable approximations in float,
// libm's in double, so the reference holds float32 results to libm.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include "kernels/activation.h"
#include "kernels/cpu/util/activation_formulas.h"
#include "kernels/cpu/util/elementwise_map.h"
#include "kernels/cpu/util/vec_math.h"

namespace opgraph::kernels {
namespace {

// A Scalar argument (int or float) rounded to the tensor's dtype, as PyTorch
// does: the double-precision reference then compares against the same bounds.
double rounded_scalar(double scalar, DType dtype) {
  return dtype == DType::Float32 ? static_cast<float>(scalar) : scalar;
}

// gelu's `approximate`: true for "tanh", false for "none".
bool tanh_approximation(std::string_view approximate) {
  OPGRAPH_CHECK(approximate == "none" || approximate == "tanh", "approximate: expected \"none\" or \"tanh\", got \"",
                approximate, "\"");
  return approximate == "tanh";
}

// PyTorch's constants for gelu, so that results match it to rounding.
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi * kSqrtHalf;              // 1 / sqrt(2 pi)
static_assert(kGeluTanhScale == std::numbers::sqrt2 * std::numbers::inv_sqrtpi);  // sqrt(2 / pi)
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// Forward ops: one input.

struct Relu {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return relu(x);
  }
};

// gelu and its gradient: kTanh for approximate="tanh" (see define_gelu).
template <bool kTanh>
struct Gelu {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<std::string_view>;
  Gelu(DType, std::string_view approximate) { tanh_approximation(approximate); }
  template <typename T>
  T operator()(T x) const {
    if constexpr (kTanh) return gelu_tanh(x);
    return gelu_erf(x);
  }
};

struct Silu {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return silu(x);
  }
};

struct Sigmoid {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return sigmoid(x);
  }
};

struct Tanh {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return fast_tanh(x);
  }
};

struct Hardtanh {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<double, double>;
  Hardtanh(DType dtype, double min_val, double max_val)
      : min_val(rounded_scalar(min_val, dtype)), max_val(rounded_scalar(max_val, dtype)) {}
  template <typename T>
  T operator()(T x) const {
    return clamp(x, T(min_val), T(max_val));
  }
  double min_val, max_val;
};

struct Neg {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return wrapping_neg(x);
    return -x;
  }
};

struct Exp {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return fast_exp(x);
  }
};

struct Sqrt {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return std::sqrt(x);
  }
};

struct Rsqrt {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return T(1) / std::sqrt(x);
  }
};

struct Erf {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return fast_erf(x);
  }
};

// x ** exponent. The exponents transformer code writes (2, 3, 0.5, -1) are
// products or square roots, which vectorize and round as PyTorch's do; any
// other exponent goes through std::pow.
struct PowScalar {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<double>;
  PowScalar(DType, double exponent) : exponent(exponent) {}
  template <typename T>
  T operator()(T x) const {
    if (exponent == 2) return x * x;
    if (exponent == 3) return x * x * x;
    if (exponent == 0.5) return std::sqrt(x);
    if (exponent == -1) return T(1) / x;
    return std::pow(x, T(exponent));
  }
  double exponent;
};

// other - alpha * self: `1 - mask` as PyTorch spells it.
struct RsubScalar {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<double, double>;
  RsubScalar(DType dtype, double other, double alpha)
      : other(rounded_scalar(other, dtype)), alpha(rounded_scalar(alpha, dtype)) {}
  template <typename T>
  T operator()(T x) const {
    return T(other) - T(alpha) * x;
  }
  double other, alpha;
};

// clamp with optional bounds; a bound that is None does not apply. Integer
// tensors (decomposed upsampling clamps its indexes) take integer bounds:
// ATen would promote to float for a float bound, and opgraph does not promote.
struct Clamp {
  static constexpr std::array<const char*, 1> inputs{"self"};
  static constexpr Accepts accepts = Accepts::Numbers;
  // The bounds as given: None, or an int or a float.
  using Attributes = std::tuple<const AttrValue&, const AttrValue&>;
  Clamp(DType dtype, const AttrValue& min, const AttrValue& max)
      : min_val(bound(min, "min", dtype, -kInfinity)), max_val(bound(max, "max", dtype, kInfinity)) {}
  static double bound(const AttrValue& value, const char* name, DType dtype, double none) {
    if (std::holds_alternative<std::monostate>(value)) return none;
    const auto* integer = std::get_if<int64_t>(&value);
    const double scalar = integer ? static_cast<double>(*integer) : std::get<double>(value);
    OPGRAPH_CHECK(is_floating_point(dtype) || std::holds_alternative<int64_t>(value), name,
                  ": expected an integer bound for ", dtype_name(dtype), " self (there is no type promotion), got ",
                  scalar);
    return rounded_scalar(scalar, dtype);
  }
  template <typename T>
  T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      // In double, where an infinite or out-of-range bound compares without overflow.
      const double value = static_cast<double>(x);
      return value < min_val ? saturate<T>(min_val) : value > max_val ? saturate<T>(max_val) : x;
    } else {
      return clamp(x, T(min_val), T(max_val));
    }
  }
  template <typename T>
  static T saturate(double bound) {
    return static_cast<T>(std::clamp<double>(bound, std::numeric_limits<T>::lowest(), std::numeric_limits<T>::max()));
  }
  double min_val, max_val;
};

// alpha * scale * (e^(x * input_scale) - 1) below 0, scale * x above; NaN
// takes the exponential branch and stays NaN. expm1, as PyTorch's vector code
// has it, keeps small negative inputs (and -0) from collapsing to 0.
struct Elu {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<double, double, double>;
  Elu(DType dtype, double alpha, double scale, double input_scale)
      : alpha(rounded_scalar(alpha, dtype)),
        scale(rounded_scalar(scale, dtype)),
        input_scale(rounded_scalar(input_scale, dtype)) {}
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? T(scale) * x : T(alpha * scale) * std::expm1(x * T(input_scale));
  }
  double alpha, scale, input_scale;
};

struct LeakyRelu {
  static constexpr std::array<const char*, 1> inputs{"self"};
  using Attributes = std::tuple<double>;
  LeakyRelu(DType dtype, double negative_slope) : negative_slope(rounded_scalar(negative_slope, dtype)) {}
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? x : x * T(negative_slope);
  }
  double negative_slope;
};

// relu6(x + 3) / 6, NaN passing through both bounds.
template <typename T>
T hard_sigmoid(T x) {
  const T shifted = x + T(3);
  const T low = shifted < T(0) ? T(0) : shifted;
  return (low > T(6) ? T(6) : low) / T(6);
}

struct Hardsigmoid {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return hard_sigmoid(x);
  }
};

struct Hardswish {
  static constexpr std::array<const char*, 1> inputs{"self"};
  template <typename T>
  T operator()(T x) const {
    return x * hard_sigmoid(x);
  }
};

// Inference only: dropout is the identity when not training. Training needs a
// random mask, which a stateless op without a generator cannot draw.
struct Dropout {
  static constexpr std::array<const char*, 1> inputs{"input"};
  using Attributes = std::tuple<double, bool>;
  Dropout(DType, double p, bool train) {
    OPGRAPH_CHECK(p >= 0 && p <= 1, "p: expected a probability in [0, 1], got ", p);
    OPGRAPH_CHECK(!train,
                  "train: training-mode dropout is not supported by this op "
                  "(it runs inference only); expected train=False, got train=True");
  }
  template <typename T>
  T operator()(T x) const {
    return x;
  }
};

// Gradients: the incoming gradient, then the forward op's input or output.

struct ThresholdBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  using Attributes = std::tuple<double>;
  ThresholdBackward(DType dtype, double threshold) : threshold(rounded_scalar(threshold, dtype)) {}
  template <typename T>
  T operator()(T grad, T x) const {
    return x <= T(threshold) ? T(0) : grad;
  }
  double threshold;
};

template <bool kTanh>
struct GeluBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  using Attributes = std::tuple<std::string_view>;
  GeluBackward(DType, std::string_view approximate) { tanh_approximation(approximate); }
  template <typename T>
  T operator()(T grad, T x) const {
    if constexpr (kTanh) {
      const T x_sq = x * x;
      const T tanh_inner = fast_tanh(T(kGeluTanhScale) * (x + T(kGeluTanhCube) * x_sq * x));
      const T left_derivative = T(0.5) * (T(1) + tanh_inner);
      const T right_derivative =
          T(0.5) * x * (T(1) - tanh_inner * tanh_inner) * T(kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCube) * x_sq);
      return grad * (left_derivative + right_derivative);
    }
    const T cdf = T(0.5) * (T(1) + fast_erf(x * T(kSqrtHalf)));
    const T pdf = T(kInvSqrt2Pi) * fast_exp(T(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};

struct SiluBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  template <typename T>
  T operator()(T grad, T x) const {
    const T s = sigmoid(x);
    return grad * s * (T(1) + x * (T(1) - s));
  }
};

// sigmoid' = y (1 - y) in terms of the forward output y.
struct SigmoidBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "output"};
  template <typename T>
  T operator()(T grad, T y) const {
    return grad * (T(1) - y) * y;
  }
};

// tanh' = 1 - y^2 in terms of the forward output y.
struct TanhBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "output"};
  template <typename T>
  T operator()(T grad, T y) const {
    return grad * (T(1) - y * y);
  }
};

// The gradients of relu, sigmoid and tanh from the forward input, shaped as
// (grad, the forward's inputs): the form OpDef::backward names, where ATen's
// own gradient ops take a threshold or the forward output instead.
struct ReluBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  template <typename T>
  T operator()(T grad, T x) const {
    return x <= T(0) ? T(0) : grad;
  }
};

struct SigmoidInputBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  template <typename T>
  T operator()(T grad, T x) const {
    const T y = sigmoid(x);
    return grad * (T(1) - y) * y;
  }
};

struct TanhInputBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  template <typename T>
  T operator()(T grad, T x) const {
    const T y = fast_tanh(x);
    return grad * (T(1) - y * y);
  }
};

struct HardtanhBackward {
  static constexpr std::array<const char*, 2> inputs{"grad_output", "self"};
  using Attributes = std::tuple<double, double>;
  HardtanhBackward(DType dtype, double min_val, double max_val)
      : min_val(rounded_scalar(min_val, dtype)), max_val(rounded_scalar(max_val, dtype)) {}
  template <typename T>
  T operator()(T grad, T x) const {
    return x <= T(min_val) || x >= T(max_val) ? T(0) : grad;
  }
  double min_val, max_val;
};

// Runs Op<true> (the tanh form) or Op<false> as `approximate` asks, per call:
// a branch per element would keep the loop from vectorizing.
template <template <bool> class Op, bool kReference,
          typename Inputs = std::make_index_sequence<Op<false>::inputs.size()>>
struct ByApproximation;

template <template <bool> class Op, bool kReference, size_t... I>
struct ByApproximation<Op, kReference, std::index_sequence<I...>> {
  static void run(const KernelContext& context, InputTensor<I>... inputs, std::string_view approximate,
                  const Tensor& out) {
    using Exact = ElementwiseMap<Op<false>>;
    using Tanh = ElementwiseMap<Op<true>>;
    if (tanh_approximation(approximate)) {
      (kReference ? Tanh::reference : Tanh::fast)(context, inputs..., approximate, out);
    } else {
      (kReference ? Exact::reference : Exact::fast)(context, inputs..., approximate, out);
    }
  }
};

// gelu and gelu_backward: Op<true> is the tanh form, Op<false> the exact one.
template <template <bool> class Op>
void define_gelu(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                 std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = ElementwiseMap<Op<false>>::shape,
          .cpu = ByApproximation<Op, false>::run,
          .reference = ByApproximation<Op, true>::run,
          .backward = backward},
         where);
}

}  // namespace

void register_activation_ops(BuiltinOps& builtins) {
  define_elementwise<ThresholdBackward>(
      builtins, "aten::threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor");
  define_gelu<GeluBackward>(
      builtins, "aten::gelu_backward(Tensor grad_output, Tensor self, *, str approximate=\"none\") -> Tensor");
  define_elementwise<SiluBackward>(builtins, "aten::silu_backward(Tensor grad_output, Tensor self) -> Tensor");
  define_elementwise<SigmoidBackward>(builtins, "aten::sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor");
  define_elementwise<TanhBackward>(builtins, "aten::tanh_backward(Tensor grad_output, Tensor output) -> Tensor");
  define_elementwise<HardtanhBackward>(
      builtins, "aten::hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) -> Tensor");

  define_elementwise<ReluBackward>(builtins, "opgraph::relu_backward(Tensor grad_output, Tensor self) -> Tensor");
  define_elementwise<SigmoidInputBackward>(builtins,
                                           "opgraph::sigmoid_backward(Tensor grad_output, Tensor self) -> Tensor");
  define_elementwise<TanhInputBackward>(builtins, "opgraph::tanh_backward(Tensor grad_output, Tensor self) -> Tensor");

  // `backward` names an op taking (grad, the forward inputs, the forward
  // attributes): ATen's where it has that form, opgraph's where it does not.
  define_elementwise<Relu>(builtins, "aten::relu(Tensor self) -> Tensor", "opgraph::relu_backward");
  define_gelu<Gelu>(builtins, "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor", "aten::gelu_backward");
  define_elementwise<Silu>(builtins, "aten::silu(Tensor self) -> Tensor", "aten::silu_backward");
  define_elementwise<Sigmoid>(builtins, "aten::sigmoid(Tensor self) -> Tensor", "opgraph::sigmoid_backward");
  define_elementwise<Tanh>(builtins, "aten::tanh(Tensor self) -> Tensor", "opgraph::tanh_backward");
  define_elementwise<Hardtanh>(builtins, "aten::hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
                               "aten::hardtanh_backward");
  define_elementwise<Elu>(builtins,
                          "aten::elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor");
  define_elementwise<LeakyRelu>(builtins, "aten::leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor");
  define_elementwise<Hardswish>(builtins, "aten::hardswish(Tensor self) -> Tensor");
  define_elementwise<Hardsigmoid>(builtins, "aten::hardsigmoid(Tensor self) -> Tensor");
  define_elementwise<Dropout>(builtins, "aten::dropout(Tensor input, float p, bool train) -> Tensor");
  define_elementwise<Neg>(builtins, "aten::neg(Tensor self) -> Tensor");
  define_elementwise<Exp>(builtins, "aten::exp(Tensor self) -> Tensor");
  define_elementwise<Sqrt>(builtins, "aten::sqrt(Tensor self) -> Tensor");
  define_elementwise<Rsqrt>(builtins, "aten::rsqrt(Tensor self) -> Tensor");
  define_elementwise<Erf>(builtins, "aten::erf(Tensor self) -> Tensor");
  define_elementwise<PowScalar>(builtins, "aten::pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor");
  define_elementwise<RsubScalar>(builtins, "aten::rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  define_elementwise<Clamp>(builtins, "aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor");
}

}  // namespace opgraph::kernels
