// The pieces of define_elementwise (util/elementwise_map.h): which dtypes an
// op takes, the wrapping negation of integers, and bool-valued ops.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kernels/cpu/util/elementwise_map.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

struct FloatingOp {
  static constexpr std::array<const char*, 1> inputs = {"self"};
  template <typename T>
  T operator()(T x) const {
    return x;
  }
};

struct AnyOp {
  static constexpr Accepts accepts = Accepts::All;
  static constexpr std::array<const char*, 2> inputs = {"self", "other"};
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};

template <typename Op>
std::string dispatched(DType dtype) {
  std::string type;
  dispatch_accepted<Op>(dtype, "self", [&](auto zero) { type = typeid(zero).name(); });
  return type;
}

TEST(ElementwiseMap, DispatchesTheDtypesAnOpAccepts) {
  EXPECT_EQ(dispatched<FloatingOp>(DType::Float64), typeid(double).name());
  EXPECT_EQ(dispatched<AnyOp>(DType::Bool), typeid(bool).name());
  EXPECT_EQ(dispatched<AnyOp>(DType::Int32), typeid(int32_t).name());
  EXPECT_NE(testing::error_of([] { dispatched<FloatingOp>(DType::Int64); }).find("self: expected float32 or float64"),
            std::string::npos);
  EXPECT_NE(testing::error_of([] {
              dispatched<AnyOp>(DType::UInt8);
            }).find("self: expected float32, float64, int32, int64 or bool, got uint8"),
            std::string::npos);
}

TEST(ElementwiseMap, IntegerNegationWrapsAsInPyTorch) {
  EXPECT_EQ(wrapping_neg<int64_t>(5), -5);
  EXPECT_EQ(wrapping_neg(std::numeric_limits<int32_t>::min()), std::numeric_limits<int32_t>::min());
}

TEST(ElementwiseMap, KnowsWhichOpsGiveBools) {
  EXPECT_FALSE(gives_bool<FloatingOp>());
  EXPECT_TRUE(gives_bool<AnyOp>());
}

}  // namespace
}  // namespace opgraph::kernels
