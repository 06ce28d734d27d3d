// ATen's output_mask of backward ops (util/output_mask.h).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/util/output_mask.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

TEST(OutputMask, ReadsThreeFlagsAndEmptiesWhatIsLeftOut) {
  const std::vector<int64_t> mask = {1, 0, 1};
  EXPECT_EQ(output_mask(mask), (std::array<bool, 3>{true, false, true}));
  const TensorMeta meta{DType::Float32, {4, 5}};
  EXPECT_EQ(unless_masked(true, meta), meta);
  EXPECT_EQ(unless_masked(false, meta), (TensorMeta{DType::Float32, {0}}));
  const std::vector<int64_t> two = {1, 1};
  EXPECT_NE(testing::error_of([&] { output_mask(two); }).find("output_mask: expected 3 values, got 2"),
            std::string::npos);
}

}  // namespace
}  // namespace opgraph::kernels
