// The vectorizable float math (kernels/cpu/util/vec_math.h) against the C
// library's: each function within the ulps its comment promises over its
// range, and the special values (0, infinities, NaN, the ends of the range)
// as the header says.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "kernels/cpu/util/vec_math.h"

namespace opgraph::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Distance in units in the last place between two finite floats of any sign.
int64_t ulps(float a, float b) {
  auto ordered = [](float x) {
    const int32_t bits = std::bit_cast<int32_t>(x);
    return bits < 0 ? int64_t{std::numeric_limits<int32_t>::min()} - bits : int64_t{bits};
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// The largest distance from `reference` over `count` evenly spaced x in [lo, hi].
struct Worst {
  int64_t ulps = 0;
  float at = 0.0f;
};

Worst worst_ulps(float (*fn)(float), const std::function<float(float)>& reference, float lo, float hi,
                 int count = 200001) {
  Worst worst;
  for (int i = 0; i < count; ++i) {
    const float x = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(count - 1);
    const int64_t d = ulps(fn(x), reference(x));
    if (d > worst.ulps) worst = {d, x};
  }
  return worst;
}

TEST(VectorExp, WithinTwoUlpOfExpf) {
  // Results stay normal down to about -87.3.
  const Worst worst = worst_ulps(vector_exp, [](float x) { return std::exp(x); }, -87.0f, 88.3f);
  EXPECT_LE(worst.ulps, 2) << "at " << worst.at;
  EXPECT_EQ(vector_exp(0.0f), 1.0f);
}

TEST(VectorExp, SaturatesAtTheEnds) {
  EXPECT_EQ(vector_exp(89.0f), kInf);
  EXPECT_EQ(vector_exp(88.5f), kInf);  // before expf does
  EXPECT_TRUE(std::isfinite(std::exp(88.5f)));
  EXPECT_EQ(vector_exp(kInf), kInf);
  EXPECT_EQ(vector_exp(-100.0f), 0.0f);
  EXPECT_EQ(vector_exp(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(vector_exp(std::nanf(""))));
}

TEST(VectorExp2, WithinTwoUlpOfExp2f) {
  // Up to 127.5, where n rounds to 128 (see SaturatesAtTheEnds). The bound
  // the header states is relative, 2.5e-7: up to 3 ulp where the mantissa is
  // small (2 ulp where it is large, as the header's "(2 ulp)" reads it).
  const Worst worst = worst_ulps(vector_exp2, [](float x) { return std::exp2(x); }, -126.0f, 127.49f);
  EXPECT_LE(worst.ulps, 3) << "at " << worst.at;
  double relative = 0.0;
  for (int i = 0; i <= 200000; ++i) {
    const float x = -126.0f + 253.49f * static_cast<float>(i) / 200000.0f;
    const double exact = std::exp2(static_cast<double>(x));
    relative = std::max(relative, std::abs(vector_exp2(x) - exact) / exact);
  }
  EXPECT_LE(relative, 2.5e-7);
  // Whole exponents are exact powers of two.
  for (int n = -126; n <= 127; ++n) EXPECT_EQ(vector_exp2(static_cast<float>(n)), std::ldexp(1.0f, n)) << n;
}

TEST(VectorExp2, SaturatesAtTheEnds) {
  // Past 127.5 the exponent rounds to 128 and the result reads as inf, a
  // little before exp2f overflows (at 128), as vector_exp does before expf.
  EXPECT_TRUE(std::isfinite(std::exp2(127.75f)));
  EXPECT_EQ(vector_exp2(127.75f), kInf);
  EXPECT_EQ(vector_exp2(128.0f), kInf);
  EXPECT_EQ(vector_exp2(1000.0f), kInf);
  EXPECT_EQ(vector_exp2(-127.0f), 0.0f);
  EXPECT_EQ(vector_exp2(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(vector_exp2(std::nanf(""))));
}

TEST(VectorErf, WithinEightUlpOfErf) {
  // Away from 0, where one ulp of erf is tiny next to float's rounding of x.
  Worst worst = worst_ulps(vector_erf, [](float x) { return std::erf(x); }, -5.0f, -1e-3f);
  EXPECT_LE(worst.ulps, 8) << "at " << worst.at;
  worst = worst_ulps(vector_erf, [](float x) { return std::erf(x); }, 1e-3f, 5.0f);
  EXPECT_LE(worst.ulps, 8) << "at " << worst.at;
}

TEST(VectorErf, OddAndBoundedAndNaN) {
  EXPECT_EQ(vector_erf(0.0f), 0.0f);
  for (float x : {0.1f, 0.7f, 1.3f, 3.9f}) EXPECT_EQ(vector_erf(-x), -vector_erf(x)) << x;
  EXPECT_NEAR(vector_erf(10.0f), 1.0f, 1e-6f);
  EXPECT_NEAR(vector_erf(-kInf), -1.0f, 1e-6f);
  EXPECT_TRUE(std::isnan(vector_erf(std::nanf(""))));
}

TEST(VectorTanh, WithinTwoUlpOfTanh) {
  // Both branches and the switch at 0.625; results near +-1 too.
  Worst worst = worst_ulps(vector_tanh, [](float x) { return std::tanh(x); }, -12.0f, -1e-4f);
  EXPECT_LE(worst.ulps, 2) << "at " << worst.at;
  worst = worst_ulps(vector_tanh, [](float x) { return std::tanh(x); }, 1e-4f, 12.0f);
  EXPECT_LE(worst.ulps, 2) << "at " << worst.at;
  worst = worst_ulps(vector_tanh, [](float x) { return std::tanh(x); }, 0.6f, 0.65f, 1001);
  EXPECT_LE(worst.ulps, 2) << "at " << worst.at;
}

TEST(VectorTanh, SpecialValues) {
  EXPECT_EQ(vector_tanh(0.0f), 0.0f);
  EXPECT_EQ(vector_tanh(kInf), 1.0f);
  EXPECT_EQ(vector_tanh(-kInf), -1.0f);
  EXPECT_EQ(vector_tanh(100.0f), 1.0f);
  EXPECT_TRUE(std::isnan(vector_tanh(std::nanf(""))));
}

TEST(VectorLog, WithinOneUlpOfLogf) {
  // Near 1, where relative precision matters; over the normal range; subnormals.
  Worst worst = worst_ulps(vector_log, [](float x) { return std::log(x); }, 0.5f, 2.0f);
  EXPECT_LE(worst.ulps, 1) << "at " << worst.at;
  worst = worst_ulps(vector_log, [](float x) { return std::log(x); }, 2.0f, 3e38f);
  EXPECT_LE(worst.ulps, 1) << "at " << worst.at;
  worst = worst_ulps(vector_log, [](float x) { return std::log(x); }, 1e-38f, 1e-30f);
  EXPECT_LE(worst.ulps, 1) << "at " << worst.at;
  for (float x : {std::numeric_limits<float>::denorm_min(), 1e-45f, 3e-42f, 1e-39f, std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::max()}) {
    EXPECT_LE(ulps(vector_log(x), std::log(x)), 1) << x;
  }
}

TEST(VectorLog, SpecialValuesAsLogf) {
  EXPECT_EQ(vector_log(1.0f), 0.0f);
  EXPECT_EQ(vector_log(0.0f), -kInf);
  EXPECT_EQ(vector_log(-0.0f), -kInf);
  EXPECT_EQ(vector_log(kInf), kInf);
  EXPECT_TRUE(std::isnan(vector_log(-1.0f)));
  EXPECT_TRUE(std::isnan(vector_log(-kInf)));
  EXPECT_TRUE(std::isnan(vector_log(std::nanf(""))));
}

TEST(FastMath, DoubleIsTheCLibrarys) {
  for (double x : {-3.5, -0.25, 0.0, 0.5, 2.0, 40.0}) {
    EXPECT_EQ(fast_exp(x), std::exp(x));
    EXPECT_EQ(fast_exp2(x), std::exp2(x));
    EXPECT_EQ(fast_erf(x), std::erf(x));
    EXPECT_EQ(fast_tanh(x), std::tanh(x));
    if (x > 0) {
      EXPECT_EQ(fast_log(x), std::log(x));
    }
  }
}

TEST(FastMath, FloatIsTheVectorOnes) {
  for (float x : {-3.5f, -0.25f, 0.5f, 2.0f, 40.0f}) {
    EXPECT_EQ(fast_exp(x), vector_exp(x));
    EXPECT_EQ(fast_exp2(x), vector_exp2(x));
    EXPECT_EQ(fast_erf(x), vector_erf(x));
    EXPECT_EQ(fast_tanh(x), vector_tanh(x));
    if (x > 0) {
      EXPECT_EQ(fast_log(x), vector_log(x));
    }
  }
}

}  // namespace
}  // namespace opgraph::kernels
