// Where select and slice views lie in a contiguous tensor (util/view_layout.h).
#include <gtest/gtest.h>

#include "kernels/cpu/util/view_layout.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

using testing::error_of;

TEST(ViewLayout, SelectDropsTheDimAtItsOffset) {
  const Layout l = select_layout({DType::Float32, {2, 3, 4}}, 1, -1);  // self[:, 2]
  EXPECT_EQ(l.shape, (Shape{2, 4}));
  EXPECT_EQ(l.strides, (Strides{12, 1}));
  EXPECT_EQ(l.offset, 8);
  EXPECT_NE(error_of([] { select_layout({DType::Float32, {2, 3}}, 1, 3); }).find("3"), std::string::npos);
}

TEST(ViewLayout, SliceClampsAndSteps) {
  Layout l = slice_layout({DType::Float32, {10, 2}}, 0, 1, 100, 3);  // rows 1, 4, 7
  EXPECT_EQ(l.shape, (Shape{3, 2}));
  EXPECT_EQ(l.strides, (Strides{6, 1}));
  EXPECT_EQ(l.offset, 2);
  l = slice_layout({DType::Float32, {10}}, 0, -3, std::nullopt, 1);  // the last 3
  EXPECT_EQ(l.shape, (Shape{3}));
  EXPECT_EQ(l.offset, 7);
  l = slice_layout({DType::Float32, {10}}, 0, 8, 2, 1);  // empty
  EXPECT_EQ(l.shape, (Shape{0}));
}

}  // namespace
}  // namespace opgraph::kernels
