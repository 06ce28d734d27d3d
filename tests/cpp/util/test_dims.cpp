// Dim arithmetic (kernels/cpu/util/dims.h): dims wrapped into range as ATen
// wraps them, and element counts.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/util/dims.h"

namespace opgraph::kernels {
namespace {

TEST(WrapDim, NegativeDimsCountFromTheEnd) {
  EXPECT_EQ(wrap_dim(0, 3, "dim"), 0);
  EXPECT_EQ(wrap_dim(2, 3, "dim"), 2);
  EXPECT_EQ(wrap_dim(-1, 3, "dim"), 2);
  EXPECT_EQ(wrap_dim(-3, 3, "dim"), 0);
}

TEST(WrapDim, AScalarCountsAsRankOne) {
  EXPECT_EQ(wrap_dim(0, 0, "dim"), 0);
  EXPECT_EQ(wrap_dim(-1, 0, "dim"), 0);
  EXPECT_THROW(wrap_dim(1, 0, "dim"), Error);
}

TEST(WrapDim, OutOfRangeNamesTheArgumentAndTheRange) {
  EXPECT_THROW(wrap_dim(3, 3, "dim"), Error);
  EXPECT_THROW(wrap_dim(-4, 3, "dim"), Error);
  try {
    wrap_dim(5, 2, "axis");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("axis: expected a dim in [-2, 1]"), std::string::npos) << e.what();
  }
}

TEST(Product, MultipliesExtentsAndIsOneForNone) {
  EXPECT_EQ(product(std::vector<int64_t>{}), 1);
  EXPECT_EQ(product(std::vector<int64_t>{2, 3, 4}), 24);
  EXPECT_EQ(product(std::vector<int64_t>{5, 0, 7}), 0);
}

}  // namespace
}  // namespace opgraph::kernels
