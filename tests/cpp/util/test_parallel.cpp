// Splitting rows over the thread pool (kernels/cpu/util/parallel.h): every
// row runs exactly once, on the calling thread when the work is small or there
// is no pool, split over the pool's threads otherwise.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/cpu/util/parallel.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

// How many times parallel_rows ran each of `rows` rows, and in how many calls.
struct Coverage {
  std::vector<int> hits;
  int calls = 0;
};

Coverage cover(ThreadPool* pool, int64_t rows, int64_t cols) {
  const KernelContext context{pool};
  auto hits = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(rows > 0 ? rows : 1));
  std::atomic<int> calls{0};
  parallel_rows(context, rows, cols, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_LE(0, begin);
    EXPECT_LT(begin, end);
    EXPECT_LE(end, rows);
    for (int64_t i = begin; i < end; ++i) ++hits[i];
  });
  Coverage coverage;
  for (int64_t i = 0; i < rows; ++i) coverage.hits.push_back(hits[i]);
  coverage.calls = calls;
  return coverage;
}

class ParallelRows : public ::testing::TestWithParam<int> {};

TEST_P(ParallelRows, CoversEveryRowExactlyOnce) {
  ThreadPool pool(GetParam());
  // One row of kParallelElements columns is a grain of its own, so these
  // split as finely as the pool allows; 1, 2 and odd counts around the thread counts.
  for (int64_t rows : {1, 2, 3, 5, 7, 64, 101}) {
    const Coverage coverage = cover(&pool, rows, kParallelElements);
    EXPECT_EQ(coverage.hits, std::vector<int>(rows, 1)) << rows << " rows on " << GetParam() << " threads";
    EXPECT_GE(coverage.calls, 1);
    EXPECT_LE(coverage.calls, GetParam());
  }
}

TEST_P(ParallelRows, SmallWorkRunsAsOneCall) {
  ThreadPool pool(GetParam());
  // 1000 rows of 8 elements: under kParallelElements in all.
  const Coverage coverage = cover(&pool, 1000, 8);
  EXPECT_EQ(coverage.hits, std::vector<int>(1000, 1));
  EXPECT_EQ(coverage.calls, 1);
}

INSTANTIATE_TEST_SUITE_P(Threads, ParallelRows, ::testing::Values(1, 2, 3));

TEST(ParallelRowsWithoutPool, RunsInlineAsOneCall) {
  const Coverage coverage = cover(nullptr, 77, kParallelElements);
  EXPECT_EQ(coverage.hits, std::vector<int>(77, 1));
  EXPECT_EQ(coverage.calls, 1);
}

TEST(ParallelRowsEdges, NoRowsMeansNoCall) {
  ThreadPool pool(2);
  EXPECT_EQ(cover(nullptr, 0, 4).calls, 0);
  EXPECT_EQ(cover(&pool, 0, kParallelElements).calls, 0);
}

TEST(ParallelRowsEdges, ZeroColumnsCountAsOne) {
  // cols = 0 must not divide by zero: the grain is then kParallelElements rows.
  const Coverage coverage = cover(nullptr, 5, 0);
  EXPECT_EQ(coverage.hits, std::vector<int>(5, 1));
  EXPECT_EQ(coverage.calls, 1);
}

}  // namespace
}  // namespace opgraph::kernels
