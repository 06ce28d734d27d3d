// Sizes computed from symbolic dimensions: the expression evaluator, the
// symint(s) attributes of the graph JSON, and a Session evaluating them for
// each run's sizes.
#include <gtest/gtest.h>

#include <cstring>

#include "graph/dim_expression.h"
#include "graphs.h"
#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

TEST(DimExpression, EvaluatesWithPythonsFloorDivisionAndModulo) {
  const DimBindings dims{{"s0", 7}, {"s1", 3}};
  EXPECT_EQ(evaluate_dim_expression("s0", dims), 7);
  EXPECT_EQ(evaluate_dim_expression("(s0)*(4) + (-1)", dims), 27);
  EXPECT_EQ(evaluate_dim_expression("(s0 + s1)//(2)", dims), 5);
  EXPECT_EQ(evaluate_dim_expression("(-7)//(2)", dims), -4);   // floor, not truncation
  EXPECT_EQ(evaluate_dim_expression("(-7)%(3)", dims), 2);     // the divisor's sign
  EXPECT_EQ(evaluate_dim_expression("s0 - s1 - 1", dims), 3);  // left to right
  EXPECT_EQ(evaluate_dim_expression("2*s1*s1", dims), 18);
}

TEST(DimExpression, ErrorsNameTheExpression) {
  const DimBindings dims{{"s0", 7}};
  EXPECT_EQ(error_of([&] { evaluate_dim_expression("s0*u9", dims); }),
            "size expression 's0*u9': the symbol 'u9' is not a dimension of the graph's inputs at position 5");
  EXPECT_EQ(error_of([&] { evaluate_dim_expression("s0//(s0 - 7)", dims); }),
            "size expression 's0//(s0 - 7)': division by zero at position 12");
  EXPECT_EQ(error_of([&] { evaluate_dim_expression("(s0", dims); }),
            "size expression '(s0': expected ')' at position 3");
  EXPECT_EQ(error_of([&] { evaluate_dim_expression("s0 s0", dims); }),
            "size expression 's0 s0': unexpected 's' at position 3");
}

// x: float32[N, 6] -> view(x, [N * 3, 2]) -> y
constexpr const char* kSymbolicView = R"json({
  "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 6]}],
  "outputs": [{"name": "y"}],
  "nodes": [{"name": "view", "op_type": "aten::view", "inputs": ["x"], "outputs": ["y"],
             "attrs": {"size": {"type": "symints", "value": ["(N)*(3)", 2]}}}]
})json";

TEST(DimExpression, SymintAttributesRoundTrip) {
  const Graph graph = Graph::from_json(kSymbolicView);
  const NodeAttr& size = graph.nodes[0].attrs[0];
  EXPECT_EQ(size.expressions, (std::vector<std::string>{"(N)*(3)", ""}));
  EXPECT_NE(graph.to_json().find(R"json({"type":"symints","value":["(N)*(3)",2]})json"), std::string::npos);
  EXPECT_EQ(Graph::from_json(graph.to_json()), graph);
}

TEST(DimExpression, AnEmptyExpressionIsAnErrorNamingTheField) {
  std::string json = kSymbolicView;
  json.replace(json.find("\"(N)*(3)\""), 9, "\"\"");
  EXPECT_EQ(error_of([&] { Graph::from_json(json); }),
            "graph JSON: nodes[0] ('view').attrs.size.value[0]: an empty size expression");
}

TEST(DimExpression, TheSessionEvaluatesThemForEachRun) {
  const Session session(Graph::from_json(kSymbolicView), {});
  for (int64_t batch : {1, 4, 2}) {
    const Tensor x = testing::random_tensor({batch, 6}, static_cast<uint32_t>(batch));
    const Tensor y = session.run(std::vector<Tensor>{x})[0];
    EXPECT_EQ(y.shape(), (Shape{batch * 3, 2}));
    EXPECT_EQ(std::memcmp(y.data(), x.data(), x.nbytes()), 0);
  }
}

TEST(DimExpression, AnUnknownSymbolIsAnErrorAtLoadNamingTheNode) {
  std::string json = kSymbolicView;
  json.replace(json.find("(N)*(3)"), 7, "(M)*(3)");
  EXPECT_EQ(error_of([&] { Session(Graph::from_json(json), {}); }),
            "node 'view' (aten::view): size expression '(M)*(3)': the symbol 'M' is not a dimension of the graph's "
            "inputs at position 2 (shapes inferred with trial sizes N=192 for the symbolic dimensions)");
}

}  // namespace
}  // namespace opgraph
