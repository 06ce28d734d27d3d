// Session: loading, running against direct op calls, symbolic sizes, input
// checks, packages, concurrency, memory plans and profiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "graphs.h"
#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;
using testing::random_tensor;
using testing::small_cnn;
using testing::small_cnn_weights;
using testing::temp_path;

Tensor same(const Tensor& t) { return t; }

// `t`'s values rounded to the nearest bfloat16 (ties to even), kept in float32.
Tensor bfloat16_values(const Tensor& t) {
  Tensor r = t.clone();
  for (float& value : std::span(r.data_ptr<float>(), static_cast<size_t>(r.numel()))) {
    uint32_t bits = std::bit_cast<uint32_t>(value);
    bits += 0x7fff + ((bits >> 16) & 1);
    value = std::bit_cast<float>(bits & 0xffff0000u);
  }
  return r;
}

// The small CNN computed op by op with the registry's call(), the operands
// of its products (not their biases) passed through `operand`, but for the
// linear layer's input, passed through `linear_input` where one is given.
Tensor cnn_by_calls(const Tensor& x, const Weights& w, Tensor (*operand)(const Tensor&) = same,
                    Tensor (*linear_input)(const Tensor&) = nullptr) {
  auto run = [](const char* op, std::vector<Tensor> inputs, const NamedAttrs& attrs = {}) {
    return call(op, inputs, attrs)[0];
  };
  Tensor c = run("aten::conv2d", {operand(x), operand(w.at("conv.weight")), w.at("conv.bias")},
                 {{"stride", std::vector<int64_t>{1, 1}}, {"groups", int64_t{1}}});
  Tensor p = run("aten::max_pool2d", {run("aten::relu", {c})}, {{"kernel_size", std::vector<int64_t>{2, 2}}});
  Tensor f = run("aten::flatten.using_ints", {p}, {{"start_dim", int64_t{1}}});
  return run("aten::linear", {(linear_input ? linear_input : operand)(f), operand(w.at("fc.weight")), w.at("fc.bias")});
}

// Within `tolerance` times (1 + |want|): the Session's products may sum in
// another order than the direct calls' (its panels' tiles by blocks of 32),
// which moves an output of 65 by an ulp or two.
void expect_close(const Tensor& got, const Tensor& want, float tolerance = 1e-5f) {
  ASSERT_EQ(got.meta(), want.meta());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float expected = want.data_ptr<float>()[i];
    EXPECT_NEAR(got.data_ptr<float>()[i], expected, tolerance * (1 + std::abs(expected))) << "element " << i;
  }
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.meta() == b.meta() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(Session, RunsTheGraphAsDirectOpCallsDo) {
  const Weights weights = small_cnn_weights();
  const Session session(small_cnn("2"), weights);
  const Tensor x = random_tensor({2, 3, 8, 8}, 9);
  const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
  ASSERT_EQ(outputs.size(), 1u);
  expect_close(outputs[0], cnn_by_calls(x, weights));
}

// A convolution called directly between two runs of a Session that keeps its
// weights converted, with other weights of the same shape, changes neither
// the Session's results nor its own (the two once shared the pointer to the
// converted weights, and the call converted its weights into the Session's).
TEST(Session, DirectCallsLeaveItsConvertedWeightsAlone) {
  const Weights weights = small_cnn_weights();
  Weights others = weights;
  others["conv.weight"] = random_tensor({4, 3, 3, 3}, 5);
  const Tensor x = random_tensor({2, 3, 8, 8}, 9);
  const Tensor want_others = cnn_by_calls(x, others);

  const Session session(small_cnn("2"), weights, {.optimize = false});
  const Tensor first = session.run(std::vector<Tensor>{x})[0];
  expect_close(first, cnn_by_calls(x, weights));
  expect_close(cnn_by_calls(x, others), want_others);
  expect_close(session.run(std::vector<Tensor>{x})[0], first);
}

TEST(Session, DescribesInputsAndOutputs) {
  const Session session(small_cnn(), small_cnn_weights());
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.inputs()[0].name, "x");
  EXPECT_EQ(session.inputs()[0].type_str(), "float32[N, 3, 8, 8]");
  ASSERT_EQ(session.outputs().size(), 1u);
  EXPECT_EQ(session.outputs()[0].name, "logits");
  EXPECT_EQ(session.outputs()[0].type_str(), "float32[N, 10]");
}

