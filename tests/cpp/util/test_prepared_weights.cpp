// A node's prepared weights (kernels/cpu/util/prepared_weights.h): which
// inputs are constants, the precision, and the derived forms, made once per
// key and shared after, also when four threads ask at once; and the
// memory the one-row product's panels are packed into.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

TEST(PreparedWeights, WithoutStateNothingIsConstantAndPrecisionIsFloat32) {
  ThreadPool pool(1);
  const KernelContext context{&pool};
  EXPECT_EQ(prepared_weights(context), nullptr);
  EXPECT_FALSE(is_constant_input(context, 0));
  EXPECT_FALSE(is_constant_input(context, 1));
  EXPECT_EQ(weight_precision(context), Precision::Float32);
}

TEST(PreparedWeights, AnotherKindOfStateIsNotPreparedWeights) {
  struct OtherState : KernelState {};
  OtherState other;
  ThreadPool pool(1);
  KernelContext context{&pool};
  context.state = &other;
  EXPECT_EQ(prepared_weights(context), nullptr);
  EXPECT_FALSE(is_constant_input(context, 0));
  EXPECT_EQ(weight_precision(context), Precision::Float32);
}

TEST(PreparedWeights, ConstantInputsAndPrecisionAsPrepared) {
  PreparedWeights prepared({false, true, true}, Precision::BFloat16);
  ThreadPool pool(1);
  const KernelContext context = prepared_context(pool, prepared);
  EXPECT_EQ(context.pool, &pool);
  EXPECT_EQ(prepared_weights(context), &prepared);
  EXPECT_FALSE(is_constant_input(context, 0));
  EXPECT_TRUE(is_constant_input(context, 1));
  EXPECT_TRUE(is_constant_input(context, 2));
  // Past the inputs it knows of: not constant.
  EXPECT_FALSE(is_constant_input(context, 3));
  EXPECT_FALSE(is_constant_input(context, 1000));
  EXPECT_EQ(weight_precision(context), Precision::BFloat16);
}

TEST(PreparedWeights, NoInputs) {
  PreparedWeights prepared({}, Precision::Float32);
  EXPECT_FALSE(prepared.is_constant(0));
  EXPECT_EQ(prepared.precision(), Precision::Float32);
}

TEST(PreparedWeights, DerivedIsMadeOncePerKeyAndSharedAfter) {
  PreparedWeights prepared({true}, Precision::Float32);
  int made = 0;
  auto make = [&](int value) {
    return [&made, value] {
      ++made;
      return std::make_shared<const int>(value);
    };
  };
  const auto first = prepared.derived({1, 2}, {}, make(7));
  EXPECT_EQ(made, 1);
  EXPECT_EQ(*static_cast<const int*>(first.get()), 7);
  // The same key: the kept form, whatever make() would give now.
  const auto again = prepared.derived({1, 2}, {}, make(8));
  EXPECT_EQ(made, 1);
  EXPECT_EQ(again.get(), first.get());
  // Other keys, including a prefix, an extension and the empty one: their own forms.
  for (const PreparedWeights::Key& key :
       {PreparedWeights::Key{1}, PreparedWeights::Key{1, 2, 0}, PreparedWeights::Key{2, 1}, PreparedWeights::Key{}}) {
    const auto other = prepared.derived(key, {}, make(9));
    EXPECT_NE(other.get(), first.get());
    EXPECT_EQ(*static_cast<const int*>(other.get()), 9);
  }
  EXPECT_EQ(made, 5);
  EXPECT_EQ(prepared.derived({}, {}, make(10)).get(), prepared.derived({}, {}, make(11)).get());
  EXPECT_EQ(made, 5);
}

TEST(PreparedWeights, FourThreadsAtOnceShareOneForm) {
  PreparedWeights prepared({true}, Precision::Float32);
  std::atomic<int> made{0};
  constexpr int kThreads = 4, kRounds = 50;
  std::vector<const void*> seen(kThreads * kRounds);
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        start.arrive_and_wait();  // every thread asks for the round's key together
        const auto form = prepared.derived({round, 42}, {}, [&] {
          ++made;
          std::this_thread::yield();
          return std::make_shared<const int>(round);
        });
        EXPECT_EQ(*static_cast<const int*>(form.get()), round);
        seen[round * kThreads + t] = form.get();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(made, kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[round * kThreads + t], seen[round * kThreads]) << round;
  }
}

TEST(StreamedBuffer, SmallBuffersFollowOneAnotherZeroedAndAreCountedWhileAlive) {
  const size_t before = streamed_bytes();
  {
    std::shared_ptr<void> first = streamed_buffer(1000), second = streamed_buffer(3);
    const auto* a = static_cast<const unsigned char*>(first.get());
    const auto* b = static_cast<const unsigned char*>(second.get());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
    EXPECT_EQ(b - a, 1024);  // carved one after the other, each to whole cache lines
    for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(a[i], 0) << "byte " << i;
    EXPECT_GT(streamed_bytes(), before);
    first.reset();
    EXPECT_GT(streamed_bytes(), before);  // the second buffer keeps their chunk
  }
  EXPECT_EQ(streamed_bytes(), before);
}

TEST(StreamedBuffer, LargeBuffersTakeHugePagesOfTheirOwn) {
  const size_t before = streamed_bytes(), bytes = (size_t{5} << 20) + 7;
  {
    std::shared_ptr<void> large = streamed_buffer(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large.get()) % (size_t{2} << 20), 0u);
    EXPECT_EQ(streamed_bytes() - before, size_t{6} << 20);  // whole 2 MiB pages
    const auto* data = static_cast<const unsigned char*>(large.get());
    EXPECT_EQ(data[0], 0);
    EXPECT_EQ(data[bytes - 1], 0);
  }
  EXPECT_EQ(streamed_bytes(), before);
}

}  // namespace
}  // namespace opgraph::kernels
