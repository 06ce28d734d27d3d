// State: values that persist between a Session's runs (a KV cache), held in
// state objects, updated in place or copied, and the errors around them.
#include <gtest/gtest.h>

#include <thread>

#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;
using testing::temp_path;

// A cache of 6 rows of 2 values per sequence: each run writes `rows` at
// positions `pos` (index_put over the state) and returns the whole cache, as
// a decoder's KV cache is written then read by attention.
Graph cache_graph(const std::string& extra_nodes = "", const std::string& outputs = R"([{"name": "y"}])") {
  return Graph::from_json(R"({
    "name": "cache",
    "inputs": [{"name": "rows", "dtype": "float32", "shape": ["B", "T", 2]},
               {"name": "pos", "dtype": "int64", "shape": ["T"]}],
    "outputs": )" + outputs +
                          R"(,
    "states": [{"name": "cache", "dtype": "float32", "shape": ["B", 6, 2], "update": "cache_next"}],
    "nodes": [
      {"name": "write", "op_type": "aten::index_put", "inputs": ["cache", [null, "pos"], "rows"],
       "outputs": ["cache_next"]},
      {"name": "read", "op_type": "aten::relu", "inputs": ["cache_next"], "outputs": ["y"]})" +
                          extra_nodes + R"(
    ]})");
}

Tensor values(Shape shape, std::vector<float> data) {
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  std::copy(data.begin(), data.end(), t.data_ptr<float>());
  return t;
}

Tensor positions(std::vector<int64_t> data) {
  Tensor t = Tensor::empty({static_cast<int64_t>(data.size())}, DType::Int64);
  std::copy(data.begin(), data.end(), t.data_ptr<int64_t>());
  return t;
}

std::vector<float> elements(const Tensor& t) {
  return {t.data_ptr<const float>(), t.data_ptr<const float>() + t.numel()};
}

TEST(State, RunsWriteTheCacheWhereThePositionsSay) {
  Session session(cache_graph(), {});
  ASSERT_EQ(session.inputs().size(), 2u);  // the state is not an input
  ASSERT_EQ(session.outputs().size(), 1u);
  State state = session.new_state({{"B", 1}});
  EXPECT_EQ(elements(state.get("cache")), std::vector<float>(12, 0.0f));

  session.run({{"rows", values({1, 2, 2}, {1, 2, 3, 4})}, {"pos", positions({0, 1})}}, &state);
  std::vector<Tensor> out = session.run({{"rows", values({1, 1, 2}, {5, -6})}, {"pos", positions({2})}}, &state);
  const std::vector<float> want = {1, 2, 3, 4, 5, -6, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(elements(state.get("cache")), want);
  EXPECT_EQ(elements(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0}));

  state.reset();
  EXPECT_EQ(elements(state.get("cache")), std::vector<float>(12, 0.0f));
}

