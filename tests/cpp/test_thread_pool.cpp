// The intra-op thread pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph {
namespace {

using Range = std::pair<int64_t, int64_t>;

// Runs parallel_for and returns the chunks it ran, sorted.
std::vector<Range> chunks_of(ThreadPool& pool, int64_t begin, int64_t end, int64_t grain) {
  std::mutex mutex;
  std::vector<Range> ranges;
  pool.parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
    std::lock_guard<std::mutex> lock(mutex);
    ranges.emplace_back(lo, hi);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

struct Split {
  int64_t begin, end, grain;
  size_t expected_chunks;

  friend void PrintTo(const Split& s, std::ostream* os) {
    *os << "[" << s.begin << ", " << s.end << ") grain " << s.grain;
  }
};

class ParallelForTest : public ::testing::TestWithParam<Split> {};

TEST_P(ParallelForTest, CoversRangeOnceWithChunksOfAtLeastGrain) {
  const Split& s = GetParam();
  const int64_t min_chunk = std::min(std::max<int64_t>(s.grain, 1), s.end - s.begin);
  ThreadPool pool(4);
  std::vector<Range> ranges = chunks_of(pool, s.begin, s.end, s.grain);
  ASSERT_EQ(ranges.size(), s.expected_chunks);
  EXPECT_EQ(ranges.front().first, s.begin);
  EXPECT_EQ(ranges.back().second, s.end);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_GE(ranges[i].second - ranges[i].first, min_chunk) << "chunk " << i;
    if (i > 0) {
      EXPECT_EQ(ranges[i].first, ranges[i - 1].second) << "chunk " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Splits, ParallelForTest,
                         ::testing::Values(Split{0, 100, 1, 4}, Split{3, 103, 10, 4}, Split{0, 7, 2, 3},
                                           Split{-50, 50, 30, 3}, Split{0, 39, 10, 3}, Split{0, 1000, 0, 4},
                                           Split{0, 5, 10, 1}, Split{0, 1, 1, 1}));

TEST(ThreadPoolTest, EachIndexRunsExactlyOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(10007);
  pool.parallel_for(0, static_cast<int64_t>(hits.size()), 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) ++hits[i];
  });
  EXPECT_TRUE(std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h == 1; }));
}

TEST(ThreadPoolTest, EmptyRangeRunsNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.parallel_for(5, 5, 1, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(5, 3, 1, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ThreadPoolTest, NumThreads) {
  EXPECT_EQ(ThreadPool(1).num_threads(), 1);
  EXPECT_EQ(ThreadPool(3).num_threads(), 3);
  EXPECT_THROW(ThreadPool(0), Error);
  EXPECT_THROW(ThreadPool(-2), Error);
}

TEST(ThreadPoolTest, SmallRangeRunsInlineOnCaller) {
  ThreadPool pool(4);
  std::vector<std::pair<Range, std::thread::id>> calls;
  pool.parallel_for(0, 5, 10, [&](int64_t lo, int64_t hi) { calls.push_back({{lo, hi}, std::this_thread::get_id()}); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].first, (Range{0, 5}));
  EXPECT_EQ(calls[0].second, std::this_thread::get_id());
}

TEST(ThreadPoolTest, SingleThreadPoolRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(chunks_of(pool, 0, 1000, 1), (std::vector<Range>{{0, 1000}}));
}

// Every chunk waits until all chunks have started, which only finishes if
// they run at the same time.
TEST(ThreadPoolTest, ChunksRunConcurrently) {
  ThreadPool pool(4);
  std::atomic<int> started{0};
  std::atomic<bool> all_met{true};
  pool.parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started < 4) {
      if (std::chrono::steady_clock::now() > deadline) {
        all_met = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  EXPECT_TRUE(all_met);
}

TEST(ThreadPoolTest, ExceptionRethrownAfterAllChunksFinish) {
  ThreadPool pool(4);
  std::atomic<int> finished{0};
  auto task = [&](int64_t lo, int64_t) {
    if (lo == 0) throw Error("chunk 0 failed");  // the caller's own chunk
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ++finished;
  };
  try {
    pool.parallel_for(0, 4, 1, task);
    FAIL() << "expected the chunk's exception";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "chunk 0 failed");
  }
  EXPECT_EQ(finished.load(), 3);

  // The pool stays usable, and a throwing worker chunk is reported too.
  EXPECT_EQ(chunks_of(pool, 0, 8, 2).size(), 4u);
  EXPECT_THROW(pool.parallel_for(0, 4, 1,
                                 [](int64_t lo, int64_t) {
                                   if (lo == 3) throw std::runtime_error("worker failed");
                                 }),
               std::runtime_error);
}

TEST(ThreadPoolTest, NestedCallRunsInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> total{0};
  std::atomic<int> inline_calls{0};
  std::atomic<int> inner_calls{0};
  pool.parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    const auto outer_thread = std::this_thread::get_id();
    pool.parallel_for(0, 100, 1, [&](int64_t lo, int64_t hi) {
      ++inner_calls;
      if (std::this_thread::get_id() == outer_thread && lo == 0 && hi == 100) ++inline_calls;
      total += hi - lo;
    });
  });
  EXPECT_EQ(total.load(), 400);
  EXPECT_EQ(inner_calls.load(), 4);
  EXPECT_EQ(inline_calls.load(), 4);
}

TEST(ThreadPoolTest, ConcurrentCallersBothComplete) {
  ThreadPool pool(4);
  auto sum_many_times = [&pool](int64_t n, int64_t& result) {
    for (int round = 0; round < 50; ++round) {
      std::atomic<int64_t> sum{0};
      pool.parallel_for(0, n, 100, [&](int64_t lo, int64_t hi) {
        int64_t local = 0;
        for (int64_t i = lo; i < hi; ++i) local += i;
        sum += local;
      });
      result = sum;
      if (result != n * (n - 1) / 2) return;
    }
  };
  int64_t a = 0, b = 0;
  std::thread first(sum_many_times, 10000, std::ref(a));
  std::thread second(sum_many_times, 20001, std::ref(b));
  first.join();
  second.join();
  EXPECT_EQ(a, int64_t{10000} * 9999 / 2);
  EXPECT_EQ(b, int64_t{20001} * 20000 / 2);
}

TEST(ThreadPoolTest, GlobalNumThreads) {
  const int original = get_num_threads();
  EXPECT_GE(original, 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  EXPECT_EQ(global_thread_pool().num_threads(), 3);
  EXPECT_EQ(chunks_of(global_thread_pool(), 0, 30, 1).size(), 3u);
  EXPECT_THROW(set_num_threads(0), Error);
  EXPECT_THROW(set_num_threads(-1), Error);
  EXPECT_EQ(get_num_threads(), 3);
  set_num_threads(1);
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(original);
  EXPECT_EQ(get_num_threads(), original);
}

}  // namespace
}  // namespace opgraph
