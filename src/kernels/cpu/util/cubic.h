// Keys' cubic convolution with A = -0.75, the weights ATen's bicubic
// upsampling and grid sampling give the four inputs around a position.
#pragma once

#include <array>

namespace opgraph::kernels {

// The weights of inputs at -1, 0, 1 and 2 for a position t in [0, 1) past input 0.
template <typename T>
std::array<T, 4> cubic_weights(T t) {
  constexpr T A = T(-0.75);
  auto near = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };       // |x| <= 1
  auto far = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

}  // namespace opgraph::kernels