TEST(Session, SymbolicBatchRunsAtAnySize) {
  const Weights weights = small_cnn_weights();
  const Session session(small_cnn(), weights, {.optimize = false});  // the plan of the graph as written
  EXPECT_EQ(session.planned_peak_bytes(), 0u);                       // no plan before the first run
  for (int64_t batch : {1, 17, 1}) {
    const Tensor x = random_tensor({batch, 3, 8, 8}, static_cast<uint32_t>(batch));
    const std::vector<Tensor> outputs = session.run({{"x", x}});
    EXPECT_EQ(outputs[0].shape(), (Shape{batch, 10}));
    // At batch 1 the Session's last product sums a packed copy of its weight
    // with fused multiply-adds, call() the weight in place: outputs near 20
    // differ in their last few bits.
    expect_close(outputs[0], cnn_by_calls(x, weights), 5e-5f);
    // conv output (4*6*6 floats) and relu output alive together, per sample.
    EXPECT_EQ(session.planned_peak_bytes(), 2 * ((batch * 144 * 4 + 63) / 64 * 64));
  }
}

// The cat_of_three graph computed op by op.
Tensor cat_of_three_by_calls(const Tensor& x, int64_t dim) {
  auto run = [](const char* op, std::vector<Tensor> inputs, const NamedAttrs& attrs = {}) {
    return call(op, inputs, attrs)[0];
  };
  const Tensor s = run("aten::sigmoid", {run("aten::tanh", {x})});
  return run("aten::tanh", {run("aten::cat", {s, x, run("aten::relu", {x})}, {{"dim", dim}})});
}

TEST(Session, RunsTensorListArguments) {
  for (int64_t dim : {0, 1}) {
    const Session session(testing::cat_of_three(dim), {});
    for (int64_t batch : {1, 6, 2}) {
      const Tensor x = random_tensor({batch, 3}, static_cast<uint32_t>(batch));
      const Tensor y = session.run(std::vector<Tensor>{x})[0];
      EXPECT_EQ(y.shape(), dim == 0 ? (Shape{3 * batch, 3}) : (Shape{batch, 9}));
      EXPECT_TRUE(same_values(y, cat_of_three_by_calls(x, dim))) << "dim " << dim << ", batch " << batch;
      // relu, tanh and sigmoid outputs (N x 3) and the cat (3N x 3) are planned.
      const size_t row = (batch * 12 + 63) / 64 * 64, joined = (batch * 36 + 63) / 64 * 64;
      EXPECT_EQ(session.naive_bytes(), 3 * row + joined);
      // The relu stays alive until the cat: it, the sigmoid and the cat at once.
      EXPECT_EQ(session.planned_peak_bytes(), 2 * row + joined);
    }
  }
}

// GPT-2's query/key/value split and causal mask: a Tensor[] return whose
// length the shape function decides, a Tensor?[] argument with a null, and an
// op that returns nothing.
Graph split_and_index() {
  return Graph::from_json(R"({
    "inputs": [{"name": "x", "dtype": "float32", "shape": [2, 6]},
               {"name": "rows", "dtype": "int64", "shape": [3]}],
    "outputs": [{"name": "q"}, {"name": "v"}, {"name": "picked"}],
    "nodes": [
      {"name": "check", "op_type": "aten::_assert_tensor_metadata", "inputs": ["x"], "outputs": [],
       "attrs": {"dtype": {"type": "dtype", "value": "float32"}}},
      {"name": "split", "op_type": "aten::split.Tensor", "inputs": ["x"], "outputs": ["q", "k", "v"],
       "attrs": {"split_size": {"type": "int", "value": 2}, "dim": {"type": "int", "value": 1}}},
      {"name": "index", "op_type": "aten::index.Tensor", "inputs": ["k", [null, "rows"]], "outputs": ["picked"]}
    ]})");
}

TEST(Session, RunsListReturnsOptionalListElementsAndNoOutputOps) {
  const Graph graph = split_and_index();
  EXPECT_EQ(Graph::from_json(graph.to_json()), graph);  // null list elements survive JSON
  const Session session(graph, {});
  const Tensor x = random_tensor({2, 6}, 7);
  Tensor rows = Tensor::empty({3}, DType::Int64);
  const int64_t picks[] = {1, 0, -1};
  std::copy(std::begin(picks), std::end(picks), rows.data_ptr<int64_t>());
  const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x, rows});
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(outputs[2].shape(), (Shape{2, 3}));
  for (int64_t r = 0; r < 2; ++r) {
    EXPECT_EQ(outputs[0].data_ptr<float>()[r * 2 + 1], x.data_ptr<float>()[r * 6 + 1]);
    EXPECT_EQ(outputs[1].data_ptr<float>()[r * 2], x.data_ptr<float>()[r * 6 + 4]);
    for (int64_t c = 0; c < 3; ++c) {  // k = x[:, 2:4]; picked = k[:, rows]
      const int64_t column = 2 + (picks[c] + 2) % 2;
      EXPECT_EQ(outputs[2].data_ptr<float>()[r * 3 + c], x.data_ptr<float>()[r * 6 + column]);
    }
  }
}

TEST(Session, ListReturnLengthMustMatchTheNode) {
  Graph graph = split_and_index();
  graph.nodes[1].outputs.pop_back();
  graph.outputs = {"q"};
  graph.nodes.pop_back();
  EXPECT_NE(error_of([&] { Session(graph, {}); }).find("the shape function returned 3 outputs, the node names 2"),
            std::string::npos)
      << error_of([&] { Session(graph, {}); });
}

