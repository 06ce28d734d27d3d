// The channel-blocked layout pass (use_nchwc_layout) and the residual
// fusion after it (fuse_product_epilogues) on their own: which nodes they
// rewrite, and a Session running the rewritten graph as it runs the graph as
// written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "graph/passes/rewrite.h"
#include "graphs.h"
#include "kernels/cpu/passes/passes.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/opgraph.h"

namespace opgraph {
namespace {

using testing::random_tensor;

// Makes one pass on `graph` with `weights`, as a Session's load does.
void make_pass(PassFn pass, Graph& graph, Weights& weights, Precision precision = Precision::Float32) {
  PassContext context(graph, weights, Registry::global(), precision);
  pass(context);
}

void use_nchwc_layout(Graph& graph, Precision precision = Precision::Float32) {
  Weights weights;  // the layout pass reads the constants' types, not their values
  make_pass(opgraph::use_nchwc_layout, graph, weights, precision);
}

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

// Residual connections after blocked convolutions: relu(m + d) with the
// shortcut convolution d computed after m (ResNet's downsampling block), an
// add with alpha 2, and sigmoid(e + t), where t is also read before.
// `size`: the images' height and width; the 3x3 convolutions run Winograd
// kernels from 20 (400 pixels, kernels/cpu/engines/winograd.h).
Graph residual_blocks(int64_t size = 20) {
  return Graph::from_json(R"json({
    "name": "residual_blocks",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 24, )json" +
                          std::to_string(size) + ", " + std::to_string(size) + R"json(]}],
    "outputs": [{"name": "y"}],
    "constants": [{"name": "w1", "dtype": "float32", "shape": [24, 24, 3, 3]},
                  {"name": "b1", "dtype": "float32", "shape": [24]},
                  {"name": "w2", "dtype": "float32", "shape": [24, 24, 1, 1]},
                  {"name": "w3", "dtype": "float32", "shape": [24, 24, 1, 1]},
                  {"name": "w4", "dtype": "float32", "shape": [24, 24, 1, 1]},
                  {"name": "w5", "dtype": "float32", "shape": [24, 24, 3, 3]}],
    "nodes": [
      {"name": "conv1", "op_type": "aten::conv2d", "inputs": ["x", "w1", "b1"], "outputs": ["c1"],
       "attrs": {"padding": {"type": "ints", "value": [1, 1]}}},
      {"name": "relu1", "op_type": "aten::relu", "inputs": ["c1"], "outputs": ["r"]},
      {"name": "conv2", "op_type": "aten::conv2d", "inputs": ["r", "w2", null], "outputs": ["m"]},
      {"name": "down", "op_type": "aten::conv2d", "inputs": ["r", "w3", null], "outputs": ["d"]},
      {"name": "add", "op_type": "aten::add.Tensor", "inputs": ["m", "d"], "outputs": ["s"]},
      {"name": "relu2", "op_type": "aten::relu", "inputs": ["s"], "outputs": ["t"]},
      {"name": "conv4", "op_type": "aten::conv2d", "inputs": ["t", "w4", null], "outputs": ["u"]},
      {"name": "scaled", "op_type": "aten::add.Tensor", "inputs": ["u", "t"], "outputs": ["v"],
       "attrs": {"alpha": {"type": "float", "value": 2.0}}},
      {"name": "conv5", "op_type": "aten::conv2d", "inputs": ["v", "w5", null], "outputs": ["e"],
       "attrs": {"padding": {"type": "ints", "value": [1, 1]}}},
      {"name": "add3", "op_type": "aten::add.Tensor", "inputs": ["e", "t"], "outputs": ["z"]},
      {"name": "sigmoid", "op_type": "aten::sigmoid", "inputs": ["z"], "outputs": ["y"]}
    ]})json");
}

// Weights scaled by 1 / sqrt(fan-in), as initializers do, so that the
// activations stay near 1 through five convolutions and float32 sums in
// another order stay within the tolerance.
Weights residual_weights() {
  Weights weights = {{"b1", random_tensor({24}, 1)}};
  for (int k = 1; k <= 5; ++k) {
    const int64_t kernel = k == 1 || k == 5 ? 3 : 1;
    Tensor w = random_tensor({24, 24, kernel, kernel}, 10 + k);
    const float scale = 1.0f / std::sqrt(static_cast<float>(24 * kernel * kernel));
    for (int64_t i = 0; i < w.numel(); ++i) w.data_ptr<float>()[i] *= scale;
    weights["w" + std::to_string(k)] = w;
  }
  return weights;
}

std::string attr_string(const Node& node, const char* name) {
  const Attrs attrs = Attrs::bind(Registry::global().find(node.op_type)->schema, node.named_attrs());
  return attrs.get<std::string>(name);
}

