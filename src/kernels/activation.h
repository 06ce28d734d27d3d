// The activation a fused op applies to its result, named by its `str
// activation` attribute; shared by the CPU kernels (cpu/fused_activation.h)
// and the CUDA ones, which parse it the same way.
#pragma once

#include <string_view>

namespace opgraph::kernels {

enum class Activation { None, ReLU, GELU, GELUTanh, Sigmoid, Tanh, ReLU6, SiLU };

// "none" | "relu" | "gelu" (the erf form) | "gelu_tanh" (GELU's tanh
// approximation, GPT-2's) | "sigmoid" | "tanh" | "relu6" (min(max(x, 0), 6),
// MobileNet's hardtanh) | "silu" (x * sigmoid(x), the gate of Llama's MLP and
// EfficientNet's activation); anything else throws an Error listing them.
Activation parse_activation(std::string_view name);
// The name parse_activation takes for `activation`.
std::string_view activation_name(Activation activation);

// GELU's tanh form, 0.5 z (1 + tanh(kGeluTanhScale (z + kGeluTanhCube z^3))),
// with PyTorch's constants, for the CPU and CUDA kernels alike.
inline constexpr double kGeluTanhScale = 0.7978845608028654;  // sqrt(2 / pi)
inline constexpr double kGeluTanhCube = 0.044715;

// Whether f' needs the pre-activation z: GELU's and SiLU's outputs do not
// determine z (they are not one-to-one), where ReLU's, sigmoid's, tanh's and
// ReLU6's do.
inline bool derivative_needs_pre_activation(Activation activation) {
  return activation == Activation::GELU || activation == Activation::GELUTanh || activation == Activation::SiLU;
}

}  // namespace opgraph::kernels
