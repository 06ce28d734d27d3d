// The graph IR's JSON form: reading, writing, and the errors for bad JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "opgraph/graph/graph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

constexpr const char* kExample = R"({
  "name": "model",
  "inputs":    [{"name": "x", "dtype": "float32", "shape": ["N", 3, 8, 8]}],
  "outputs":   [{"name": "y"}],
  "constants": [{"name": "w0", "dtype": "float32", "shape": [16, 3, 3, 3]}],
  "nodes": [
    {"name": "conv_0", "op_type": "aten::conv2d", "inputs": ["x", "w0", null], "outputs": ["v1"],
     "attrs": {"stride": {"type": "ints", "value": [1, 1]}, "groups": {"type": "int", "value": 1}}},
    {"name": "cat_0", "op_type": "aten::cat", "inputs": [["v1", "v1"]], "outputs": ["y"],
     "attrs": {"dim": {"type": "int", "value": 1}}}
  ],
  "packages": ["mylib"]
})";

TEST(GraphJson, ReadsEveryField) {
  const Graph graph = Graph::from_json(kExample);
  EXPECT_EQ(graph.name, "model");
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0].name, "x");
  EXPECT_EQ(graph.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(graph.inputs[0].shape, (SymbolicShape{"N", 3, 8, 8}));
  EXPECT_TRUE(graph.inputs[0].shape[0].is_symbolic());
  EXPECT_EQ(graph.inputs[0].type_str(), "float32[N, 3, 8, 8]");
  EXPECT_EQ(graph.outputs, std::vector<std::string>{"y"});
  EXPECT_EQ(graph.constants[0].type_str(), "float32[16, 3, 3, 3]");
  ASSERT_EQ(graph.nodes.size(), 2u);
  const Node& conv = graph.nodes[0];
  EXPECT_EQ(conv.op_type, "aten::conv2d");
  EXPECT_EQ(conv.inputs, (std::vector<NodeInput>{NodeInput::value("x"), NodeInput::value("w0"), NodeInput::none()}));
  EXPECT_EQ(conv.outputs, std::vector<std::string>{"v1"});
  ASSERT_EQ(conv.attrs.size(), 2u);
  EXPECT_EQ(conv.attrs[0].name, "stride");  // in the order written
  EXPECT_EQ(conv.attrs[0].value, AttrValue(std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv.attrs[1].value, AttrValue(int64_t{1}));
  EXPECT_EQ(graph.nodes[1].inputs, std::vector<NodeInput>{NodeInput::list({"v1", "v1"})});
  EXPECT_EQ(graph.packages, std::vector<std::string>{"mylib"});
}

TEST(GraphJson, RoundTripsThroughText) {
  const Graph graph = Graph::from_json(kExample);
  EXPECT_EQ(Graph::from_json(graph.to_json()), graph);
  EXPECT_EQ(Graph::from_json(graph.to_json(2)), graph);
  EXPECT_EQ(Graph::from_json(graph.to_json()).to_json(), graph.to_json());
}

TEST(GraphJson, EveryAttributeTypeRoundTrips) {
  Node node{"n", "ns::op", {NodeInput::value("x")}, {"y"}, {}};
  node.attrs = {{"i", int64_t{-7}, false},
                {"f", 0.25, false},
                {"inf", -std::numeric_limits<double>::infinity(), false},
                {"b", true, false},
                {"s", std::string("same"), false},
                {"is", std::vector<int64_t>{1, -2, 3}, false},
                {"fs", std::vector<double>{0.5, std::numeric_limits<double>::infinity()}, false},
                {"bs", std::vector<int64_t>{1, 0, 1}, true},
                {"d", DType::BFloat16, false},
                {"none", std::monostate{}, false}};
  const Graph graph{"g", {{"x", DType::Int64, {2}}}, {"y"}, {}, {node}, {}};
  const std::string json = graph.to_json();
  EXPECT_NE(json.find(R"("bs":{"type":"bools","value":[true,false,true]})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("d":{"type":"dtype","value":"bfloat16"})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("inf":{"type":"float","value":"-inf"})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("none":{"type":"none"})"), std::string::npos) << json;
  EXPECT_EQ(Graph::from_json(json), graph);
}

TEST(GraphJson, FloatAttributesAcceptIntegersAndNan) {
  const Graph graph = Graph::from_json(R"({"inputs": [], "outputs": [{"name": "y"}], "nodes": [
    {"name": "n", "op_type": "ns::op", "inputs": [], "outputs": ["y"],
     "attrs": {"a": {"type": "float", "value": 2}, "b": {"type": "float", "value": "nan"}}}]})");
  EXPECT_EQ(std::get<double>(graph.nodes[0].attrs[0].value), 2.0);
  EXPECT_TRUE(std::isnan(std::get<double>(graph.nodes[0].attrs[1].value)));
}

