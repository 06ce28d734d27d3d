// Shapes that depend on the data: aten::nonzero in a Session, with the rest
// of the graph planned, run after run with different counts of nonzeros;
// the scalar size ops; and the errors when a kernel or a later op cannot
// go along with the sizes a run finds.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

// r = relu(x); nz = nonzero(r); rows = index_select(x, 0, nz[:, 0]);
// sums = sum(rows, 0); count = sym_size(nz, 0) over x: float32[batch, 5].
Graph nonzero_rows(const std::string& batch = "\"N\"", const std::string& extra_nodes = "",
                   const std::string& extra_outputs = "") {
  return Graph::from_json(R"({
    "name": "nonzero_rows",
    "inputs": [{"name": "x", "dtype": "float32", "shape": [)" +
                          batch + R"(, 5]}],
    "outputs": [{"name": "sums"}, {"name": "count"}, {"name": "nz"})" +
                          extra_outputs + R"(],
    "nodes": [
      {"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["r"]},
      {"name": "nonzero", "op_type": "aten::nonzero", "inputs": ["r"], "outputs": ["nz"]},
      {"name": "column", "op_type": "aten::select.int", "inputs": ["nz"], "outputs": ["col"],
       "attrs": {"dim": {"type": "int", "value": 1}, "index": {"type": "int", "value": 0}}},
      {"name": "rows", "op_type": "aten::index_select", "inputs": ["x", "col"], "outputs": ["picked"],
       "attrs": {"dim": {"type": "int", "value": 0}}},
      {"name": "sum", "op_type": "aten::sum.dim_IntList", "inputs": ["picked"], "outputs": ["sums"],
       "attrs": {"dim": {"type": "ints", "value": [0]}}},
      {"name": "count", "op_type": "aten::sym_size.int", "inputs": ["nz"], "outputs": ["count"],
       "attrs": {"dim": {"type": "int", "value": 0}}})" +
                          extra_nodes + R"(
    ]})");
}

Tensor floats(Shape shape, const std::vector<float>& values) {
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  std::memcpy(t.data(), values.data(), t.nbytes());
  return t;
}

Tensor call_one(const char* op, std::vector<Tensor> inputs, const NamedAttrs& attrs = {}) {
  return call(op, inputs, attrs)[0];
}

// The graph's outputs computed op by op with the registry's call().
std::vector<Tensor> nonzero_rows_by_calls(const Tensor& x) {
  const Tensor nz = call_one("aten::nonzero", {call_one("aten::relu", {x})});
  const Tensor col = call_one("aten::select.int", {nz}, {{"dim", int64_t{1}}, {"index", int64_t{0}}});
  const Tensor picked = call_one("aten::index_select", {x, col}, {{"dim", int64_t{0}}});
  return {call_one("aten::sum.dim_IntList", {picked}, {{"dim", std::vector<int64_t>{0}}}), nz};
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.meta() == b.meta() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(DataDependentShapes, NonzeroFindsItsSizeInEachRun) {
  const Session session(nonzero_rows(), {});
  // 0 nonzeros, then 4 of 15, then all, then 0 again: each run sizes anew.
  const std::vector<Tensor> inputs = {
      floats({3, 5}, std::vector<float>(15, -1.0f)),
      floats({3, 5}, {0, 1, 0, 0, 2, -1, -2, 0, 0, 0, 3, 0, 0, 4, 0}),
      floats({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
      floats({1, 5}, {0, 0, 0, 0, 0}),
  };
  for (const Tensor& x : inputs) {
    const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
    const std::vector<Tensor> expected = nonzero_rows_by_calls(x);
    ASSERT_EQ(outputs.size(), 3u);
    EXPECT_TRUE(same_values(outputs[0], expected[0])) << outputs[0].str() << " vs " << expected[0].str();
    EXPECT_TRUE(same_values(outputs[2], expected[1])) << outputs[2].str() << " vs " << expected[1].str();
    EXPECT_EQ(outputs[1].meta(), (TensorMeta{DType::Int64, {}}));
    EXPECT_EQ(*outputs[1].data_ptr<int64_t>(), expected[1].size(0));
  }
}

TEST(DataDependentShapes, TheCountsAreTheOnesOfTheInputs) {
  const Session session(nonzero_rows(), {});
  const Tensor x = floats({2, 5}, {0, 0, 7, 0, 0, 0, 3, 0, 0, 1});
  const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
  EXPECT_EQ(outputs[2].shape(), (Shape{3, 2}));
  const std::vector<int64_t> indices(outputs[2].data_ptr<int64_t>(), outputs[2].data_ptr<int64_t>() + 6);
  EXPECT_EQ(indices, (std::vector<int64_t>{0, 2, 1, 1, 1, 4}));
  EXPECT_EQ(*outputs[1].data_ptr<int64_t>(), 3);
  const std::vector<float> sums(outputs[0].data_ptr<float>(), outputs[0].data_ptr<float>() + 5);
  EXPECT_EQ(sums, (std::vector<float>{0, 6, 7, 0, 2}));  // rows 0, 1, 1
}

// Each run in flight finds its own sizes, in a workspace of its own.
TEST(DataDependentShapes, ConcurrentRunsFindTheirOwnSizes) {
  const Session session(nonzero_rows(), {});
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 25; ++k) {
        const int64_t batch = 1 + (t + k) % 6;
        std::vector<float> values(static_cast<size_t>(batch) * 5);
        for (size_t i = 0; i < values.size(); ++i) values[i] = (i * 7 + t + k) % 3 == 0 ? 1.0f + i : -1.0f;
        const Tensor x = floats({batch, 5}, values);
        const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
        const std::vector<Tensor> expected = nonzero_rows_by_calls(x);
        wrong += !same_values(outputs[0], expected[0]) || !same_values(outputs[2], expected[1]);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong, 0);
}

TEST(DataDependentShapes, TheRestOfTheGraphIsPlanned) {
  const Session session(nonzero_rows(), {}, {.optimize = false});
  session.run(std::vector<Tensor>{floats({3, 5}, std::vector<float>(15, 1.0f))});
  // relu's output (3 * 5 floats) is the only value in the arena: nonzero's
  // output and all after it are allocated by the run.
  EXPECT_EQ(session.planned_peak_bytes(), 64u);
}

TEST(DataDependentShapes, OutputsShapedByTheDataAreUnknownDims) {
  const Session session(nonzero_rows(), {});
  EXPECT_EQ(session.outputs()[0].type_str(), "float32[?]");
  EXPECT_EQ(session.outputs()[1].type_str(), "int64[]");
  EXPECT_EQ(session.outputs()[2].type_str(), "int64[?, ?]");
}

TEST(DataDependentShapes, ALaterOpRejectingTheRunsSizeNamesItsNode) {
  // view(nz, [10]) holds for nonzero's largest output, which loading checks,
  // and in a run only when all 5 elements are nonzero.
  const Session session(nonzero_rows("1", R"(,
      {"name": "flat", "op_type": "aten::view", "inputs": ["nz"], "outputs": ["flat"],
       "attrs": {"size": {"type": "ints", "value": [10]}}})",
                                     R"(, {"name": "flat"})"),
                        {});
  const Tensor all = floats({1, 5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(session.run(std::vector<Tensor>{all})[3].shape(), (Shape{10}));
  const std::string error = error_of([&] { session.run(std::vector<Tensor>{floats({1, 5}, {1, 1, 0, 0, 0})}); });
  EXPECT_NE(error.find("node 'flat' (aten::view)"), std::string::npos) << error;
}

// An op with data-dependent shapes whose kernel forgets to say how much it wrote.
void define_silent_op() {
  if (Registry::global().contains("test_dd::silent")) return;
  OpDef op;
  op.schema = Schema::parse("test_dd::silent(Tensor x) -> Tensor");
  op.shape_fn = [](std::span<const TensorMeta* const> inputs, const Attrs&) {
    return std::vector<TensorMeta>{*inputs[0]};
  };
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor>,
                                                        std::span<const Tensor>, const Attrs&) {};
  op.data_dependent_shapes = true;
  op.source = "test_dynamic_shapes.cpp";
  Registry::global().add(std::move(op));
}

TEST(DataDependentShapes, AKernelThatReportsNoShapeIsAnError) {
  define_silent_op();
  const Session session(Graph::from_json(R"({
    "inputs": [{"name": "x", "dtype": "float32", "shape": [3]}], "outputs": [{"name": "y"}],
    "nodes": [{"name": "quiet", "op_type": "test_dd::silent", "inputs": ["x"], "outputs": ["y"]}]})"),
                        {});
  const std::string error = error_of([&] { session.run(std::vector<Tensor>{floats({3}, {1, 2, 3})}); });
  EXPECT_NE(error.find("node 'quiet' (test_dd::silent)"), std::string::npos) << error;
  EXPECT_NE(error.find("did not report"), std::string::npos) << error;
  EXPECT_NE(error_of([&] { call_one("test_dd::silent", {floats({3}, {1, 2, 3})}); }).find("did not report"),
            std::string::npos);
}

TEST(DataDependentShapes, CallOutCannotRunThem) {
  const std::vector<Tensor> x = {floats({2}, {1, 0})}, out = {Tensor::empty({2, 1}, DType::Int64)};
  const OpDef& op = Registry::global().get("aten::nonzero");
  EXPECT_NE(error_of([&] { call_out(op, x, out, Attrs::bind(op.schema, {})); }).find("only call()"), std::string::npos);
}

TEST(DataDependentShapes, ScalarOpsGiveZeroDimTensors) {
  const Tensor x = Tensor::empty({2, 3, 7}, DType::Float32);
  auto scalar = [&](const char* op, const NamedAttrs& attrs = {}) {
    const Tensor t = call_one(op, {x}, attrs);
    EXPECT_EQ(t.meta(), (TensorMeta{DType::Int64, {}})) << op;
    return *t.data_ptr<int64_t>();
  };
  EXPECT_EQ(scalar("aten::sym_size.int", {{"dim", int64_t{-1}}}), 7);
  EXPECT_EQ(scalar("aten::sym_numel"), 42);
  EXPECT_EQ(scalar("aten::sym_stride.int", {{"dim", int64_t{0}}}), 21);
  EXPECT_EQ(scalar("aten::sym_storage_offset"), 0);
  EXPECT_NE(error_of([&] { scalar("aten::sym_size.int", {{"dim", int64_t{3}}}); }).find("dim: expected a dim in"),
            std::string::npos);
}

}  // namespace
}  // namespace opgraph