TEST(ResidualAdds, BecomeTheConvolutionsResidualAndActivation) {
  if (!blocked_kernels()) GTEST_SKIP() << "the layout pass runs only on CPUs with AVX2 or AVX-512";
  Graph graph = residual_blocks();
  Weights weights = residual_weights();
  use_nchwc_layout(graph);
  make_pass(fuse_product_epilogues, graph, weights);
  EXPECT_EQ(op_types(graph),
            (std::vector<std::string>{"opgraph::conv2d_nchwc", "aten::relu", "opgraph::conv2d_nchwc",
                                      "opgraph::conv2d_nchwc", "opgraph::conv2d_nchwc", "aten::add.Tensor",
                                      "opgraph::conv2d_nchwc", "opgraph::nchwc_to_nchw", "aten::sigmoid"}));
  const Node &conv2 = graph.nodes[2], &down = graph.nodes[3], &scaled = graph.nodes[5], &conv5 = graph.nodes[6];
  // relu(m + d): the later convolution adds the earlier one's output, and applies the relu.
  EXPECT_EQ(down.name, "down");
  EXPECT_EQ(down.inputs[3].values, conv2.outputs);
  EXPECT_EQ(attr_string(down, "activation"), "relu");
  EXPECT_TRUE(conv2.inputs[3].is_none());
  EXPECT_EQ(scaled.inputs[1].values, down.outputs);  // alpha 2 stays an add
  // sigmoid(e + t): the add only, as the sigmoid reads the plain layout.
  EXPECT_EQ(conv5.inputs[3].values, down.outputs);
  EXPECT_EQ(attr_string(conv5, "activation"), "none");
  EXPECT_EQ(graph.nodes[7].outputs, std::vector<std::string>{"z"});
  verify(graph);
}

TEST(ResidualAdds, SessionGivesTheOutputsOfTheGraphAsWritten) {
  const Session fused(residual_blocks(), residual_weights()),
      plain(residual_blocks(), residual_weights(), {.optimize = false});
  for (int64_t batch : {1, 2}) {
    const Tensor x = random_tensor({batch, 24, 20, 20}, 7);
    const Tensor got = fused.run({{"x", x}})[0], want = plain.run({{"x", x}})[0];
    ASSERT_EQ(got.meta(), want.meta());
    for (int64_t i = 0; i < got.numel(); ++i) {
      EXPECT_NEAR(got.data_ptr<float>()[i], want.data_ptr<float>()[i], 1e-4f) << i;
    }
  }
}

int64_t block_of(const Node& conv) {
  return Attrs::bind(Registry::global().find(conv.op_type)->schema, conv.named_attrs()).get<int64_t>("block");
}

// On AVX-512, blocks of 16 where a convolution is grouped or runs Winograd
// kernels (a 3x3 one with unit strides over enough pixels, as
// residual_blocks' first and last at 20x20); channels-last (a block of every
// channel) otherwise, as at 6x6 and in test_nchwc_layout.py. On AVX2, blocks
// of 8.
TEST(NchwcLayout, TakesBlocksOf16WhereAConvolutionIsGroupedOrWinograd) {
  if (!blocked_kernels()) GTEST_SKIP() << "the pass runs only on CPUs with AVX2 or AVX-512";
  const bool avx512 = cpu_capability() == CpuCapability::Avx512;
  Graph dense = residual_blocks(), small = residual_blocks(6), grouped = chain();
  use_nchwc_layout(dense);
  use_nchwc_layout(small);
  use_nchwc_layout(grouped);
  for (const Node& node : dense.nodes) {
    if (node.op_type == "opgraph::conv2d_nchwc") {
      EXPECT_EQ(block_of(node), avx512 ? 16 : 8) << node.name;
    }
  }
  for (const Node& node : small.nodes) {
    if (node.op_type == "opgraph::conv2d_nchwc") {
      EXPECT_EQ(block_of(node), avx512 ? 24 : 8) << node.name;
    }
  }
  for (const Node& node : grouped.nodes) {
    if (node.op_type == "opgraph::conv2d_nchwc") {
      EXPECT_EQ(block_of(node), avx512 ? 16 : 8) << node.name;
    }
  }
}

// In bfloat16, channels-last even where float32 takes blocks of 16 (a grouped
// convolution, 3x3 ones that would run Winograd kernels): oneDNN's bfloat16
// kernels on AMX take no other layout.
TEST(NchwcLayout, RunsChannelsLastInBFloat16) {
  if (cpu_capability() != CpuCapability::Avx512) GTEST_SKIP() << "bfloat16 convolutions need AVX-512";
  Graph grouped = chain(), dense = residual_blocks();
  use_nchwc_layout(grouped, Precision::BFloat16);
  use_nchwc_layout(dense, Precision::BFloat16);
  std::vector<int64_t> blocks;
  for (const Graph* graph : {&grouped, &dense}) {
    for (const Node& node : graph->nodes) {
      if (node.op_type == "opgraph::conv2d_nchwc") blocks.push_back(block_of(node));
    }
  }
  EXPECT_EQ(blocks, (std::vector<int64_t>{24, 24, 5, 24, 24, 24, 24, 24}));
}

TEST(NchwcLayout, LeavesALoneConvolutionAlone) {
  Graph graph = testing::small_cnn();
  const Graph before = graph;
  use_nchwc_layout(graph);
  EXPECT_EQ(graph, before);
}

}  // namespace
}  // namespace opgraph
