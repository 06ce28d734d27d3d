// Threads sharing what opgraph shares between calls: built-in ops called from
// several threads at once over the process-wide pool (and oneDNN's primitive
// cache), one Session run by threads whose batch sizes change from run to
// run, Sessions built at once from one graph and one set of weights, and a
// registry read while ops are added to it. `make test-tsan` runs these under
// ThreadSanitizer, which is where a missing lock shows.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "graphs.h"
#include "opgraph/registry/registry.h"
#include "opgraph/runtime/session.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::random_tensor;
using testing::small_cnn;
using testing::small_cnn_weights;

constexpr int kThreads = 4;

// Runs body(thread) on kThreads threads at once and waits for them all.
void on_threads(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(body, t);
  for (std::thread& thread : threads) thread.join();
}

// Within float rounding: threads that find the pool busy run their loops
// unsplit, which may sum in another order than a call alone.
bool nearly_equal(const Tensor& got, const Tensor& want) {
  if (got.meta() != want.meta()) return false;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float a = got.data_ptr<float>()[i], b = want.data_ptr<float>()[i];
    if (!(std::abs(a - b) <= 1e-5f * (1 + std::abs(b)))) return false;
  }
  return true;
}

bool identical(const Tensor& a, const Tensor& b) {
  if (a.meta() != b.meta()) return false;
  const auto* x = static_cast<const unsigned char*>(a.data());
  return std::equal(x, x + a.nbytes(), static_cast<const unsigned char*>(b.data()));
}

// One built-in op call: the op, its inputs and attributes.
struct OpCall {
  std::string op;
  std::vector<Tensor> inputs;
  NamedAttrs attrs;

  Tensor run() const { return call(op, inputs, attrs)[0]; }
};

// Calls large enough to be split over the pool, and a convolution, whose
// oneDNN primitive every thread looks up in one cache.
std::vector<OpCall> calls_for(uint32_t seed) {
  return {
      {"aten::add.Tensor", {random_tensor({256, 301}, seed), random_tensor({301}, seed + 1)}, {}},
      {"aten::softmax.int", {random_tensor({128, 257}, seed + 2)}, {{"dim", int64_t{1}}}},
      {"aten::sum.dim_IntList", {random_tensor({257, 129}, seed + 3)}, {{"dim", std::vector<int64_t>{0}}}},
      {"aten::mm", {random_tensor({67, 96}, seed + 4), random_tensor({96, 80}, seed + 5)}, {}},
      {"aten::conv2d",
       {random_tensor({2, 3, 17, 17}, seed + 6), random_tensor({8, 3, 3, 3}, seed + 7), random_tensor({8}, seed + 8)},
       {{"padding", std::vector<int64_t>{1, 1}}}},
  };
}

TEST(Concurrency, BuiltinOpsCalledFromManyThreadsAtOnce) {
  // Half the threads share their inputs, half have their own.
  std::vector<std::vector<OpCall>> calls;
  std::vector<std::vector<Tensor>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    calls.push_back(calls_for(10 * static_cast<uint32_t>(t % 2)));
    for (const OpCall& c : calls[t]) expected[t].push_back(c.run());
  }
  std::vector<int> wrong(kThreads, 0);
  on_threads([&](int t) {
    for (int round = 0; round < 20; ++round) {
      for (size_t i = 0; i < calls[t].size(); ++i) wrong[t] += !nearly_equal(calls[t][i].run(), expected[t][i]);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(Concurrency, OutVariantsIntoOutputsOfEachThread) {
  const OpDef& add = Registry::global().get("aten::add.Tensor");
  const Attrs attrs = Attrs::bind(add.schema, {});
  const std::vector<Tensor> inputs{random_tensor({512, 129}, 1), random_tensor({129}, 2)};
  const Tensor expected = call(add, inputs, attrs)[0];
  std::vector<int> wrong(kThreads, 0);
  on_threads([&](int t) {
    const std::vector<Tensor> out{Tensor::empty(expected.meta())};
    for (int round = 0; round < 50; ++round) {
      call_out(add, inputs, out, attrs);
      wrong[t] += !nearly_equal(out[0], expected);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(Concurrency, OneSessionWhoseBatchSizeChangesEveryRun) {
  // The process-wide pool, and a plan per batch size made by whichever
  // thread needs it first while the others run with theirs.
  const Session session(small_cnn(), small_cnn_weights());
  constexpr int kBatches = 5;
  std::vector<Tensor> inputs, expected;
  for (int b = 1; b <= kBatches; ++b) {
    inputs.push_back(random_tensor({b, 3, 8, 8}, 50 + static_cast<uint32_t>(b)));
    expected.push_back(Session(small_cnn(), small_cnn_weights()).run(std::vector<Tensor>{inputs.back()})[0]);
  }
  std::vector<int> wrong(kThreads, 0);
  on_threads([&](int t) {
    for (int run = 0; run < 60; ++run) {
      const int b = (t + run) % kBatches;
      wrong[t] += !identical(session.run(std::vector<Tensor>{inputs[b]})[0], expected[b]);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(Concurrency, SessionsBuiltAtOnceFromOneGraphAndWeights) {
  const Graph graph = small_cnn();
  const Weights weights = small_cnn_weights();
  const Tensor x = random_tensor({3, 3, 8, 8}, 7);
  const Tensor expected = Session(graph, weights).run(std::vector<Tensor>{x})[0];
  std::vector<int> wrong(kThreads, 0);
  on_threads([&](int t) {
    for (int round = 0; round < 5; ++round) {
      const Session session(graph, weights, {.threads = 1 + t % 2});
      for (int run = 0; run < 5; ++run) wrong[t] += !identical(session.run(std::vector<Tensor>{x})[0], expected);
    }
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

// x -> x, for ops that only need to exist.
OpDef identity_op(const std::string& name) {
  OpDef op;
  op.schema = Schema::parse(name + "(Tensor x) -> Tensor");
  op.shape_fn = [](std::span<const TensorMeta* const> inputs, const Attrs&) {
    return std::vector<TensorMeta>{*inputs[0]};
  };
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor> inputs,
                                                        std::span<const Tensor> outputs, const Attrs&) {
    std::copy_n(static_cast<const char*>(inputs[0].data()), inputs[0].nbytes(), static_cast<char*>(outputs[0].data()));
  };
  op.source = "test_concurrency.cpp";
  return op;
}

TEST(Concurrency, RegistryReadWhileOpsAreAdded) {
  // Readers find each op once added, call it, and list the registry, while
  // one thread adds ops one at a time.
  constexpr int kOps = 200;
  Registry registry;
  std::atomic<int> added{0};
  std::vector<int> wrong(kThreads, 0);
  const Tensor x = random_tensor({16}, 3);
  on_threads([&](int t) {
    if (t == 0) {
      for (int i = 0; i < kOps; ++i) {
        registry.add(identity_op("concurrency::op_" + std::to_string(i)));
        added.store(i + 1, std::memory_order_release);
      }
      return;
    }
    for (int seen = 0; seen < kOps;) {
      seen = added.load(std::memory_order_acquire);
      if (seen == 0) continue;
      const OpDef* op = registry.find("concurrency::op_" + std::to_string((seen - 1 + t) % seen));
      if (op == nullptr || !identical(call(*op, std::vector<Tensor>{x}, Attrs::bind(op->schema, {}))[0], x)) {
        ++wrong[t];
      }
      if (registry.list().size() < static_cast<size_t>(seen)) ++wrong[t];
    }
  });
  EXPECT_EQ(registry.list().size(), static_cast<size_t>(kOps));
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace opgraph
