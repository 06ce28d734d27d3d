// The memory planner and the verifier that proves its plans safe.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "opgraph/runtime/memory_plan.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

// The most bytes alive at any one step: no plan can use less.
size_t live_bytes_bound(const std::vector<BufferRequest>& requests) {
  size_t last_step = 0, bound = 0;
  for (const BufferRequest& r : requests) last_step = std::max(last_step, r.last_use);
  for (size_t step = 0; step <= last_step; ++step) {
    size_t live = 0;
    for (const BufferRequest& r : requests) {
      const size_t reserved = (r.bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
      if (r.first_use <= step && step <= r.last_use) live += reserved;
    }
    bound = std::max(bound, live);
  }
  return bound;
}

TEST(MemoryPlan, AChainNeedsTwoBuffers) {
  // Node i reads buffer i-1 and writes buffer i.
  std::vector<BufferRequest> chain;
  for (size_t i = 0; i < 10; ++i) chain.push_back({1000, i, i + 1});
  const MemoryPlan plan = plan_memory(chain);
  verify_memory_plan(chain, plan);
  EXPECT_EQ(plan.naive_bytes, 10 * 1024u);
  EXPECT_EQ(plan.peak_bytes, 2 * 1024u);
  EXPECT_LT(plan.peak_bytes, plan.naive_bytes);
  for (size_t i = 1; i < chain.size(); ++i) EXPECT_NE(plan.offsets[i], plan.offsets[i - 1]);
}

TEST(MemoryPlan, OffsetsAndSizesAreAligned) {
  const std::vector<BufferRequest> requests = {{1, 0, 2}, {65, 1, 2}, {3, 2, 3}};
  const MemoryPlan plan = plan_memory(requests);
  verify_memory_plan(requests, plan);
  for (size_t offset : plan.offsets) EXPECT_EQ(offset % kArenaAlignment, 0u);
  EXPECT_EQ(plan.naive_bytes, 64u + 128u + 64u);
}

TEST(MemoryPlan, BestFitTakesTheSmallestGapThatFits) {
  // Placed in this order: 0 at [0, 512), 1 at [512, 768), 2 at [768, 1024),
  // 3 at [1024, 1152). At step 2 only 1 and 3 are alive, leaving gaps of 512
  // bytes (at 0) and 256 bytes (at 768): buffer 4 takes the smaller.
  const std::vector<BufferRequest> requests = {{512, 0, 1}, {256, 0, 2}, {256, 1, 1}, {128, 1, 2}, {64, 2, 2}};
  const MemoryPlan plan = plan_memory(requests);
  verify_memory_plan(requests, plan);
  EXPECT_EQ(plan.offsets, (std::vector<size_t>{0, 512, 768, 1024, 768}));
  EXPECT_EQ(plan.peak_bytes, 1152u);
}

TEST(MemoryPlan, EmptyBuffersTakeNoSpace) {
  const std::vector<BufferRequest> requests = {{0, 0, 3}, {100, 1, 2}, {0, 1, 1}};
  const MemoryPlan plan = plan_memory(requests);
  verify_memory_plan(requests, plan);
  EXPECT_EQ(plan.peak_bytes, 128u);
  EXPECT_EQ(plan_memory({}).peak_bytes, 0u);
}

TEST(MemoryPlan, RandomPlansAreSafeAndNeverWorseThanNaive) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> requests(1 + random() % 40);
    for (BufferRequest& r : requests) {
      r.bytes = random() % 5000;
      r.first_use = random() % 30;
      r.last_use = r.first_use + random() % 8;
    }
    const MemoryPlan plan = plan_memory(requests);
    verify_memory_plan(requests, plan);
    EXPECT_LE(plan.peak_bytes, plan.naive_bytes);
    EXPECT_GE(plan.peak_bytes, live_bytes_bound(requests));
  }
}

TEST(MemoryPlan, VerifierCatchesAnInjectedOverlap) {
  const std::vector<BufferRequest> requests = {{256, 0, 1}, {256, 1, 2}, {256, 3, 4}};
  MemoryPlan plan = plan_memory(requests);
  verify_memory_plan(requests, plan);
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);  // not alive together: may share
  plan.offsets[1] = plan.offsets[0] + 64;
  plan.peak_bytes = std::max(plan.peak_bytes, plan.offsets[1] + 256);
  EXPECT_EQ(error_of([&] { verify_memory_plan(requests, plan); }),
            "memory plan: buffers 0 (bytes [0, 256), steps 0 to 1) and 1 (bytes [64, 320), steps 1 to 2) are alive "
            "at the same time and share bytes");
}

TEST(MemoryPlan, VerifierCatchesBadOffsetsAndArenaOverruns) {
  const std::vector<BufferRequest> requests = {{100, 0, 0}};
  MemoryPlan plan = plan_memory(requests);
  plan.offsets[0] = 32;
  EXPECT_EQ(error_of([&] { verify_memory_plan(requests, plan); }),
            "memory plan: buffer 0 is at offset 32, not a multiple of 64");
  plan.offsets[0] = 64;
  EXPECT_EQ(error_of([&] { verify_memory_plan(requests, plan); }),
            "memory plan: buffer 0 (bytes [64, 164)) ends past the arena (128 bytes)");
}

TEST(MemoryPlan, AnArenaBeyondAddressableMemoryIsAnError) {
  constexpr size_t kQuarter = size_t{1} << 61;  // of the 2^63 - 1 bytes a ptrdiff_t spans
  const std::vector<BufferRequest> three = {{kQuarter, 0, 1}, {kQuarter, 0, 1}, {kQuarter, 1, 1}};
  EXPECT_EQ(plan_memory(three).peak_bytes, 3 * kQuarter);
  // Four alive at once would end at 2^63; sizes near 2^64 would wrap.
  const std::vector<BufferRequest> four = {{kQuarter, 0, 1}, {kQuarter, 0, 1}, {kQuarter, 1, 1}, {kQuarter, 1, 1}};
  const std::vector<BufferRequest> wrapping = {{~size_t{0} - 8, 0, 0}};
  for (const auto& requests : {four, wrapping}) {
    EXPECT_EQ(error_of([&] { plan_memory(requests); }), "the memory plan needs more bytes than memory can address");
  }
}

}  // namespace
}  // namespace opgraph