TEST(Session, NullIsOnlyForOptionalListElements) {
  Graph graph = testing::cat_of_three(1);
  graph.nodes[3].inputs[0].values[1] = "";
  EXPECT_NE(error_of([&] { Session(graph, {}); })
                .find("argument 'tensors' is a Tensor[], whose elements cannot be "
                      "null"),
            std::string::npos)
      << error_of([&] { Session(graph, {}); });
}

TEST(Session, RunsByNameWithAMapOrPairs) {
  const Session session(small_cnn(), small_cnn_weights());
  const Tensor x = random_tensor({3, 3, 8, 8}, 5);
  const Tensor by_position = session.run(std::vector<Tensor>{x})[0];
  EXPECT_TRUE(same_values(session.run(std::unordered_map<std::string, Tensor>{{"x", x}})[0], by_position));
  const std::vector<std::pair<std::string, Tensor>> pairs = {{"x", x}};
  EXPECT_TRUE(same_values(session.run(pairs)[0], by_position));
}

TEST(Session, AcceptsStridedInputs) {
  const Session session(small_cnn(), small_cnn_weights());
  const Tensor wide = random_tensor({2, 3, 8, 16}, 6);
  const Tensor x = wide.slice(3, 0, 16, 2);
  ASSERT_FALSE(x.is_contiguous());
  EXPECT_TRUE(same_values(session.run(std::vector<Tensor>{x})[0], session.run(std::vector<Tensor>{x.contiguous()})[0]));
}

TEST(Session, ChecksInputs) {
  const Session session(small_cnn(), small_cnn_weights());
  auto run_error = [&](std::vector<Tensor> inputs) { return error_of([&] { session.run(inputs); }); };
  EXPECT_EQ(run_error({random_tensor({2, 4, 8, 8}, 0)}),
            "input 'x': expected float32[N, 3, 8, 8], got float32[2, 4, 8, 8]");
  EXPECT_EQ(run_error({random_tensor({2, 3, 8}, 0)}), "input 'x': expected float32[N, 3, 8, 8], got float32[2, 3, 8]");
  EXPECT_EQ(run_error({Tensor::zeros({2, 3, 8, 8}, DType::Float64)}),
            "input 'x': expected float32[N, 3, 8, 8], got float64[2, 3, 8, 8]");
  EXPECT_EQ(run_error({}), "expected 1 inputs (x), got 0");
  EXPECT_EQ(run_error({Tensor()}), "input 'x' is not given (an undefined tensor)");
  EXPECT_EQ(error_of([&] { session.run({{"y", random_tensor({1, 3, 8, 8}, 0)}}); }),
            "no input named 'y'; the graph's inputs are: x");
  EXPECT_EQ(error_of([&] { session.run(std::unordered_map<std::string, Tensor>{}); }),
            "input 'x' is missing; the graph's inputs are: x");
}

TEST(Session, ASymbolHasOneSizePerRun) {
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "a", "dtype": "float32", "shape": ["N", 4]},
                                                      {"name": "b", "dtype": "float32", "shape": ["N", 4]}],
    "outputs": [{"name": "c"}],
    "nodes": [{"name": "add", "op_type": "aten::add.Tensor", "inputs": ["a", "b"], "outputs": ["c"]}]})");
  const Session session(graph, {});
  EXPECT_EQ(error_of([&] { session.run(std::vector<Tensor>{random_tensor({2, 4}, 0), random_tensor({3, 4}, 1)}); }),
            "input 'b': expected float32[N, 4], got float32[3, 4] (N is 2, from input 'a')");
  const Tensor a = random_tensor({3, 4}, 0), b = random_tensor({3, 4}, 1);
  const Tensor c = session.run(std::vector<Tensor>{a, b})[0];
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(c.data_ptr<float>()[i], a.data_ptr<float>()[i] + b.data_ptr<float>()[i]);
}

TEST(Session, OutputsAreTheCallersOwn) {
  // y twice, and the input itself: each output has storage of its own.
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [5]}],
    "outputs": [{"name": "y"}, {"name": "y"}, {"name": "x"}, {"name": "w"}],
    "constants": [{"name": "w", "dtype": "float32", "shape": [5]}],
    "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]}]})");
  const Tensor w = random_tensor({5}, 2);
  const Session session(graph, {{"w", w}});
  const Tensor x = random_tensor({5}, 1);
  const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_FALSE(outputs[0].shares_storage_with(outputs[1]));
  EXPECT_TRUE(same_values(outputs[0], outputs[1]));
  EXPECT_FALSE(outputs[2].shares_storage_with(x));
  EXPECT_TRUE(same_values(outputs[2], x));
  EXPECT_FALSE(outputs[3].shares_storage_with(w));
  EXPECT_TRUE(same_values(outputs[3], w));
}

