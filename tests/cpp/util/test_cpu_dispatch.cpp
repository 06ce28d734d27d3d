// Running a loop in the copy compiled for the CPU's widest vectors
// (kernels/cpu/util/cpu_dispatch.h): the function runs exactly once, every
// copy computes the same, and loops dispatched per chunk of a parallel_for
// cover every index exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

// A loop that vectorizes: y = 2 x + 1 over n floats.
void affine(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * x[i] + 1.0f;
}

TEST(DispatchCpu, RunsTheFunctionOnce) {
  int calls = 0;
  dispatch_cpu([&] { ++calls; });
  EXPECT_EQ(calls, 1);
}

TEST(DispatchCpu, TheCapabilityIsOneOfThree) {
  const std::string name = cpu_capability_name(cpu_capability());
  EXPECT_TRUE(name == cpu_capability_name(CpuCapability::Default) || name == cpu_capability_name(CpuCapability::Avx2) ||
              name == cpu_capability_name(CpuCapability::Avx512))
      << name;
}

TEST(DispatchCpu, EveryCopyTheCpuRunsComputesTheSame) {
  // Odd sizes leave a remainder after any vector width.
  for (int64_t n : {0, 1, 7, 33, 1001}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.5f - 3.0f;
    std::vector<float> expected(n);
    for (int64_t i = 0; i < n; ++i) expected[i] = 2.0f * x[i] + 1.0f;
    std::vector<float> y(n, -1.0f);
    dispatch_cpu([&] { affine(x.data(), y.data(), n); });
    EXPECT_EQ(y, expected) << n;
    std::fill(y.begin(), y.end(), -1.0f);
    run_default([&] { affine(x.data(), y.data(), n); });
    EXPECT_EQ(y, expected) << n;
#if defined(__x86_64__)
    if (cpu_capability() != CpuCapability::Default) {
      std::fill(y.begin(), y.end(), -1.0f);
      run_avx2([&] { affine(x.data(), y.data(), n); });
      EXPECT_EQ(y, expected) << n;
    }
    if (cpu_capability() == CpuCapability::Avx512) {
      std::fill(y.begin(), y.end(), -1.0f);
      run_avx512([&] { affine(x.data(), y.data(), n); });
      EXPECT_EQ(y, expected) << n;
    }
#endif
  }
}

class DispatchCpuChunks : public ::testing::TestWithParam<int> {};

TEST_P(DispatchCpuChunks, CoverEveryIndexExactlyOnce) {
  ThreadPool pool(GetParam());
  for (int64_t n : {1, 2, 3, 10, 997}) {
    auto hits = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(n));
    pool.parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t i = begin; i < end; ++i) ++hits[i];
      });
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "index " << i << " of " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, DispatchCpuChunks, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace opgraph::kernels
