// Rows for the reducing kernels (kernels/cpu/util/rows.h): the reduced dims
// moved last, a tensor seen around one dim, the column tiles of a reduction
// along a dim that is not the last, and the lane-wise sum and max.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <vector>

#include "kernels/cpu/util/rows.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

using Ints = std::vector<int64_t>;

TEST(DimsLastOrder, KeepsTheOthersInPlaceAndMovesTheDimsLast) {
  EXPECT_EQ(dims_last_order(4, Ints{1}), (Ints{0, 2, 3, 1}));
  EXPECT_EQ(dims_last_order(4, Ints{2, 0}), (Ints{1, 3, 2, 0}));
  EXPECT_EQ(dims_last_order(3, Ints{}), (Ints{0, 1, 2}));
  EXPECT_EQ(dims_last_order(2, Ints{0, 1}), (Ints{0, 1}));
  EXPECT_EQ(dims_last_order(0, Ints{}), Ints{});
}

TEST(IsIdentity, OnlyTheOrderZeroOneTwo) {
  EXPECT_TRUE(is_identity(Ints{}));
  EXPECT_TRUE(is_identity(Ints{0}));
  EXPECT_TRUE(is_identity(Ints{0, 1, 2}));
  EXPECT_FALSE(is_identity(Ints{1, 0}));
  EXPECT_FALSE(is_identity(Ints{0, 2, 1}));
  EXPECT_FALSE(is_identity(Ints{1}));
}

TEST(PermutedContiguous, TheIdentityIsTheTensorItself) {
  Tensor t = Tensor::empty({2, 3}, DType::Float32);
  EXPECT_EQ(permuted_contiguous(t, Ints{0, 1}).data_ptr<float>(), t.data_ptr<float>());
}

TEST(PermutedContiguous, OtherOrdersAreAContiguousCopy) {
  Tensor t = Tensor::empty({2, 3}, DType::Float32);
  float* x = t.data_ptr<float>();
  std::iota(x, x + 6, 0.0f);
  Tensor moved = permuted_contiguous(t, dims_last_order(2, Ints{0}));  // [3, 2]
  EXPECT_EQ(moved.shape(), Shape({3, 2}));
  EXPECT_TRUE(moved.is_contiguous());
  const float* y = moved.data_ptr<float>();
  EXPECT_EQ(std::vector<float>(y, y + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(LayoutAround, OuterSizeInner) {
  const Ints shape{2, 3, 4};
  auto expect = [&](int64_t dim, int64_t outer, int64_t size, int64_t inner) {
    const DimLayout layout = layout_around(shape, dim);
    EXPECT_EQ(layout.outer, outer) << dim;
    EXPECT_EQ(layout.size, size) << dim;
    EXPECT_EQ(layout.inner, inner) << dim;
  };
  expect(0, 1, 2, 12);
  expect(1, 2, 3, 4);
  expect(2, 6, 4, 1);
}

TEST(LayoutAround, AScalarIsOneOfOne) {
  const DimLayout layout = layout_around(Ints{}, 0);
  EXPECT_EQ(layout.outer, 1);
  EXPECT_EQ(layout.size, 1);
  EXPECT_EQ(layout.inner, 1);
}

TEST(LayoutAround, EmptyDims) {
  const DimLayout layout = layout_around(Ints{3, 0, 5}, 1);
  EXPECT_EQ(layout.outer, 3);
  EXPECT_EQ(layout.size, 0);
  EXPECT_EQ(layout.inner, 5);
}

class ColumnTiles : public ::testing::TestWithParam<int> {};

TEST_P(ColumnTiles, CoverEveryColumnOfEveryBlockOnce) {
  ThreadPool pool(GetParam());
  const KernelContext context{&pool};
  // inner: under one tile, exactly one, one and a bit, several and odd.
  for (int64_t inner : {2, 63, 64, 65, 130, 1000}) {
    // size large enough that the tiles split over the pool.
    const DimLayout layout{3, 700, inner};
    auto hits = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(layout.outer * inner));
    parallel_column_tiles(context, layout, [&](int64_t o, int64_t first, int64_t width) {
      EXPECT_GE(o, 0);
      EXPECT_LT(o, layout.outer);
      EXPECT_EQ(first % kColumnTile, 0);
      EXPECT_GE(width, 1);
      EXPECT_LE(width, kColumnTile);
      EXPECT_LE(first + width, inner);
      for (int64_t j = first; j < first + width; ++j) ++hits[o * inner + j];
    });
    for (int64_t i = 0; i < layout.outer * inner; ++i) ASSERT_EQ(hits[i], 1) << "inner " << inner << " at " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, ColumnTiles, ::testing::Values(1, 2, 3));

TEST(RowSum, EmptyIsZero) {
  const float* none = nullptr;
  EXPECT_EQ(row_sum(none, 0), 0.0);
}

TEST(RowSum, MatchesASequentialSumForEverySizeAroundTheLanes) {
  // 32 float lanes (128 bytes of float): sizes below, at and past multiples of it.
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 2.5f;
  for (int64_t n = 1; n <= 300; ++n) {
    const double expected = std::accumulate(x.begin(), x.begin() + n, 0.0);
    EXPECT_DOUBLE_EQ(row_sum(x.data(), n), expected) << n;
  }
}

TEST(RowSum, AccumulatesInDouble) {
  // 2^24 + 1 is not a float: a float accumulator would lose every 1.
  std::vector<float> x(1001, 1.0f);
  x[0] = 16777216.0f;
  EXPECT_EQ(row_sum(x.data(), 1001), 16777216.0 + 1000.0);
}

TEST(RowSum, IntegersToo) {
  const std::vector<int64_t> x{1, -2, 3, -4, 5};
  EXPECT_EQ(row_sum(x.data(), 5), 3.0);
}

TEST(RowMax, EmptyIsMinusInfinity) {
  const float* none = nullptr;
  EXPECT_EQ(row_max(none, 0), -std::numeric_limits<float>::infinity());
  const double* nothing = nullptr;
  EXPECT_EQ(row_max(nothing, 0), -std::numeric_limits<double>::infinity());
}

TEST(RowMax, FindsTheMaxWhereverItLies) {
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 100}) {
    for (int64_t at = 0; at < n; ++at) {
      std::vector<double> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = -static_cast<double>(i % 5) - 1.0;
      x[at] = 7.0;
      EXPECT_EQ(row_max(x.data(), n), 7.0) << n << " " << at;
    }
  }
}

TEST(RowMax, AllNegativeAndInfinities) {
  const std::vector<float> x{-3.0f, -1.5f, -2.0f};
  EXPECT_EQ(row_max(x.data(), 3), -1.5f);
  const std::vector<float> y{-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  EXPECT_EQ(row_max(y.data(), 2), std::numeric_limits<float>::infinity());
}

TEST(ReduceLanes, CombinesEveryMappedIndexOnce) {
  for (int64_t n : {0, 1, 7, 16, 17, 64, 129}) {
    // int64_t: 16 lanes.
    const int64_t count =
        reduce_lanes(n, int64_t{0}, [](int64_t) { return int64_t{1}; }, [](int64_t a, int64_t b) { return a + b; });
    EXPECT_EQ(count, n);
    const int64_t sum =
        reduce_lanes(n, int64_t{0}, [](int64_t i) { return i; }, [](int64_t a, int64_t b) { return a + b; });
    EXPECT_EQ(sum, n * (n - 1) / 2);
  }
}

}  // namespace
}  // namespace opgraph::kernels
