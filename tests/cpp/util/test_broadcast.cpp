// Broadcasting for the elementwise kernels (kernels/cpu/util/broadcast.h):
// result shapes as NumPy and PyTorch give them, and the strides that read an
// operand as if expanded.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/util/broadcast.h"

namespace opgraph::kernels {
namespace {

using Extents = std::vector<int64_t>;

TEST(BroadcastShapes, AlignsOnTheRightAndStretchesOnes) {
  EXPECT_EQ(broadcast_shapes(Extents{2, 3}, Extents{3}), Shape({2, 3}));
  EXPECT_EQ(broadcast_shapes(Extents{4, 1, 5}, Extents{3, 1}), Shape({4, 3, 5}));
  EXPECT_EQ(broadcast_shapes(Extents{}, Extents{2, 2}), Shape({2, 2}));
  EXPECT_EQ(broadcast_shapes(Extents{0, 1}, Extents{1, 4}), Shape({0, 4}));
}

TEST(BroadcastShapes, RefusesExtentsThatDifferAndAreNotOne) {
  EXPECT_THROW(broadcast_shapes(Extents{2, 3}, Extents{4}), Error);
  EXPECT_THROW(broadcast_shapes(Extents{2, 1}, Extents{3, 1}), Error);
}

TEST(BroadcastStrides, ZeroAlongBroadcastDims) {
  EXPECT_EQ(broadcast_strides(Extents{3}, Extents{2, 3}), Strides({0, 1}));
  EXPECT_EQ(broadcast_strides(Extents{4, 1}, Extents{2, 4, 5}), Strides({0, 1, 0}));
  EXPECT_EQ(broadcast_strides(Extents{2, 3}, Extents{2, 3}), Strides({3, 1}));
}

TEST(StridedOffset, WalksRowMajorUnderTheStrides) {
  const Extents shape{2, 3};
  // A [3] row read as [2, 3]: every row reads the same three elements.
  const Strides row = broadcast_strides(Extents{3}, shape);
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i < 6; ++i) offsets.push_back(strided_offset(i, shape, row));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  // A transposed [3, 2] matrix read as [2, 3].
  const Strides transposed{1, 2};
  offsets.clear();
  for (int64_t i = 0; i < 6; ++i) offsets.push_back(strided_offset(i, shape, transposed));
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 2, 4, 1, 3, 5}));
}

}  // namespace
}  // namespace opgraph::kernels
