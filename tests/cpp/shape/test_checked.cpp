// Overflow-checked size arithmetic (kernels/shape/checked.h): sizes from a
// graph file that overflow int64 are an error naming the argument.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

TEST(Checked, InRangeArithmeticIsPlain) {
  EXPECT_EQ(checked_add(2, 3, "size"), 5);
  EXPECT_EQ(checked_add(-7, 3, "size"), -4);
  EXPECT_EQ(checked_mul(6, 7, "size"), 42);
  EXPECT_EQ(checked_mul(kMax, 1, "size"), kMax);
  EXPECT_EQ(checked_add(kMax, 0, "size"), kMax);
}

TEST(Checked, OverflowNamesTheArgument) {
  EXPECT_THROW(checked_add(kMax, 1, "padding"), Error);
  EXPECT_THROW(checked_mul(kMax / 2 + 1, 2, "stride"), Error);
  try {
    checked_mul(int64_t{1} << 40, int64_t{1} << 40, "dilation");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dilation: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opgraph::kernels