TEST(Session, ReusedWorkspacesKeepNothingOfTheCaller) {
  // h is an output and also feeds the next node; r lives in the arena.
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [6]}],
    "outputs": [{"name": "h"}, {"name": "y"}],
    "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["h"]},
              {"name": "twice", "op_type": "aten::add.Tensor", "inputs": ["h", "h"], "outputs": ["r"]},
              {"name": "more", "op_type": "aten::add.Tensor", "inputs": ["r", "h"], "outputs": ["y"]}]})");
  const Session session(graph, {});
  const Tensor first_x = random_tensor({6}, 1), second_x = random_tensor({6}, 2);
  const std::vector<Tensor> first = session.run(std::vector<Tensor>{first_x});
  const std::vector<Tensor> first_values = {first[0].clone(), first[1].clone()};
  const std::vector<Tensor> second = session.run(std::vector<Tensor>{second_x});
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(same_values(first[k], first_values[k])) << "output " << k << " changed by the next run";
    EXPECT_FALSE(first[k].shares_storage_with(second[k]));
    EXPECT_EQ(second[k].storage_use_count(), 1) << "output " << k << " is still held by the session";
  }
  for (int64_t i = 0; i < 6; ++i) {
    const float h = std::max(second_x.data_ptr<float>()[i], 0.0f);
    EXPECT_EQ(second[0].data_ptr<float>()[i], h);
    EXPECT_EQ(second[1].data_ptr<float>()[i], 3 * h);
  }
  EXPECT_EQ(second_x.storage_use_count(), 1) << "the input is still held by the session";
}

// An op declared to reshape its input whose shape function disagrees: the
// Session refuses to share the input's memory with an output that does not
// hold the input's elements, naming the node.
TEST(Session, AReshapeThatChangesTheElementCountIsRefused) {
  if (Registry::global().find("test_session::grows") == nullptr) {
    OpDef op;
    op.schema = Schema::parse("test_session::grows(Tensor self) -> Tensor");
    op.shape_fn = [](std::span<const TensorMeta* const> in, const Attrs&) {
      return std::vector<TensorMeta>{{in[0]->dtype, {in[0]->numel() + 1}}};
    };
    op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor>,
                                                          std::span<const Tensor>, const Attrs&) {};
    op.reshapes_input = true;
    op.source = "test_session.cpp";
    Registry::global().add(std::move(op));
  }
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
    "outputs": [{"name": "z"}],
    "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]},
              {"name": "grow", "op_type": "test_session::grows", "inputs": ["y"], "outputs": ["g"]},
              {"name": "neg", "op_type": "aten::neg", "inputs": ["g"], "outputs": ["z"]}]})");
  const std::string message = error_of([&] { Session(graph, {}); });
  EXPECT_NE(message.find("its op is defined to reshape its input, but its output float32[5] does not hold the "
                         "elements of that input's float32[4]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("grow"), std::string::npos) << message;
}

TEST(Session, AnOutputLetGoOfIsReusedByALaterRun) {
  const Session session(testing::relu_chain(3), {});
  const Tensor x = random_tensor({64, 64}, 4);
  Tensor y = session.run(std::vector<Tensor>{x})[0];
  const void* address = y.data();
  const Tensor held = session.run(std::vector<Tensor>{x})[0];  // y still held: another buffer
  EXPECT_NE(held.data(), address);
  y = Tensor();
  const Tensor again = session.run(std::vector<Tensor>{random_tensor({64, 64}, 5)})[0];
  EXPECT_EQ(again.data(), address);
  EXPECT_EQ(again.storage_use_count(), 1);
  EXPECT_TRUE(same_values(held, session.run(std::vector<Tensor>{x})[0]));  // held was not written since
}

TEST(Session, ChecksTheWeights) {
  Weights weights = small_cnn_weights();
  weights.erase("fc.weight");
  EXPECT_EQ(error_of([&] { Session(small_cnn(), weights); }),
            "no weight given for constant 'fc.weight' (float32[10, 36])");
  weights["fc.weight"] = random_tensor({36, 10}, 0);
  EXPECT_EQ(error_of([&] { Session(small_cnn(), weights); }),
            "weight 'fc.weight' is float32[36, 10]; the graph declares float32[10, 36]");
  weights = small_cnn_weights();
  weights["extra"] = random_tensor({1}, 0);
  EXPECT_EQ(error_of([&] { Session(small_cnn(), weights); }), "weight 'extra' is not a constant of the graph");
}

TEST(Session, VerifiesTheGraphAtLoad) {
  Graph graph = small_cnn();
  graph.nodes[1].op_type = "mylib::swish";
  EXPECT_EQ(error_of([&] { Session(graph, small_cnn_weights()); }),
            "missing ops: [1] mylib::swish (node relu); load the op packages that provide them (the graph lists no "
            "packages)");
}

TEST(Session, LoadsFromAnOpgFile) {
  const std::string path = temp_path("session.opg");
  const Weights weights = small_cnn_weights();
  save_opg(path, small_cnn(), weights);
  const Session session(path);
  std::filesystem::remove(path);
  const Tensor x = random_tensor({4, 3, 8, 8}, 3);
  expect_close(session.run(std::vector<Tensor>{x})[0], cnn_by_calls(x, weights));
}

// scale (factor 3) -> relu, from the test op package.
Graph package_graph(const std::string& package) {
  return Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float64", "shape": [5]}],
    "outputs": [{"name": "y"}],
    "nodes": [{"name": "scale", "op_type": "test_ops::scale", "inputs": ["x"], "outputs": ["s"],
               "attrs": {"factor": {"type": "float", "value": 3}}},
              {"name": "relu", "op_type": "aten::relu", "inputs": ["s"], "outputs": ["y"]}],
    "packages": [")" + package +
                          R"("]})");
}