TEST(GraphJson, OptionalFieldsDefaultToEmpty) {
  const Graph graph = Graph::from_json(R"({"inputs": [], "outputs": [], "nodes": []})");
  EXPECT_EQ(graph.name, "");
  EXPECT_TRUE(graph.constants.empty());
  EXPECT_TRUE(graph.packages.empty());
}

std::string with_node(const std::string& node) {
  return R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}], "outputs": [{"name": "y"}], "nodes": [)" +
         node + "]}";
}

TEST(GraphJson, ErrorsNameTheField) {
  struct Case {
    std::string json, message;
  };
  const std::vector<Case> cases = {
      {"{\"inputs\": [", "graph JSON: not valid JSON"},
      {"[1, 2]", "graph JSON: the document: expected an object, got array [1,2]"},
      {R"({"inputs": [], "outputs": []})", "graph JSON: the graph: missing field 'nodes'"},
      {R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2, 1.5]}], "outputs": [], "nodes": []})",
       "graph JSON: inputs[0] ('x').shape[1]: expected an integer, got number 1.5"},
      {R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [-3]}], "outputs": [], "nodes": []})",
       "graph JSON: inputs[0] ('x').shape[0]: dimension -3 is negative"},
      {R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [""]}], "outputs": [], "nodes": []})",
       "graph JSON: inputs[0] ('x').shape[0]: a symbolic dimension needs a name"},
      {R"({"inputs": [{"name": "x", "dtype": "complex32", "shape": []}], "outputs": [], "nodes": []})",
       "graph JSON: inputs[0] ('x').dtype: unknown dtype 'complex32'"},
      {R"({"inputs": [], "outputs": ["y"], "nodes": []})",
       "graph JSON: outputs[0]: expected an object, got string \"y\""},
      {with_node(R"({"name": "n", "op_type": "aten::relu", "inputs": [3], "outputs": ["y"]})"),
       "graph JSON: nodes[0] ('n').inputs[0]: expected a value name, null or a list of value names, got number 3"},
      {with_node(R"({"name": "n", "inputs": ["x"], "outputs": ["y"]})"),
       "graph JSON: nodes[0] ('n'): missing field 'op_type'"},
      {with_node(R"({"name": "n", "op_type": "aten::relu", "inputs": [["x", 7]], "outputs": ["y"]})"),
       "graph JSON: nodes[0] ('n').inputs[0][1]: expected a string, got number 7"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "complex", "value": 1}}})"),
       "graph JSON: nodes[0] ('n').attrs.k.type: unknown attribute type 'complex' (expected one of int, float, "
       "bool, str, ints, floats, bools, dtype, symint, symints, none)"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "int", "value": 1.5}}})"),
       "graph JSON: nodes[0] ('n').attrs.k.value: expected an integer, got number 1.5"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "int", "value": 9223372036854775808}}})"),
       "graph JSON: nodes[0] ('n').attrs.k.value: integer 9223372036854775808 does not fit in int64"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "bools", "value": [true, 1]}}})"),
       "graph JSON: nodes[0] ('n').attrs.k.value[1]: expected true or false, got number 1"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "ints"}}})"),
       "graph JSON: nodes[0] ('n').attrs.k: missing field 'value'"},
      {with_node(R"({"name": "n", "op_type": "op", "inputs": [], "outputs": ["y"],
                     "attrs": {"k": {"type": "none", "value": 3}}})"),
       "graph JSON: nodes[0] ('n').attrs.k: an attribute of type none has no value"},
      {R"({"inputs": [], "outputs": [], "nodes": [], "packages": "mylib"})",
       "graph JSON: packages: expected an array, got string \"mylib\""},
  };
  for (const Case& c : cases) {
    const std::string message = error_of([&] { Graph::from_json(c.json); });
    EXPECT_TRUE(message.starts_with(c.message)) << "message: " << message << "\nexpected: " << c.message;
  }
}

}  // namespace
}  // namespace opgraph