// A node after the update reads the state as it was: the update cannot be
// written into the state while the run goes on, and is copied at its end.
TEST(State, AnUpdateReadBeforeItIsWrittenIsCopiedAtTheEnd) {
  const std::string old_read = R"(,
      {"name": "old", "op_type": "aten::neg", "inputs": ["cache"], "outputs": ["before"]})";
  Session session(cache_graph(old_read, R"([{"name": "y"}, {"name": "before"}])"), {});
  State state = session.new_state({{"B", 1}});
  session.run({{"rows", values({1, 1, 2}, {1, 2})}, {"pos", positions({0})}}, &state);
  std::vector<Tensor> out = session.run({{"rows", values({1, 1, 2}, {3, 4})}, {"pos", positions({1})}}, &state);
  EXPECT_EQ(elements(out[1]), (std::vector<float>{-1, -2, -0, -0, -0, -0, -0, -0, -0, -0, -0, -0}));
  EXPECT_EQ(elements(state.get("cache")), (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(State, EachStateKeepsItsOwnSequenceAcrossThreads) {
  Session session(cache_graph(), {});
  constexpr int kSequences = 4, kSteps = 6;
  std::vector<State> states;
  for (int s = 0; s < kSequences; ++s) states.push_back(session.new_state({{"B", 1}}));
  std::vector<std::thread> threads;
  for (int s = 0; s < kSequences; ++s) {
    threads.emplace_back([&, s] {
      for (int step = 0; step < kSteps; ++step) {
        const auto v = static_cast<float>(s * 100 + step);
        session.run({{"rows", values({1, 1, 2}, {v, -v})}, {"pos", positions({step})}}, &states[s]);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int s = 0; s < kSequences; ++s) {
    std::vector<float> want;
    for (int step = 0; step < kSteps; ++step) {
      want.push_back(static_cast<float>(s * 100 + step));
      want.push_back(-static_cast<float>(s * 100 + step));
    }
    EXPECT_EQ(elements(states[s].get("cache")), want) << "sequence " << s;
  }
}

TEST(State, StartsFromItsInitialConstant) {
  Graph graph = Graph::from_json(R"({
    "name": "counter",
    "inputs": [{"name": "step", "dtype": "int64", "shape": [1]}],
    "outputs": [{"name": "count"}],
    "constants": [{"name": "start", "dtype": "int64", "shape": [1]}],
    "states": [{"name": "total", "dtype": "int64", "shape": [1], "initial": "start", "update": "count"}],
    "nodes": [{"name": "add", "op_type": "aten::add.Tensor", "inputs": ["total", "step"], "outputs": ["count"]}]})");
  Weights weights = {{"start", positions({10})}};
  const std::string path = temp_path("counter.opg");
  save_opg(path, graph, weights);  // state travels in the file
  Session session(path);
  ASSERT_EQ(session.states().size(), 1u);
  State state = session.new_state();
  for (int64_t step : {1, 2, 3}) session.run(std::vector<Tensor>{positions({step})}, &state);
  EXPECT_EQ(state.get("total").data_ptr<int64_t>()[0], 16);
  state.reset();
  EXPECT_EQ(session.run(std::vector<Tensor>{positions({5})}, &state)[0].data_ptr<int64_t>()[0], 15);
}

TEST(State, JsonKeepsStatesAndGraphsWithoutThemReadAsBefore) {
  const Graph graph = cache_graph();
  EXPECT_EQ(Graph::from_json(graph.to_json()), graph);
  Graph stateless = graph;
  stateless.states.clear();
  EXPECT_EQ(stateless.to_json().find("states"), std::string::npos);
}

TEST(State, BadUseIsAnErrorThatLeavesTheStateAsItWas) {
  Session session(cache_graph(), {});
  State state = session.new_state({{"B", 1}});
  session.run({{"rows", values({1, 1, 2}, {1, 2})}, {"pos", positions({0})}}, &state);
  const std::vector<float> before = elements(state.get("cache"));
  const Tensor rows = values({1, 1, 2}, {7, 8});

  EXPECT_NE(error_of([&] {
              session.run({{"rows", rows}, {"pos", positions({0})}});
            }).find("graph 'cache' has state (cache): run it with a state from this Session's new_state()"),
            std::string::npos);
  Session other(cache_graph(), {});
  State foreign = other.new_state({{"B", 1}});
  EXPECT_NE(error_of([&] {
              session.run({{"rows", rows}, {"pos", positions({0})}}, &foreign);
            }).find("the state was made by another Session"),
            std::string::npos);
  // A position past the cache's 6 rows: nothing is written.
  EXPECT_NE(error_of([&] {
              session.run({{"rows", values({1, 2, 2}, {7, 8, 9, 9})}, {"pos", positions({1, 6})}}, &state);
            }).find("index: 6 at position 1 is out of range for a dim of size 6"),
            std::string::npos);
  EXPECT_EQ(elements(state.get("cache")), before);
  // The batch of the inputs and of the state disagree.
  EXPECT_NE(error_of([&] {
              session.run({{"rows", values({2, 1, 2}, {1, 2, 3, 4})}, {"pos", positions({0})}}, &state);
            }).find("state 'cache': expected float32[B, 6, 2], got float32[1, 6, 2] (B is 2, from input 'rows')"),
            std::string::npos);
  EXPECT_EQ(elements(state.get("cache")), before);

  EXPECT_NE(error_of([&] { session.new_state(); }).find("state 'cache' is float32[B, 6, 2]: give the size of 'B'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              session.new_state({{"B", 1}, {"N", 2}});
            }).find("no state's shape has dimension 'N'; the states are cache"),
            std::string::npos);
  EXPECT_NE(error_of([&] { state.get("v_cache"); }).find("no state named 'v_cache'; the states are cache"),
            std::string::npos);
  Session stateless(Graph::from_json(R"({"name": "g", "inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
      "outputs": [{"name": "y"}], "nodes": [{"name": "r", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]}]})"),
                    {});
  EXPECT_NE(error_of([&] {
              stateless.run(std::vector<Tensor>{values({2}, {1, 2})}, &state);
            }).find("graph 'g' has no state; run it without one"),
            std::string::npos);
}

TEST(State, DeclarationsAreChecked) {
  auto load_error = [](const std::string& states, const std::string& constants = "[]") {
    return error_of([&] {
      verify(Graph::from_json(R"({"name": "g", "inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
          "outputs": [{"name": "y"}], "constants": )" +
                              constants + R"(, "states": )" + states + R"(,
          "nodes": [{"name": "r", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]}]})"));
    });
  };
  EXPECT_NE(load_error(R"([{"name": "s", "dtype": "float32", "shape": [3], "update": "y"}])")
                .find("state 's': its update 'y' is float32[2], the state is float32[3]"),
            std::string::npos);
  EXPECT_NE(load_error(R"([{"name": "s", "dtype": "float32", "shape": [2], "initial": "w"}])")
                .find("state 's': its initial value 'w' is not a constant of the graph"),
            std::string::npos);
  EXPECT_NE(load_error(R"([{"name": "s", "dtype": "float32", "shape": [2], "initial": "w"}])",
                       R"([{"name": "w", "dtype": "int64", "shape": [2]}])")
                .find("expected an initial value of type float32[2], constant 'w' is int64[2]"),
            std::string::npos);
  EXPECT_NE(load_error(R"([{"name": "x", "dtype": "float32", "shape": [2]}])").find("value 'x' is defined twice"),
            std::string::npos);
  EXPECT_NE(load_error(R"([{"name": "s", "dtype": "float32", "shape": [2], "update": "s"}])")
                .find("its update is the state itself"),
            std::string::npos);
}

}  // namespace
}  // namespace opgraph