const std::string kPackageDir = std::filesystem::path(OPGRAPH_TEST_PACKAGE).parent_path().string();

TEST(Session, LoadsThePackagesTheGraphNames) {
  const Session session(package_graph("opgraph_test_ops"), {}, {.package_paths = {"/nonexistent", kPackageDir}});
  Tensor x = Tensor::empty({5}, DType::Float64);
  for (int i = 0; i < 5; ++i) x.data_ptr<double>()[i] = i - 2.0;
  const Tensor y = session.run(std::vector<Tensor>{x})[0];
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y.data_ptr<double>()[i], std::max(0.0, 3.0 * (i - 2)));
  // A package given as a path needs no search.
  EXPECT_NO_THROW(Session(package_graph(OPGRAPH_TEST_PACKAGE), {}));
}

TEST(Session, AMissingPackageSaysWhereItLooked) {
  EXPECT_EQ(error_of([] { Session(package_graph("nopkg"), {}, {.package_paths = {"/opt/a", "/opt/b"}}); }),
            "op package 'nopkg' not found: looked for libnopkg.so, nopkg.so, nopkg in /opt/a, /opt/b; add the folder "
            "that holds it to package_paths");
  EXPECT_EQ(error_of([] { Session(package_graph("nopkg"), {}); }),
            "op package 'nopkg' not found: looked for libnopkg.so, nopkg.so, nopkg in no folders (package_paths is "
            "empty); add the folder that holds it to package_paths");
}

TEST(Session, KernelErrorsNameTheNode) {
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
    "outputs": [{"name": "y"}],
    "nodes": [{"name": "refuse", "op_type": "test_ops::fail", "inputs": ["x"], "outputs": ["y"]}],
    "packages": [")" + std::string(OPGRAPH_TEST_PACKAGE) +
                                       R"("]})");
  const Session session(graph, {});
  const std::string message = error_of([&] { session.run(std::vector<Tensor>{random_tensor({2}, 0)}); });
  EXPECT_TRUE(message.starts_with("node 'refuse' (test_ops::fail): ")) << message;
  EXPECT_NE(message.find("kernel refused float32[2]"), std::string::npos) << message;
}

TEST(Session, ThreadCountsAgree) {
  const Weights weights = small_cnn_weights();
  const Tensor x = random_tensor({5, 3, 8, 8}, 4);
  const Tensor one = Session(small_cnn(), weights, {.threads = 1}).run(std::vector<Tensor>{x})[0];
  const Tensor two = Session(small_cnn(), weights, {.threads = 2}).run(std::vector<Tensor>{x})[0];
  expect_close(one, two);
  EXPECT_EQ(error_of([&] { Session(small_cnn(), weights, {.threads = -1}); }),
            "SessionOptions::threads must be 0 (the global pool) or a count, got -1");
}

TEST(Session, ConcurrentRunsAreSafeAndDeterministic) {
  // Five ops, an intra-op pool of two threads shared by every run, and each
  // calling thread with a batch size of its own, so that plans are made
  // concurrently too. Every output must be the bits a run alone gives.
  const Session session(small_cnn(), small_cnn_weights(), {.threads = 2});
  constexpr int kThreads = 8, kRuns = 200;
  std::vector<Tensor> inputs, expected;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor({t % 4 + 1, 3, 8, 8}, 100 + t));
    expected.push_back(session.run(std::vector<Tensor>{inputs.back()})[0]);
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        if (!same_values(session.run(std::vector<Tensor>{inputs[t]})[0], expected[t])) ++mismatches[t];
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t << " of " << kThreads;
}

