// The activations' formulas in the tensor's type, for the activation ops
// (activation.cpp) and for the kernels that apply a fused activation in their
// own loops (mkl_product.cpp). exp, erf and tanh are vec_math.h's, so loops
// over them vectorize.
#pragma once

#include <cstdint>
#include <numbers>

#include "kernels/activation.h"
#include "kernels/cpu/util/vec_math.h"

namespace opgraph::kernels {

// Written so that NaN passes through, as in torch.relu.
template <typename T>
T relu(T x) {
  return x < T(0) ? T(0) : x;
}

// PyTorch's constant for gelu, so that results match it to rounding.
inline constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;

template <typename T>
T gelu_erf(T x) {
  return x * T(0.5) * (T(1) + fast_erf(x * T(kSqrtHalf)));
}

template <typename T>
T gelu_tanh(T x) {
  return T(0.5) * x * (T(1) + fast_tanh(T(kGeluTanhScale) * (x + T(kGeluTanhCube) * x * x * x)));
}

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}

template <typename T>
T silu(T x) {
  return x / (T(1) + fast_exp(-x));
}

// clamp(x, low, high) in torch's order: high wins when low > high; NaN passes.
template <typename T>
T clamp(T x, T low, T high) {
  const T above = x < low ? low : x;
  return above > high ? high : above;
}

// x[i] = f(x[i]) for i in [0, n): one loop per activation, so that each
// vectorizes (inline, for the callers' dispatch_cpu copies).
template <typename T>
inline void activate(Activation activation, T* x, int64_t n) {
  auto map = [x, n](auto f) {
    for (int64_t i = 0; i < n; ++i) x[i] = f(x[i]);
  };
  switch (activation) {
    case Activation::None: return;
    case Activation::ReLU: return map([](T v) { return relu(v); });
    case Activation::GELU: return map([](T v) { return gelu_erf(v); });
    case Activation::GELUTanh: return map([](T v) { return gelu_tanh(v); });
    case Activation::Sigmoid: return map([](T v) { return sigmoid(v); });
    case Activation::Tanh: return map([](T v) { return fast_tanh(v); });
    case Activation::ReLU6: return map([](T v) { return clamp(v, T(0), T(6)); });
    case Activation::SiLU: return map([](T v) { return silu(v); });
  }
}

}  // namespace opgraph::kernels
