// The graph verifier: each thing it checks, and shape inference.
#include <gtest/gtest.h>

#include "graphs.h"
#include "opgraph/graph/graph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;
using testing::small_cnn;

std::string verify_error(const Graph& graph) {
  return error_of([&] { verify(graph); });
}

Node& node_named(Graph& graph, const std::string& name) {
  for (Node& node : graph.nodes) {
    if (node.name == name) return node;
  }
  throw Error("no node " + name);
}

TEST(GraphVerify, AcceptsAWellFormedGraph) {
  EXPECT_NO_THROW(verify(small_cnn()));
  EXPECT_NO_THROW(verify(small_cnn("5")));
}

TEST(GraphVerify, NodeNamesAreUnique) {
  Graph graph = small_cnn();
  node_named(graph, "relu").name = "conv";
  EXPECT_EQ(verify_error(graph), "node name 'conv' is used by nodes 0 and 1");
}

TEST(GraphVerify, EveryValueIsDefinedOnce) {
  Graph graph = small_cnn();
  node_named(graph, "relu").outputs = {"c"};
  EXPECT_EQ(verify_error(graph),
            "value 'c' is defined twice: by output 0 of node 'conv' (aten::conv2d) and by output 0 of node 'relu' "
            "(aten::relu)");
  graph = small_cnn();
  graph.constants[0].name = "x";
  EXPECT_EQ(verify_error(graph), "value 'x' is defined twice: by graph input 'x' and by constant 'x'");
}

TEST(GraphVerify, ValuesAreDefinedBeforeUse) {
  Graph graph = small_cnn();
  std::swap(graph.nodes[1], graph.nodes[2]);  // pool before the relu it reads
  EXPECT_EQ(verify_error(graph),
            "node 'pool' (aten::max_pool2d): input 0 uses value 'r' before node 'relu' defines it; nodes must be in "
            "topological order and form no cycle");
  graph = small_cnn();
  node_named(graph, "relu").inputs = {NodeInput::value("r")};  // a cycle of one
  EXPECT_EQ(verify_error(graph),
            "node 'relu' (aten::relu): input 0 uses value 'r' before this node defines it; nodes must be in "
            "topological order and form no cycle");
  graph = small_cnn();
  node_named(graph, "fc").inputs[2] = NodeInput::value("fc.bais");
  EXPECT_EQ(verify_error(graph),
            "node 'fc' (aten::linear): input 2 uses value 'fc.bais', which no graph input, constant or node defines");
}

TEST(GraphVerify, OutputsExist) {
  Graph graph = small_cnn();
  graph.outputs = {"logits", "probs"};
  EXPECT_EQ(verify_error(graph), "graph output 'probs' is not a graph input, constant or node output");
  graph.outputs.clear();
  EXPECT_EQ(verify_error(graph), "the graph has no outputs");
}

TEST(GraphVerify, ConstantsHaveStaticShapes) {
  Graph graph = small_cnn();
  graph.constants[1].shape = {"C"};
  EXPECT_EQ(verify_error(graph),
            "constant 'conv.bias': dimension 'C' is symbolic; constants have static shapes (float32[C])");
}

TEST(GraphVerify, ReportsEveryMissingOpAtOnce) {
  Graph graph = small_cnn();
  graph.packages = {"mylib"};
  node_named(graph, "relu").op_type = "mylib::foo";
  node_named(graph, "flatten").op_type = "mylib::bar";
  EXPECT_EQ(verify_error(graph),
            "missing ops: [1] mylib::foo (node relu), [3] mylib::bar (node flatten); load the op packages that "
            "provide them (the graph lists packages: mylib)");
}

TEST(GraphVerify, TellsAtenOpsWithoutAKernelFromPackageOps) {
  Graph graph = small_cnn();
  node_named(graph, "relu").op_type = "aten::no_such_op";
  node_named(graph, "flatten").op_type = "mylib::bar";
  EXPECT_EQ(verify_error(graph),
            "missing ops: [1] aten::no_such_op (node relu); opgraph has no kernel for these ATen ops: extract the "
            "model again with opgraph.ir.extract_ir, which decomposes every ATen op without a kernel into ops that "
            "have one (decompose='auto'); and [3] mylib::bar (node flatten); load the op packages that provide them "
            "(the graph lists no packages)");
}