TEST(Session, OptimizeFusesTheReluIntoTheConvolution) {
  const Weights weights = small_cnn_weights();
  const Session session(small_cnn(), weights);
  std::vector<std::string> ops;
  for (const Node& node : session.graph().nodes) ops.push_back(node.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"opgraph::conv2d", "aten::max_pool2d", "aten::flatten.using_ints",
                                           "aten::linear"}));
  EXPECT_EQ(session.graph().nodes[0].outputs[0], "r");  // what the relu wrote
  const Tensor x = random_tensor({3, 3, 8, 8}, 5);
  expect_close(session.run({{"x", x}})[0], cnn_by_calls(x, weights));
}

// WeightQuantization int8 keeps the linear layer's weight as int8 (the
// convolution's stays float32): the outputs move by about its rounding.
TEST(Session, Int8WeightsQuantizeTheLinearLayer) {
  const Weights weights = small_cnn_weights();
  const auto error = [&](WeightQuantization quantization) {
    return error_of([&] { Session(small_cnn(), weights, {.weights = quantization}); });
  };
  EXPECT_EQ(error({.bits = 2}), "weights: expected float32 (0 bits), int8 (8 bits) or int4 (4 bits), got 2 bits");
  if (cpu_capability() == CpuCapability::Default) {
    EXPECT_EQ(error({.bits = 8}),
              detail::concat("weights int8: needs a CPU with AVX2 and FMA or with AVX-512; this one runs ",
                             cpu_capability_name(cpu_capability())));
    GTEST_SKIP() << "int8 weights need AVX2 or AVX-512, which this CPU (or OPGRAPH_CPU_CAPABILITY) lacks";
  }
  EXPECT_EQ(error({.bits = 8, .group_size = 48}),
            "weights int8: group size expected 0 (a scale per output channel) or a positive multiple of 32, got 48");
  const Tensor x = random_tensor({3, 3, 8, 8}, 5);
  const Tensor got = Session(small_cnn(), weights, {.weights = {.bits = 8}}).run({{"x", x}})[0];
  const Tensor float32 = cnn_by_calls(x, weights);
  float largest = 0, difference = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    largest = std::max(largest, std::abs(float32.data_ptr<float>()[i]));
    difference = std::max(difference, std::abs(got.data_ptr<float>()[i] - float32.data_ptr<float>()[i]));
  }
  EXPECT_GT(difference, 0.0f) << "the linear layer should multiply by int8 levels, not its float32 weight";
  EXPECT_LT(difference, 0.02f * largest);
}

// Precision::BFloat16 rounds the operands of the convolution and of the
// linear layer, the activation between them included, and sums in float32.
TEST(Session, Bf16PrecisionRoundsTheOperandsOfProductsWithWeights) {
  if (!cpu_has_bf16()) GTEST_SKIP() << "this CPU does not multiply bfloat16 (AVX-512 BF16 or AMX)";
  const Weights weights = small_cnn_weights();
  const Tensor x = random_tensor({9, 3, 8, 8}, 5);
  const Session session(small_cnn(), weights, {.precision = Precision::BFloat16});
  const Tensor got = session.run({{"x", x}})[0];
  expect_close(got, cnn_by_calls(x, weights, bfloat16_values));
  // A linear layer of a few rows (decoding steps) streams its bfloat16
  // weight at memory speed with its input as it is (few_rows_product.h).
  const Tensor few = x.slice(0, 0, 3).contiguous();
  expect_close(session.run({{"x", few}})[0], cnn_by_calls(few, weights, bfloat16_values, same));
  const Tensor float32 = cnn_by_calls(x, weights);
  float largest = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    largest = std::max(largest, std::abs(got.data_ptr<float>()[i] - float32.data_ptr<float>()[i]));
  }
  EXPECT_GT(largest, 1e-4f) << "the float32 products should miss the rounded ones by bfloat16's rounding";
}

TEST(Session, PlansReuseMemoryAlongAChain) {
  const Session session(testing::relu_chain(8), {});
  // 7 intermediates of 64*64 floats; a chain needs two at a time.
  EXPECT_EQ(session.naive_bytes(), 7u * 16384);
  EXPECT_EQ(session.planned_peak_bytes(), 2u * 16384);
  Tensor x = random_tensor({64, 64}, 8);
  const Tensor y = session.run(std::vector<Tensor>{x})[0];
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.data_ptr<float>()[i], std::max(0.0f, x.data_ptr<float>()[i]));
}

