// Pooling geometry (kernels/shape/pool.h): output sizes as PyTorch gives
// them, windows clipped to the input and the divisors averages use.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/shape/pool.h"
#include "testing.h"

namespace opgraph::kernels::pool {
namespace {

using testing::error_of;
using V = std::vector<int64_t>;

TEST(PoolGeometry, OutputSizesAsPyTorch) {
  const V kernel{3}, stride{2}, padding{1}, dilation{1};
  // floor((5 + 2 - 3) / 2) + 1 = 3; ceil_mode gives 3 too (the last window starts inside).
  Pooling p = max_pooling({DType::Float32, {1, 2, 5, 5}}, {kernel, stride, padding, dilation, false}, 2);
  EXPECT_EQ(p.h.out, 3);
  EXPECT_EQ(p.w.out, 3);
  // 6 wide: floor((6 + 2 - 3) / 2) + 1 = 3, ceil gives 4.
  EXPECT_EQ(max_pooling({DType::Float32, {1, 6, 6}}, {kernel, stride, padding, dilation, true}, 2).w.out, 4);
  EXPECT_EQ(max_pooling({DType::Float32, {1, 6, 6}}, {kernel, stride, padding, dilation, false}, 2).w.out, 3);
}

TEST(PoolGeometry, WindowsAreClippedAndAveragesDivideAsAsked) {
  const V kernel{3}, stride{2}, padding{1};
  Pooling p = average_pooling({DType::Float32, {1, 1, 5}}, {kernel, stride, padding, false, true, std::nullopt}, 1);
  const Window first = window(p, 0, 0, 0);
  EXPECT_EQ(first.x0, 0);
  EXPECT_EQ(first.x1, 2);
  EXPECT_EQ(first.divisor, 3);  // counts the padded column
  p = average_pooling({DType::Float32, {1, 1, 5}}, {kernel, stride, padding, false, false, std::nullopt}, 1);
  EXPECT_EQ(window(p, 0, 0, 0).divisor, 2);
  p = average_pooling({DType::Float32, {1, 1, 5}}, {kernel, stride, padding, false, true, 7}, 1);
  EXPECT_EQ(window(p, 0, 0, 0).divisor, 7);
}

TEST(PoolGeometry, BadArgumentsNameThem) {
  const V one{1}, zero{0};
  EXPECT_NE(error_of([&] {
              max_pooling({DType::Float32, {1, 1, 4, 4}}, {V{2, 2, 2}, one, zero, one, false}, 2);
            }).find("kernel_size"),
            std::string::npos);
  EXPECT_NE(error_of([] { check_pooled_input({DType::Float32, {4, 4}}, 2); }).find("self: expected rank 3 or 4"),
            std::string::npos);
  EXPECT_NE(
      error_of([] { check_pooled_input({DType::Int64, {1, 4, 4}}, 2); }).find("self: expected float32 or float64"),
      std::string::npos);
}

}  // namespace
}  // namespace opgraph::kernels::pool
