// Elementwise math written so that GCC vectorizes the loops that use it;
// libm's expf, erff, tanhf and logf are one call per element.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace opgraph::kernels {

// e^x in float, within 2 ulp of expf: range reduction by ln 2 (split in two
// parts, Cody-Waite), Cephes' degree-6 polynomial, and 2^n assembled in the
// exponent bits. At the clamp's ends the exponent field saturates: 2^128
// reads as inf and 2^-127 as 0, so results overflow to inf (above 88.38, a
// little before expf does) and flush to 0 (below about 8e-39) with no test of
// their own. NaN stays NaN through p.
inline float vector_exp(float x) {
  constexpr float kMax = 88.7228391f, kMin = -88.0f;
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
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// 2^x in float, within 2.5e-7 of exp2f relatively (2 ulp): x = n + r with n
// the nearest integer and |r| <= 1/2, the Taylor polynomial of 2^r to degree
// 6 (its remainder is under 1.2e-7), and 2^n in the exponent bits. Against vector_exp it saves
// the range reduction's two multiply-adds and two of the polynomial's, for a
// caller that can take its exponents in base 2 (a softmax whose scores it
// scales by log2 e). The clamp's ends saturate the exponent field as in
// vector_exp: 2^128 reads as inf, 2^-127 as 0 (and -inf gives 0).
inline float vector_exp2(float x) {
  const float clamped = x < -127.0f ? -127.0f : (x > 128.0f ? 128.0f : x);
  const float n = (clamped + 12582912.0f) - 12582912.0f;
  const float r = clamped - n;
  float p = 1.5403530393381609e-4f;  // ln(2)^k / k!, k = 6 down to 0
  p = p * r + 1.3333558146428443e-3f;
  p = p * r + 9.6181291076284772e-3f;
  p = p * r + 5.5504108664821580e-2f;
  p = p * r + 2.4022650695910071e-1f;
  p = p * r + 6.9314718055994531e-1f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
}

// erf in float, within 8 ulp of erf: the odd rational approximation
// (degree 13 over degree 8) that XLA and Eigen use for float, on x clamped to
// [-4, 4], beyond which erf rounds to +-1. No exp, one division.
inline float vector_erf(float x) {
  const float c = x < -4.0f ? -4.0f : (x > 4.0f ? 4.0f : x);
  const float c2 = c * c;
  float p = -2.72614225801306e-10f;
  p = p * c2 + 2.77068142495902e-08f;
  p = p * c2 - 2.10102402082508e-06f;
  p = p * c2 - 5.69250639462346e-05f;
  p = p * c2 - 7.34990630326855e-04f;
  p = p * c2 - 2.95459980854025e-03f;
  p = p * c2 - 1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * c2 - 2.13374055278905e-04f;
  q = q * c2 - 1.68282697438203e-03f;
  q = q * c2 - 7.37332916720468e-03f;
  q = q * c2 - 1.42647390514189e-02f;
  return c * p / q;  // NaN stays NaN through the clamp's comparisons
}

// tanh in float, within 2 ulp of tanh: Cephes' odd polynomial below 0.625 in
// magnitude, 1 - 2 / (e^2|x| + 1) above it. Gradients take 1 - tanh^2, so
// results near +-1 must be as close as this.
inline float vector_tanh(float x) {
  const float magnitude = x < 0.0f ? -x : x;
  const float x2 = x * x;
  float p = -5.70498872745e-3f;
  p = p * x2 + 2.06390887954e-2f;
  p = p * x2 - 5.37397155531e-2f;
  p = p * x2 + 1.33314422036e-1f;
  p = p * x2 - 3.33332819422e-1f;
  const float small = p * x2 * x + x;
  const float large = 1.0f - 2.0f / (vector_exp(2.0f * magnitude) + 1.0f);
  return magnitude < 0.625f ? small : (x < 0.0f ? -large : large);  // NaN takes `large`, which is NaN
}

// Natural logarithm in float, within 1 ulp of the exact one: x = m 2^e, m in
// [sqrt(1/2), sqrt(2)), Cephes' degree-9 polynomial in m - 1 (exact, so
// results near x = 1 keep their relative precision), and e ln 2 added in two
// parts. Subnormals are scaled into the normal range first; 0 gives -inf,
// negatives and NaN give NaN, inf gives inf, as logf.
inline float vector_log(float x) {
  constexpr float kInfinity = __builtin_inff();
  const bool subnormal = x < 1.17549435e-38f;
  const int32_t bits = std::bit_cast<int32_t>(subnormal ? x * 8388608.0f : x);  // 2^23
  // bits' mantissa with the exponent of 0.5: m in [0.5, 1), x = m 2^e.
  const float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
  const bool low = m < 0.707106781186547524f;
  const float e = static_cast<float>(((bits >> 23) & 0xff) - 126 - (subnormal ? 23 : 0) - (low ? 1 : 0));
  const float r = low ? m + m - 1.0f : m - 1.0f;
  const float r2 = r * r;
  float p = 7.0376836292e-2f;
  p = p * r - 1.1514610310e-1f;
  p = p * r + 1.1676998740e-1f;
  p = p * r - 1.2420140846e-1f;
  p = p * r + 1.4249322787e-1f;
  p = p * r - 1.6668057665e-1f;
  p = p * r + 2.0000714765e-1f;
  p = p * r - 2.4999993993e-1f;
  p = p * r + 3.3333331174e-1f;
  const float y = ((p * r * r2 + e * -2.12194440e-4f) - 0.5f * r2 + r) + e * 0.693359375f;
  const float special = x == 0.0f ? -kInfinity : (x == kInfinity ? kInfinity : __builtin_nanf(""));
  return x > 0.0f && x < kInfinity ? y : special;
}

// exp, erf, tanh and log for the fast kernels: the vectorizable versions above
// for float, libm's for double.
inline float fast_exp(float x) { return vector_exp(x); }
inline double fast_exp(double x) { return std::exp(x); }
inline float fast_exp2(float x) { return vector_exp2(x); }
inline double fast_exp2(double x) { return std::exp2(x); }
inline float fast_erf(float x) { return vector_erf(x); }
inline double fast_erf(double x) { return std::erf(x); }
inline float fast_tanh(float x) { return vector_tanh(x); }
inline double fast_tanh(double x) { return std::tanh(x); }
inline float fast_log(float x) { return vector_log(x); }
inline double fast_log(double x) { return std::log(x); }

}  // namespace opgraph::kernels