// Reshapes of an intermediate value and of a constant, which share their
// input's memory, a value whose memory is free for reuse only once its
// reshape has been read (c would otherwise be planned over a), and reshapes
// handed to the caller, which are copies of their own.
Graph reshapes() {
  return Graph::from_json(R"({
    "inputs": [{"name": "x", "dtype": "float32", "shape": [4, 6]}],
    "constants": [{"name": "w", "dtype": "float32", "shape": [24]}],
    "outputs": [{"name": "out"}, {"name": "a_out"}],
    "nodes": [
      {"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["a"]},
      {"name": "view_a", "op_type": "aten::view", "inputs": ["a"], "outputs": ["b"],
       "attrs": {"size": {"type": "ints", "value": [2, 12]}}},
      {"name": "neg", "op_type": "aten::neg", "inputs": ["x"], "outputs": ["c"]},
      {"name": "view_c", "op_type": "aten::reshape", "inputs": ["c"], "outputs": ["d"],
       "attrs": {"shape": {"type": "ints", "value": [2, 12]}}},
      {"name": "add", "op_type": "aten::add.Tensor", "inputs": ["b", "d"], "outputs": ["e"]},
      {"name": "view_w", "op_type": "aten::view", "inputs": ["w"], "outputs": ["w2"],
       "attrs": {"size": {"type": "ints", "value": [2, 12]}}},
      {"name": "mul", "op_type": "aten::mul.Tensor", "inputs": ["e", "w2"], "outputs": ["f"]},
      {"name": "flatten", "op_type": "aten::flatten.using_ints", "inputs": ["f"], "outputs": ["out"]},
      {"name": "unsqueeze", "op_type": "aten::unsqueeze", "inputs": ["b"], "outputs": ["a_out"],
       "attrs": {"dim": {"type": "int", "value": 0}}}
    ]})");
}

TEST(Session, ReshapesShareTheirInputsMemory) {
  const Weights weights = {{"w", random_tensor({24}, 1)}};
  const Session session(reshapes(), weights);
  const Tensor x = random_tensor({4, 6}, 2);
  const std::vector<Tensor> first = session.run(std::vector<Tensor>{x});
  // Only relu's, neg's, add's and mul's outputs (24 floats each) are buffers.
  EXPECT_EQ(session.naive_bytes(), 4u * 128);
  const float* in = x.data_ptr<float>();
  const float* w = weights.at("w").data_ptr<float>();
  ASSERT_EQ(first[0].shape(), (Shape{24}));
  ASSERT_EQ(first[1].shape(), (Shape{1, 2, 12}));
  for (int64_t i = 0; i < 24; ++i) {
    EXPECT_EQ(first[0].data_ptr<float>()[i], (std::max(in[i], 0.0f) - in[i]) * w[i]) << i;
    EXPECT_EQ(first[1].data_ptr<float>()[i], std::max(in[i], 0.0f)) << i;
  }
  // The outputs are the caller's: a second run leaves them as they were.
  const std::vector<Tensor> kept = {first[0].clone(), first[1].clone()};
  session.run(std::vector<Tensor>{random_tensor({4, 6}, 3)});
  EXPECT_TRUE(same_values(first[0], kept[0]));
  EXPECT_TRUE(same_values(first[1], kept[1]));
}

// Likewise for an op declared to write its output over an input.
TEST(Session, AnInPlaceOutputThatChangesTheElementCountIsRefused) {
  if (Registry::global().find("test_session::grows_in_place") == nullptr) {
    OpDef op;
    op.schema = Schema::parse("test_session::grows_in_place(Tensor self) -> Tensor");
    op.shape_fn = [](std::span<const TensorMeta* const> in, const Attrs&) {
      return std::vector<TensorMeta>{{in[0]->dtype, {in[0]->numel() + 1}}};
    };
    op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor>,
                                                          std::span<const Tensor>, const Attrs&) {};
    op.in_place_input = 0;
    op.source = "test_session.cpp";
    Registry::global().add(std::move(op));
  }
  const Graph graph = Graph::from_json(R"({"inputs": [{"name": "x", "dtype": "float32", "shape": [4]}],
    "outputs": [{"name": "z"}],
    "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]},
              {"name": "grow", "op_type": "test_session::grows_in_place", "inputs": ["y"], "outputs": ["g"]},
              {"name": "neg", "op_type": "aten::neg", "inputs": ["g"], "outputs": ["z"]}]})");
  const std::string message = error_of([&] { Session(graph, {}); });
  EXPECT_NE(message.find("its op is defined to write over an input, but its output float32[5] does not hold the "
                         "elements of that input's float32[4]"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("grow"), std::string::npos) << message;
}

// test_session::add_into(self, other) = self + other, which may be written
// over `other`; counts the calls that were.
int add_into_in_place_calls = 0;

void define_add_into() {
  if (Registry::global().find("test_session::add_into") != nullptr) return;
  OpDef op;
  op.schema = Schema::parse("test_session::add_into(Tensor self, Tensor other) -> Tensor");
  op.shape_fn = [](std::span<const TensorMeta* const> in, const Attrs&) { return std::vector<TensorMeta>{*in[1]}; };
  op.kernels[static_cast<size_t>(DeviceType::CPU)] = [](const KernelContext&, std::span<const Tensor> in,
                                                        std::span<const Tensor> out, const Attrs&) {
    if (out[0].data() == in[1].data()) ++add_into_in_place_calls;
    for (int64_t i = 0; i < out[0].numel(); ++i) {
      out[0].data_ptr<float>()[i] = in[0].data_ptr<float>()[i] + in[1].data_ptr<float>()[i];
    }
  };
  op.in_place_input = 1;
  op.source = "test_session.cpp";
  Registry::global().add(std::move(op));
}