TEST(GraphVerify, InputsAndOutputsMatchTheSchema) {
  Graph graph = small_cnn();
  // A trailing optional input left out is None (a graph written before the op's schema gained it).
  node_named(graph, "conv").inputs.pop_back();
  EXPECT_NO_THROW(verify(graph));
  node_named(graph, "conv").inputs.pop_back();
  EXPECT_EQ(verify_error(graph), "node 'conv' (aten::conv2d): expected 3 tensor inputs (input, weight, bias), got 1");
  graph = small_cnn();
  node_named(graph, "conv").inputs.push_back(NodeInput::none());
  EXPECT_EQ(verify_error(graph), "node 'conv' (aten::conv2d): expected 3 tensor inputs (input, weight, bias), got 4");
  graph = small_cnn();
  node_named(graph, "relu").outputs.push_back("extra");
  EXPECT_EQ(verify_error(graph), "node 'relu' (aten::relu): the op returns 1 tensors, the node names 2 outputs");
  graph = small_cnn();
  node_named(graph, "conv").inputs[1] = NodeInput::none();
  EXPECT_EQ(verify_error(graph), "node 'conv' (aten::conv2d): argument 'weight' is a required Tensor, got null");
  graph = small_cnn();
  node_named(graph, "relu").inputs[0] = NodeInput::list({"c", "c"});
  EXPECT_EQ(verify_error(graph), "node 'relu' (aten::relu): argument 'self' is a Tensor, got a list of 2 values");
}

TEST(GraphVerify, TensorListsBindTheirLength) {
  EXPECT_NO_THROW(verify(testing::cat_of_three()));
  Graph graph = testing::cat_of_three();
  node_named(graph, "cat").inputs[0] = NodeInput::value("s");
  EXPECT_EQ(verify_error(graph), "node 'cat' (aten::cat): argument 'tensors' is a Tensor[]; give it a list of values");
  node_named(graph, "cat").inputs[0] = NodeInput::list({});
  EXPECT_EQ(verify_error(graph),
            "node 'cat' (aten::cat): tensors: expected a non-empty list of tensors (shapes inferred with trial sizes "
            "N=192 for the symbolic dimensions)");
  node_named(graph, "cat").inputs[0] = NodeInput::list({"s", "x", "nope"});
  EXPECT_EQ(verify_error(graph),
            "node 'cat' (aten::cat): input 0 uses value 'nope', which no graph input, constant or node defines");
  graph = testing::cat_of_three();
  node_named(graph, "relu").inputs[0] = NodeInput::value("c");
  EXPECT_EQ(verify_error(graph),
            "node 'relu' (aten::relu): input 0 uses value 'c' before node 'cat' defines it; nodes must be in "
            "topological order and form no cycle");
  // The shape function sees every element: the third one has the wrong rank.
  graph = testing::cat_of_three();
  graph.inputs.push_back({"v", DType::Float32, {"N"}});
  node_named(graph, "cat").inputs[0] = NodeInput::list({"s", "x", "v"});
  EXPECT_EQ(verify_error(graph),
            "node 'cat' (aten::cat): tensors[2]: expected rank 2 like tensors[0], got float32[192] (shapes inferred "
            "with trial sizes N=192 for the symbolic dimensions)");
}

TEST(GraphVerify, SymbolsFlowThroughTensorLists) {
  EXPECT_EQ(infer_shapes(testing::cat_of_three(1)).at("y").type_str(), "float32[N, 9]");
  // Three batches joined: 3 * N is no plain symbol.
  EXPECT_EQ(infer_shapes(testing::cat_of_three(0)).at("y").type_str(), "float32[?, 3]");
  EXPECT_EQ(infer_shapes(testing::cat_of_three(0), {{"N", 5}}).at("y").str(), "float32[15, 3]");
}

TEST(GraphVerify, AttributesBindToTheSchema) {
  Graph graph = small_cnn();
  node_named(graph, "conv").attrs.push_back({"strides", std::vector<int64_t>{2, 2}, false});
  EXPECT_EQ(verify_error(graph),
            "node 'conv' (aten::conv2d): unexpected attribute 'strides'; its attributes are: stride, padding, "
            "dilation, groups");
  graph = small_cnn();
  node_named(graph, "conv").attrs[1].value = std::string("one");
  EXPECT_EQ(verify_error(graph), "node 'conv' (aten::conv2d): attribute 'groups' expects SymInt, got str \"one\"");
  graph = small_cnn();
  node_named(graph, "pool").attrs.clear();
  EXPECT_EQ(verify_error(graph), "node 'pool' (aten::max_pool2d): missing required attribute 'kernel_size' (int[2])");
}

