// The channel-blocked layout pass (use_nchwc_layout) on its own: which nodes
// it rewrites, and a Session running the rewritten graph as it runs the graph
// as written.
#include <gtest/gtest.h>

#include <algorithm>

#include "graphs.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/graph/optimize.h"
#include "opgraph/opgraph.h"

namespace opgraph {
namespace {

using testing::random_tensor;

// conv(3 -> 24) -> relu -> pad(0, 1, 0, 1) -> depthwise conv(24, stride 2)
// -> add(itself) -> conv(24 -> 5, 1x1), whose output is the graph's, and
// the depthwise output also read by a sigmoid (a plain consumer).
Graph chain() {
  return Graph::from_json(R"json({
    "name": "chain",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 3, 9, 9]}],
    "outputs": [{"name": "y"}, {"name": "s"}],
    "constants": [{"name": "w1", "dtype": "float32", "shape": [24, 3, 3, 3]},
                  {"name": "b1", "dtype": "float32", "shape": [24]},
                  {"name": "w2", "dtype": "float32", "shape": [24, 1, 3, 3]},
                  {"name": "w3", "dtype": "float32", "shape": [5, 24, 1, 1]}],
    "nodes": [
      {"name": "conv1", "op_type": "aten::conv2d", "inputs": ["x", "w1", "b1"], "outputs": ["c1"],
       "attrs": {"padding": {"type": "ints", "value": [1, 1]}}},
      {"name": "relu", "op_type": "aten::relu", "inputs": ["c1"], "outputs": ["r"]},
      {"name": "pad", "op_type": "aten::pad", "inputs": ["r"], "outputs": ["p"],
       "attrs": {"pad": {"type": "ints", "value": [0, 1, 0, 1]}}},
      {"name": "depthwise", "op_type": "aten::conv2d", "inputs": ["p", "w2", null], "outputs": ["d"],
       "attrs": {"stride": {"type": "ints", "value": [2, 2]}, "groups": {"type": "int", "value": 24}}},
      {"name": "twice", "op_type": "aten::add.Tensor", "inputs": ["d", "d"], "outputs": ["a"]},
      {"name": "sigmoid", "op_type": "aten::sigmoid", "inputs": ["d"], "outputs": ["s"]},
      {"name": "conv3", "op_type": "aten::conv2d", "inputs": ["a", "w3", null], "outputs": ["y"]}
    ]})json");
}

Weights chain_weights() {
  return {{"w1", random_tensor({24, 3, 3, 3}, 1)},
          {"b1", random_tensor({24}, 2)},
          {"w2", random_tensor({24, 1, 3, 3}, 3)},
          {"w3", random_tensor({5, 24, 1, 1}, 4)}};
}

std::vector<std::string> op_types(const Graph& graph) {
  std::vector<std::string> types;
  for (const Node& node : graph.nodes) types.push_back(node.op_type);
  return types;
}

bool blocked_kernels() { return cpu_capability() != CpuCapability::Default; }

TEST(NchwcLayout, MakesTheChainBlockedAndConvertsWherePlainConsumersRead) {
  if (!blocked_kernels()) GTEST_SKIP() << "the pass runs only on CPUs with AVX2 or AVX-512";
  Graph graph = chain();
  use_nchwc_layout(graph);
  EXPECT_EQ(op_types(graph), (std::vector<std::string>{"opgraph::conv2d_nchwc", "aten::relu", "opgraph::conv2d_nchwc",
                                                       "aten::add.Tensor", "opgraph::nchwc_to_nchw", "aten::sigmoid",
                                                       "opgraph::conv2d_nchwc", "opgraph::nchwc_to_nchw"}));
  const Node& depthwise = graph.nodes[2];
  EXPECT_EQ(depthwise.inputs[0].values, std::vector<std::string>{graph.nodes[1].outputs[0]});  // the pad is folded
  const Attrs attrs = Attrs::bind(Registry::global().find(depthwise.op_type)->schema, depthwise.named_attrs());
  EXPECT_EQ(attrs.get<std::vector<int64_t>>("padding"), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(attrs.get<std::vector<int64_t>>("padding_end"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(graph.nodes[4].outputs, std::vector<std::string>{"d"});  // converted once, for the sigmoid
  EXPECT_EQ(graph.nodes.back().outputs, std::vector<std::string>{"y"});
  verify(graph);
}

TEST(NchwcLayout, SessionGivesTheOutputsOfTheGraphAsWritten) {
  SessionOptions as_written;
  as_written.optimize = false;
  const Session blocked(chain(), chain_weights()), plain(chain(), chain_weights(), as_written);
  for (int64_t batch : {1, 3}) {
    const Tensor x = random_tensor({batch, 3, 9, 9}, 5);
    const std::vector<Tensor> got = blocked.run({{"x", x}}), want = plain.run({{"x", x}});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].meta(), want[k].meta());
      for (int64_t i = 0; i < got[k].numel(); ++i) {
        EXPECT_NEAR(got[k].data_ptr<float>()[i], want[k].data_ptr<float>()[i], 1e-4f) << "output " << k << " at " << i;
      }
    }
  }
}

TEST(NchwcLayout, LeavesALoneConvolutionAlone) {
  Graph graph = testing::small_cnn();
  const Graph before = graph;
  use_nchwc_layout(graph);
  EXPECT_EQ(graph, before);
}

}  // namespace
}  // namespace opgraph
