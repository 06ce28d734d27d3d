// Elementwise math written so that GCC vectorizes the loops that use it;
// libm's expf is one call per element.
#pragma once

#include <bit>
#include <type_traits>
#include <cmath>
#include <cstdint>

namespace opgraph::kernels {

// e^x in float, within 2 ulp of expf: range reduction by ln 2 (split in two
// parts, Cody-Waite), Cephes' degree-6 polynomial, and 2^n assembled in the
// exponent bits. Results below the smallest normal float flush to 0.
inline float vector_exp(float x) {
  constexpr float kMax = 88.7228391f, kMin = -87.3365447f;
  // Comparisons rather than fmin/fmax, which GCC leaves as libm calls.
  const float clamped = x < kMin ? kMin : (x > kMax ? kMax : x);
  // Adding and removing 1.5 * 2^23 rounds to the nearest integer.
  const float n = (clamped * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  const float value = x < kMin ? 0.0f : p * scale;
  return x != x ? x : value;  // NaN stays NaN
}

// exp for the fast kernels: vectorizable for float, libm's for double.
template <typename T>
inline T fast_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return vector_exp(x);
  } else {
    return std::exp(x);
  }
}

}  // namespace opgraph::kernels
