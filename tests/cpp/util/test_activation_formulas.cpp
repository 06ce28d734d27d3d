// The activations' formulas (util/activation_formulas.h) against their
// definitions in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/util/activation_formulas.h"

namespace opgraph::kernels {
namespace {

TEST(ActivationFormulas, MatchTheirDefinitions) {
  for (double x = -6; x <= 6; x += 0.25) {
    const auto f = static_cast<float>(x);
    EXPECT_NEAR(gelu_erf(f), x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))), 1e-5) << x;
    EXPECT_NEAR(gelu_tanh(f), 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))), 1e-5) << x;
    EXPECT_NEAR(sigmoid(f), 1 / (1 + std::exp(-x)), 1e-6) << x;
    EXPECT_NEAR(silu(f), x / (1 + std::exp(-x)), 1e-5) << x;
    EXPECT_EQ(relu(f), x < 0 ? 0.0f : f);
  }
}

TEST(ActivationFormulas, NaNPassesAndClampTakesTorchsOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(relu(nan)));
  EXPECT_TRUE(std::isnan(clamp(nan, 0.0f, 1.0f)));
  EXPECT_EQ(clamp(5.0f, 2.0f, 1.0f), 1.0f);  // high wins when low > high
  EXPECT_EQ(clamp(-5.0f, -1.0f, 1.0f), -1.0f);
}

TEST(ActivationFormulas, ActivateMapsEveryElement) {
  std::vector<float> x = {-2, -0.5, 0, 0.5, 2};
  activate(Activation::ReLU, x.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(x, (std::vector<float>{0, 0, 0, 0.5, 2}));
  std::vector<float> y = {-1, 1};
  activate(Activation::None, y.data(), 2);
  EXPECT_EQ(y, (std::vector<float>{-1, 1}));
}

}  // namespace
}  // namespace opgraph::kernels
