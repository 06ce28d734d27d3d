// OpDef::prepare: a Session's load prepares each node's state once, with the
// node's constant inputs, and every call of that node's kernel gets it.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "graphs.h"
#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

// test_state::scaled(x, w) = x * w[0] + calls, where `calls` counts the
// node's earlier calls in the state its prepare made: it holds w[0] and
// whether w was a constant.
struct ScaledState : KernelState {
  float scale = 0;
  bool w_constant = false;
  std::atomic<int> calls{0};
};

std::atomic<int> prepared_nodes{0};

void register_scaled() {
  if (Registry::global().find("test_state::scaled") != nullptr) return;
  OpDef op;
  op.schema = Schema::parse("test_state::scaled(Tensor x, Tensor w) -> Tensor");
  op.shape_fn = [](std::span<const TensorMeta* const> in, const Attrs&) { return std::vector<TensorMeta>{*in[0]}; };
  op.prepare = [](const PrepareContext& context) -> std::unique_ptr<KernelState> {
    OPGRAPH_CHECK(context.constants.size() == 2, "expected 2 inputs, got ", context.constants.size());
    OPGRAPH_CHECK(!context.constants[1].defined() || context.constants[1].data_ptr<float>()[0] >= 0,
                  "w must not be negative");
    ++prepared_nodes;
    auto state = std::make_unique<ScaledState>();
    state->w_constant = context.constants[1].defined();
    state->scale = state->w_constant ? context.constants[1].data_ptr<float>()[0] : 0;
    return state;
  };
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext& context, std::span<const Tensor> in,
                                                        std::span<const Tensor> out, const Attrs&) {
    auto& state = dynamic_cast<ScaledState&>(*context.state);
    const float scale = state.w_constant ? state.scale : in[1].data_ptr<float>()[0];
    const int calls = state.calls++;
    for (int64_t i = 0; i < in[0].numel(); ++i)
      out[0].data_ptr<float>()[i] = in[0].data_ptr<float>()[i] * scale + calls;
  };
  op.source = "test_kernel_state.cpp";
  Registry::global().add(std::move(op));
}

Graph scaled_twice(bool w_constant) {
  return Graph::from_json(std::string(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [3]})") +
                          (w_constant ? "" : R"(, {"name": "w", "dtype": "float32", "shape": [1]})") + R"(],
    "outputs": [{"name": "z"}],)" +
                          (w_constant ? R"("constants": [{"name": "w", "dtype": "float32", "shape": [1]}],)" : "") +
                          R"("nodes": [
      {"name": "a", "op_type": "test_state::scaled", "inputs": ["x", "w"], "outputs": ["y"]},
      {"name": "b", "op_type": "test_state::scaled", "inputs": ["y", "w"], "outputs": ["z"]}]})");
}

Tensor filled(Shape shape, float value) {
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<float>()[i] = value;
  return t;
}

TEST(KernelState, IsPreparedOncePerNodeAtLoadWithTheConstants) {
  register_scaled();
  const int before = prepared_nodes;
  const Session session(scaled_twice(true), {{"w", filled({1}, 2)}});
  EXPECT_EQ(prepared_nodes - before, 2);  // a and b, at load
  // Each node keeps its own count of calls: (x * 2 + n) * 2 + n.
  for (int run = 0; run < 3; ++run) {
    const Tensor z = session.run({{"x", filled({3}, 1)}})[0];
    EXPECT_EQ(z.data_ptr<float>()[2], (1 * 2 + run) * 2 + run) << "run " << run;
  }
  EXPECT_EQ(prepared_nodes - before, 2);  // never again in a run
}

TEST(KernelState, SaysWhichInputsAreNotConstants) {
  register_scaled();
  const Session session(scaled_twice(false), {});
  const Tensor z = session.run({{"x", filled({3}, 1)}, {"w", filled({1}, 3)}})[0];
  EXPECT_EQ(z.data_ptr<float>()[0], 9);
}

TEST(KernelState, IsSharedByConcurrentRuns) {
  register_scaled();
  const Session session(scaled_twice(true), {{"w", filled({1}, 1)}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int run = 0; run < 25; ++run) session.run({{"x", filled({3}, 0)}});
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Each node counted the 100 runs: the next gives (0 + 100) + 100.
  EXPECT_EQ(session.run({{"x", filled({3}, 0)}})[0].data_ptr<float>()[0], 200);
}

TEST(KernelState, AFailedPrepareNamesTheNode) {
  register_scaled();
  const std::string message = error_of([] { Session(scaled_twice(true), {{"w", filled({1}, -1)}}); });
  EXPECT_NE(message.find("node 'a' (test_state::scaled): w must not be negative"), std::string::npos) << message;
}

}  // namespace
}  // namespace opgraph