TEST(GraphVerify, ShapesAgreeWithTheShapeFunctions) {
  Graph graph = small_cnn("2");
  graph.constants[0].shape = {4, 5, 3, 3};
  EXPECT_EQ(verify_error(graph),
            "node 'conv' (aten::conv2d): weight: expected 3 input channels per group (input float32[2, 3, 8, 8], "
            "groups 1), got float32[4, 5, 3, 3]");
  graph = small_cnn("2");
  graph.constants[2].shape = {10, 35};
  EXPECT_NE(verify_error(graph).find("node 'fc' (aten::linear): "), std::string::npos) << verify_error(graph);
}

TEST(GraphVerify, EveryValueFitsInMemory) {
  // float32[2^59] is 2^61 bytes; four of them joined are 2^63, past ptrdiff_t.
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [576460752303423488]}],
    "outputs": [{"name": "y"}],
    "nodes": [{"name": "cat", "op_type": "aten::cat", "inputs": [["x", "x", "x", "x"]], "outputs": ["y"]}]})");
  EXPECT_EQ(verify_error(graph),
            "node 'cat' (aten::cat): output 0: float32[2305843009213693952] takes more bytes than memory can address");
  const Graph huge_input =
      Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "int64", "shape": ["N", 4611686018427387904]}],
    "outputs": [{"name": "y"}],
    "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]}]})");
  EXPECT_EQ(verify_error(huge_input),
            "input 'x': int64[192, 4611686018427387904] takes more bytes than memory can address (shapes inferred "
            "with trial sizes N=192 for the symbolic dimensions)");
}

TEST(GraphVerify, SymbolicShapeErrorsNameTheTrialSizes) {
  Graph graph = small_cnn();
  graph.constants[0].shape = {4, 5, 3, 3};
  EXPECT_EQ(verify_error(graph),
            "node 'conv' (aten::conv2d): weight: expected 3 input channels per group (input float32[192, 3, 8, 8], "
            "groups 1), got float32[4, 5, 3, 3] (shapes inferred with trial sizes N=192 for the symbolic "
            "dimensions)");
}

TEST(GraphVerify, InfersSymbolicShapes) {
  const auto shapes = infer_shapes(small_cnn());
  EXPECT_EQ(shapes.at("c").type_str(), "float32[N, 4, 6, 6]");
  EXPECT_EQ(shapes.at("f").type_str(), "float32[N, 36]");
  EXPECT_EQ(shapes.at("logits").type_str(), "float32[N, 10]");
  EXPECT_EQ(shapes.at("conv.weight").type_str(), "float32[4, 3, 3, 3]");
  // A size that is not a plain symbol after the shape functions is "?".
  Graph graph = small_cnn();
  graph.nodes[3].attrs[0].value = int64_t{0};
  graph.constants[2].shape = {10, 36};
  EXPECT_EQ(infer_shapes(graph, {{"N", 1}}).at("f").str(), "float32[36]");
  graph.nodes.pop_back();
  graph.outputs = {"f"};
  EXPECT_EQ(infer_shapes(graph).at("f").type_str(), "float32[?]");
}

TEST(GraphVerify, InfersConcreteShapesPerBinding) {
  EXPECT_EQ(infer_shapes(small_cnn(), {{"N", 17}}).at("logits").str(), "float32[17, 10]");
  EXPECT_EQ(error_of([] { infer_shapes(small_cnn(), DimBindings{}); }),
            "'x' (float32[N, 3, 8, 8]): no size given for dimension 'N'");
}

TEST(GraphVerify, SeveralSymbolsStayApart) {
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "a", "dtype": "float32", "shape": ["M", "K"]},
                                                      {"name": "b", "dtype": "float32", "shape": ["K", "N"]}],
    "outputs": [{"name": "c"}, {"name": "t"}],
    "nodes": [{"name": "mm", "op_type": "aten::mm", "inputs": ["a", "b"], "outputs": ["c"]},
              {"name": "t", "op_type": "aten::t", "inputs": ["c"], "outputs": ["t"]}]})");
  const auto shapes = infer_shapes(graph);
  EXPECT_EQ(shapes.at("c").type_str(), "float32[M, N]");
  EXPECT_EQ(shapes.at("t").type_str(), "float32[N, M]");
}

}  // namespace
}  // namespace opgraph