// Written over `other` where nothing reads it after: c (read by the node
// alone) and e (read before it too); not over a value read later (a), over
// one the node also reads as `self` (f), over the graph's input, or into an
// output handed to the caller.
TEST(Session, AnOutputIsWrittenOverAnInputNothingReadsAfter) {
  define_add_into();
  const Session session(Graph::from_json(R"({
    "inputs": [{"name": "x", "dtype": "float32", "shape": [24]}],
    "outputs": [{"name": "out"}, {"name": "from_x"}],
    "nodes": [
      {"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["a"]},
      {"name": "neg", "op_type": "aten::neg", "inputs": ["x"], "outputs": ["c"]},
      {"name": "over_c", "op_type": "test_session::add_into", "inputs": ["a", "c"], "outputs": ["e"]},
      {"name": "neg_e", "op_type": "aten::neg", "inputs": ["e"], "outputs": ["g"]},
      {"name": "over_e", "op_type": "test_session::add_into", "inputs": ["g", "e"], "outputs": ["h"]},
      {"name": "keeps_a", "op_type": "test_session::add_into", "inputs": ["h", "a"], "outputs": ["f"]},
      {"name": "reads_f_twice", "op_type": "test_session::add_into", "inputs": ["f", "f"], "outputs": ["k"]},
      {"name": "keeps_x", "op_type": "test_session::add_into", "inputs": ["k", "x"], "outputs": ["m"]},
      {"name": "out", "op_type": "test_session::add_into", "inputs": ["a", "m"], "outputs": ["out"]},
      {"name": "to_caller", "op_type": "test_session::add_into", "inputs": ["a", "a"], "outputs": ["from_x"]}
    ]})"),
                        {});
  const Tensor x = random_tensor({24}, 4);
  add_into_in_place_calls = 0;
  const std::vector<Tensor> outputs = session.run(std::vector<Tensor>{x});
  EXPECT_EQ(add_into_in_place_calls, 2);  // over_c and over_e
  for (int64_t i = 0; i < 24; ++i) {
    const float v = x.data_ptr<float>()[i], a = std::max(v, 0.0f), e = a - v, h = -e + e, f = h + a, m = f + f + v;
    EXPECT_EQ(outputs[0].data_ptr<float>()[i], a + m) << i;
    EXPECT_EQ(outputs[1].data_ptr<float>()[i], a + a) << i;
  }
}

TEST(Session, ProfilesEveryNodeOfEveryRun) {
  const Session session(small_cnn(), small_cnn_weights(), {.profile = true, .optimize = false});
  for (int r = 0; r < 3; ++r) session.run(std::vector<Tensor>{random_tensor({2, 3, 8, 8}, r)});
  const std::vector<ProfileEvent> events = session.profile_events();
  ASSERT_EQ(events.size(), 15u);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].node, i % 5);
    EXPECT_EQ(events[i].run, i / 5);
    EXPECT_GE(events[i].duration_us, 0.0);
  }
  EXPECT_EQ(events[0].shapes, "float32[2, 3, 8, 8], float32[4, 3, 3, 3], float32[4] -> float32[2, 4, 6, 6]");

  const std::string path = temp_path("trace.json");
  session.write_chrome_trace(path);
  std::ifstream in(path);
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  const nlohmann::json& trace_events = trace.at("traceEvents");
  ASSERT_EQ(trace_events.size(), 15u);
  EXPECT_EQ(trace_events[0]["name"], "conv");
  EXPECT_EQ(trace_events[0]["ph"], "X");
  EXPECT_EQ(trace_events[0]["args"]["op"], "aten::conv2d");
  EXPECT_EQ(trace_events[4]["args"]["shapes"], "float32[2, 36], float32[10, 36], float32[10] -> float32[2, 10]");
  for (const auto& event : trace_events) {
    for (const char* key : {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}) {
      EXPECT_TRUE(event.contains(key)) << key;
    }
  }

  session.clear_profile_events();
  EXPECT_TRUE(session.profile_events().empty());
  session.run(std::vector<Tensor>{random_tensor({2, 3, 8, 8}, 3)});
  const std::vector<ProfileEvent> after_clear = session.profile_events();
  ASSERT_EQ(after_clear.size(), 5u);
  EXPECT_EQ(after_clear[0].run, 3u);
}

TEST(Session, ProfilesNothingUnlessAsked) {
  const Session session(small_cnn(), small_cnn_weights());
  session.run(std::vector<Tensor>{random_tensor({1, 3, 8, 8}, 0)});
  EXPECT_TRUE(session.profile_events().empty());
}

}  // namespace
}  // namespace opgraph
