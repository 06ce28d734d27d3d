// One row of softmax or log_softmax (kernels/cpu/util/softmax_row.h) against
// the formula in double, with the row's log-sum-exp; and the bicubic weights
// (cubic.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/util/cubic.h"
#include "kernels/cpu/util/softmax_row.h"

namespace opgraph::kernels {
namespace {

TEST(SoftmaxRow, MatchesTheFormula) {
  for (int64_t n : {1, 2, 7, 33, 130}) {
    std::vector<float> x(n), y(n), z(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 37) % 11) * 0.7f - 3.0f;
    double sum = 0.0;
    for (float v : x) sum += std::exp(static_cast<double>(v));
    const double lse = softmax_row(SoftmaxKind::Softmax, x.data(), y.data(), n);
    EXPECT_NEAR(lse, std::log(sum), 1e-5) << n;
    EXPECT_EQ(softmax_row(SoftmaxKind::LogSoftmax, x.data(), z.data(), n), lse);
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], std::exp(x[i]) / sum, 1e-6) << n << " " << i;
      EXPECT_NEAR(z[i], x[i] - std::log(sum), 1e-5) << n << " " << i;
      total += y[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(SoftmaxRow, LargeValuesDoNotOverflow) {
  const std::vector<double> x{1000.0, 1000.0};
  std::vector<double> y(2);
  EXPECT_NEAR(softmax_row(SoftmaxKind::Softmax, x.data(), y.data(), 2), 1000.0 + std::log(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(y[0], 0.5);
  EXPECT_DOUBLE_EQ(y[1], 0.5);
  // Log-probabilities stay finite where probabilities underflow.
  const std::vector<float> w{0.0f, -200.0f};
  std::vector<float> z(2);
  softmax_row(SoftmaxKind::LogSoftmax, w.data(), z.data(), 2);
  EXPECT_NEAR(z[1], -200.0f, 1e-4f);
}

TEST(CubicWeights, SumToOneAndInterpolateAtZero) {
  const auto at_zero = cubic_weights(0.0);
  EXPECT_EQ(at_zero[0], 0.0);
  EXPECT_EQ(at_zero[1], 1.0);
  EXPECT_EQ(at_zero[2], 0.0);
  EXPECT_EQ(at_zero[3], 0.0);
  for (double t : {0.1, 0.25, 0.5, 0.9}) {
    const auto w = cubic_weights(t);
    EXPECT_NEAR(w[0] + w[1] + w[2] + w[3], 1.0, 1e-12) << t;
  }
  // Symmetric about one half; at t = 1/2, A = -0.75 gives -3/32 and 19/32.
  const auto half = cubic_weights(0.5f);
  EXPECT_FLOAT_EQ(half[0], -0.09375f);
  EXPECT_FLOAT_EQ(half[1], 0.59375f);
  EXPECT_FLOAT_EQ(half[2], half[1]);
  EXPECT_FLOAT_EQ(half[3], half[0]);
}

}  // namespace
}  // namespace opgraph::kernels
