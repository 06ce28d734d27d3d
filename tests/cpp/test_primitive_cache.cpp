// The bounded, thread-safe cache the oneDNN kernels keep their primitives in.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kernels/cpu/onednn/primitive_cache.h"

namespace opgraph::kernels {
namespace {

TEST(PrimitiveCacheTest, BuildsOncePerKey) {
  PrimitiveCache<int> cache(4);
  int builds = 0;
  auto build = [&] { return ++builds * 10; };
  EXPECT_EQ(*cache.get({1, 2}, build), 10);
  EXPECT_EQ(*cache.get({1, 2}, build), 10);
  EXPECT_EQ(*cache.get({2, 1}, build), 20);
  EXPECT_EQ(*cache.get({1, 2, 0}, build), 30);  // keys of different lengths differ
  EXPECT_EQ(builds, 3);
}

TEST(PrimitiveCacheTest, EvictsTheLeastRecentlyUsed) {
  PrimitiveCache<int> cache(2);
  int builds = 0;
  auto build = [&] { return ++builds; };
  cache.get({1}, build);
  cache.get({2}, build);
  cache.get({1}, build);  // {2} is now the least recently used
  cache.get({3}, build);  // evicts {2}
  EXPECT_EQ(builds, 3);
  cache.get({1}, build);
  cache.get({3}, build);
  EXPECT_EQ(builds, 3);
  EXPECT_EQ(*cache.get({2}, build), 4);  // built again
}

TEST(PrimitiveCacheTest, EvictedValuesStayAliveForTheirHolders) {
  PrimitiveCache<std::vector<int>> cache(1);
  const auto held = cache.get({1}, [] { return std::vector<int>{7, 8}; });
  cache.get({2}, [] { return std::vector<int>{}; });
  EXPECT_EQ(*held, (std::vector<int>{7, 8}));
}

TEST(PrimitiveCacheTest, ConcurrentCallersShareValues) {
  PrimitiveCache<int64_t> cache(8);
  std::atomic<int> builds{0};
  std::vector<std::thread> threads;
  std::atomic<bool> wrong{false};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const int64_t key = (t + i) % 12;  // more keys than room: hits, misses and evictions
        const auto value = cache.get({key}, [&] {
          ++builds;
          return key * key;
        });
        if (*value != key * key) wrong = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(wrong);
  EXPECT_GE(builds, 12);
}

}  // namespace
}  // namespace opgraph::kernels
