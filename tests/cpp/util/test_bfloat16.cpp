// The CPU kernels' bfloat16 (kernels/cpu/util/bfloat16.h): widened exactly,
// narrowed to nearest with ties to even as PyTorch rounds, NaN kept; and
// dispatch_floating, which takes it where a kernel computes bfloat16.
#include "kernels/cpu/util/bfloat16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/define.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

using opgraph::testing::error_of;

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }

TEST(BFloat16Test, WidensExactly) {
  // bfloat16 values, the largest finite one among them.
  for (float value :
       {0.0f, -0.0f, 1.0f, -2.5f, 0.15625f, from_bits(0x7f7f0000), std::numeric_limits<float>::infinity()}) {
    EXPECT_EQ(float(BFloat16(value)), value);
  }
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-0.0f).bits, 0x8000);
}

TEST(BFloat16Test, RoundsToNearestTiesToEven) {
  EXPECT_EQ(BFloat16(from_bits(0x3f807fff)).bits, 0x3f80);  // below half way: down
  EXPECT_EQ(BFloat16(from_bits(0x3f808001)).bits, 0x3f81);  // above: up
  EXPECT_EQ(BFloat16(from_bits(0x3f808000)).bits, 0x3f80);  // half way to an odd one: stays even
  EXPECT_EQ(BFloat16(from_bits(0x3f818000)).bits, 0x3f82);  // half way from an odd one: up to even
  EXPECT_EQ(BFloat16(from_bits(0x7f7fffff)).bits, 0x7f80);  // float32's largest rounds to infinity, as in PyTorch
}

TEST(BFloat16Test, KeepsNaN) {
  EXPECT_TRUE(std::isnan(float(BFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(float(BFloat16(from_bits(0x7f800001)))));  // a NaN whose payload is in the low half
}

TEST(DispatchFloating, TakesBFloat16WhereTheKernelDoes) {
  bool took = false;
  dispatch_floating<BFloat16>(DType::BFloat16, "a",
                              [&](auto zero) { took = std::is_same_v<decltype(zero), BFloat16>; });
  EXPECT_TRUE(took);
  const std::string refused = error_of([] { dispatch_floating(DType::BFloat16, "a", [](auto) {}); });
  EXPECT_NE(refused.find("a: expected float32 or float64, got bfloat16"), std::string::npos) << refused;
  const std::string float16 = error_of([] { dispatch_floating<BFloat16>(DType::Float16, "b", [](auto) {}); });
  EXPECT_NE(float16.find("b: expected float32, float64 or bfloat16, got float16"), std::string::npos) << float16;
}

}  // namespace
}  // namespace opgraph::kernels
