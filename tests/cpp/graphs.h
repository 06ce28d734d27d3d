// Graphs and weights shared by the graph, .opg and session tests.
#pragma once

#include <random>
#include <string>

#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"

namespace opgraph::testing {

// conv2d(3 -> 4, 3x3) -> relu -> max_pool2d(2) -> flatten -> linear(36 -> 10)
// over x: float32[batch, 3, 8, 8].
inline Graph small_cnn(const std::string& batch = "\"N\"") {
  return Graph::from_json(R"({
    "name": "small_cnn",
    "inputs": [{"name": "x", "dtype": "float32", "shape": [)" +
                          batch + R"(, 3, 8, 8]}],
    "outputs": [{"name": "logits"}],
    "constants": [{"name": "conv.weight", "dtype": "float32", "shape": [4, 3, 3, 3]},
                  {"name": "conv.bias", "dtype": "float32", "shape": [4]},
                  {"name": "fc.weight", "dtype": "float32", "shape": [10, 36]},
                  {"name": "fc.bias", "dtype": "float32", "shape": [10]}],
    "nodes": [
      {"name": "conv", "op_type": "aten::conv2d", "inputs": ["x", "conv.weight", "conv.bias"], "outputs": ["c"],
       "attrs": {"stride": {"type": "ints", "value": [1, 1]}, "groups": {"type": "int", "value": 1}}},
      {"name": "relu", "op_type": "aten::relu", "inputs": ["c"], "outputs": ["r"]},
      {"name": "pool", "op_type": "aten::max_pool2d", "inputs": ["r"], "outputs": ["p"],
       "attrs": {"kernel_size": {"type": "ints", "value": [2, 2]}}},
      {"name": "flatten", "op_type": "aten::flatten.using_ints", "inputs": ["p"], "outputs": ["f"],
       "attrs": {"start_dim": {"type": "int", "value": 1}}},
      {"name": "fc", "op_type": "aten::linear", "inputs": ["f", "fc.weight", "fc.bias"], "outputs": ["logits"]}
    ]})");
}

// cat([sigmoid(tanh(x)), x, relu(x)], dim) -> tanh over x: float32[N, 3]. The
// relu runs first and only the cat reads it, three nodes later, as the last
// element of its list: the memory plan must keep it alive until then.
inline Graph cat_of_three(int64_t dim = 1) {
  return Graph::from_json(R"({
    "name": "cat_of_three",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 3]}],
    "outputs": [{"name": "y"}],
    "nodes": [
      {"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["r"]},
      {"name": "tanh", "op_type": "aten::tanh", "inputs": ["x"], "outputs": ["t"]},
      {"name": "sigmoid", "op_type": "aten::sigmoid", "inputs": ["t"], "outputs": ["s"]},
      {"name": "cat", "op_type": "aten::cat", "inputs": [["s", "x", "r"]], "outputs": ["c"],
       "attrs": {"dim": {"type": "int", "value": )" +
                          std::to_string(dim) + R"(}}},
      {"name": "out", "op_type": "aten::tanh", "inputs": ["c"], "outputs": ["y"]}
    ]})");
}

// Normally distributed float32 values, the same for the same seed.
inline Tensor random_tensor(Shape shape, uint32_t seed) {
  Tensor t = Tensor::empty(std::move(shape), DType::Float32);
  std::mt19937 generator(seed);
  std::normal_distribution<float> normal;
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<float>()[i] = normal(generator);
  return t;
}

inline Weights small_cnn_weights() {
  return {{"conv.weight", random_tensor({4, 3, 3, 3}, 1)},
          {"conv.bias", random_tensor({4}, 2)},
          {"fc.weight", random_tensor({10, 36}, 3)},
          {"fc.bias", random_tensor({10}, 4)}};
}

// `length` relus in a row over x: float32[shape].
inline Graph relu_chain(int length, const std::string& shape = "[64, 64]") {
  std::string nodes;
  for (int i = 0; i < length; ++i) {
    const std::string in = i == 0 ? "x" : "v" + std::to_string(i - 1);
    const std::string out = i == length - 1 ? "y" : "v" + std::to_string(i);
    nodes += (i ? "," : "") + std::string(R"({"name": "relu_)") + std::to_string(i) +
             R"(", "op_type": "aten::relu", "inputs": [")" + in + R"("], "outputs": [")" + out + R"("]})";
  }
  return Graph::from_json(R"({"name": "chain", "inputs": [{"name": "x", "dtype": "float32", "shape": )" + shape +
                          R"(}], "outputs": [{"name": "y"}], "nodes": [)" + nodes + "]}");
}

}  // namespace opgraph::testing
