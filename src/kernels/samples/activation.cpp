// Samples of the backward ops of the elementwise, softmax, arithmetic and
// reshaping ops (activation.cpp, softmax.cpp,
// binary_backward.cpp, reshape_backward.cpp): the gradient
// and the forward's input or output on every elementwise shape, the
// softmax dims, the corners of broadcasting (whose gradients reduce over
// the broadcast dims) and the reshapes; shapes unlike the gradient's, mixed
// and integer dtypes and attribute values the op refuses are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// (grad_output, x) of every elementwise shape with each of `attr_sets`;
// x's values in [low, high]; `second`: x's name.
std::vector<Sample> gradient_pairs(const std::string& second, const std::vector<std::vector<Attr>>& attr_sets,
                                   double low = -2, double high = 2) {
  std::vector<Sample> table;
  for (const std::vector<Attr>& attrs : attr_sets) {
    for (DType dtype : {F32, F64}) {
      for (const SampleTensor& x : elementwise_inputs(dtype, low, high)) {
        const Layout layout = x.layout == Layout::Transposed ? Layout::Strided : Layout::Contiguous;
        table.push_back(good({tensor(dtype, x.shape, layout), x}, attrs));
      }
    }
  }
  const std::vector<Attr>& attrs = attr_sets.front();
  table.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {3})},
                      second + ": expected shape [2, 3] like grad_output, got [3]", attrs));
  table.push_back(
      bad({tensor(I64, {2, 3}), tensor(I64, {2, 3})}, "grad_output: expected float32 or float64, got int64", attrs));
  table.push_back(bad({tensor(F32, {2, 3}), tensor(F64, {2, 3})},
                      second + ": expected float32 like grad_output, got float64", attrs));
  return table;
}

void register_activation_backwards(BuiltinOps& builtins) {
  // sigmoid's and tanh's backward take the forward's output, in its range.
  builtins.add_samples("aten::sigmoid_backward", gradient_pairs("output", {{}}, 0, 1));
  builtins.add_samples("aten::tanh_backward", gradient_pairs("output", {{}}, -1, 1));
  add_to_each(builtins,
              {"aten::silu_backward", "opgraph::relu_backward", "opgraph::sigmoid_backward", "opgraph::tanh_backward"},
              gradient_pairs("self", {{}}));
  builtins.add_samples(
      "aten::gelu_backward",
      with(gradient_pairs("self", {{{"approximate", std::string("none")}}, {{"approximate", std::string("tanh")}}}),
           {bad({tensor(F32, {3}), tensor(F32, {3})}, "approximate: expected \"none\" or \"tanh\", got \"x\"",
                {{"approximate", std::string("x")}})}));
  builtins.add_samples("aten::threshold_backward",
                       gradient_pairs("self", {{{"threshold", 0.5}}, {{"threshold", int64_t{0}}}}));
  builtins.add_samples("aten::hardtanh_backward", gradient_pairs("self", {{{"min_val", int64_t{-1}}, {"max_val", 1.0}},
                                                                          {{"min_val", -0.5}, {"max_val", 1.5}}}));
}

void register_softmax_backwards(BuiltinOps& builtins) {
  const std::vector<std::pair<SampleTensor, int64_t>> cases = {
      {tensor(F32, {5, 7}), -1}, {tensor(F32, {3, 4, 5}), 1}, {tensor(F32, {6, 3}, Layout::Transposed), 0},
      {tensor(F32, {4, 1}), 1},  {tensor(F32, {0, 4}), 1},    {tensor(F32, {2, 300}, Layout::Strided), 1},
      {tensor(F32, {}), 0},
  };
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    for (auto [output, dim] : cases) {
      output.dtype = dtype;
      table.push_back(good({tensor(dtype, output.shape), output.in(0, 1)}, {{"dim", dim}, {"input_dtype", dtype}}));
    }
  }
  table.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {2, 3})},
                      "dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2",
                      {{"dim", int64_t{2}}, {"input_dtype", F32}}));
  table.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {2, 3})},
                      "input_dtype: expected float32 like output (no conversion is supported), got float64",
                      {{"dim", int64_t{1}}, {"input_dtype", F64}}));
  table.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {2, 4})},
                      "grad_output: expected float32[2, 4] like output, got float32[2, 3]",
                      {{"dim", int64_t{1}}, {"input_dtype", F32}}));
  add_to_each(builtins, {"aten::_softmax_backward_data", "aten::_log_softmax_backward_data"}, table);
}

// The shape self and other broadcast to (they do: broadcasting()'s pairs).
Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

void register_arithmetic_backwards(BuiltinOps& builtins) {
  for (const char* op : {"opgraph::add_backward", "opgraph::sub_backward", "opgraph::mul_backward"}) {
    const bool alpha = std::string(op) != "opgraph::mul_backward";
    std::vector<Sample> table;
    for (const Sample& pair : broadcasting({F32, F64}, -2, 2)) {
      const SampleTensor &self = pair.inputs[0], &other = pair.inputs[1];
      std::vector<Attr> attrs;
      if (alpha) attrs.emplace_back("alpha", table.size() % 2 ? AttrValue(2.5) : AttrValue(int64_t{-1}));
      table.push_back(good({tensor(self.dtype, broadcast(self.shape, other.shape)), self, other}, attrs));
    }
    const std::string name = std::string(op).substr(9, 3);
    table.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4}), tensor(F32, {2, 3})},
                        "self and other: shapes [4] and [2, 3] cannot be broadcast together"));
    table.push_back(bad({tensor(I64, {2, 3}), tensor(I64, {2, 3}), tensor(I64, {2, 3})},
                        "self: expected float32 or float64, got int64"));
    table.push_back(bad({tensor(F32, {2, 4}), tensor(F32, {2, 3}), tensor(F32, {3})},
                        "grad_output: expected float32[2, 3] (the output of aten::" + name +
                            ".Tensor for self float32[2, 3] and other float32[3]), got float32[2, 4]"));
    builtins.add_samples(op, table);
  }
}

void register_reshape_backwards(BuiltinOps& builtins) {
  const std::string count = "grad_output: expected float32 with 24 elements like self float32[2, 3, 4], got float32[";
  builtins.add_samples(
      "opgraph::flatten_backward",
      with(
          retyped({F32, F64}, {good({tensor(F32, {2, 12}), tensor(F32, {2, 3, 4})}, {{"start_dim", int64_t{1}}}),
                               good({tensor(F32, {1}), tensor(F32, {})}), good({tensor(F32, {0}), tensor(F32, {0, 3})}),
                               good({tensor(F32, {4, 3}, Layout::Transposed), tensor(F32, {4, 3}, Layout::Strided)},
                                    {{"start_dim", int64_t{1}}})}),
          {bad({tensor(F32, {2, 11}), tensor(F32, {2, 3, 4})}, count + "2, 11]", {{"start_dim", int64_t{1}}}),
           bad({tensor(F32, {5, 4}), tensor(F32, {2, 3, 4})}, count + "5, 4]")}));
  for (const char* op : {"opgraph::reshape_backward", "opgraph::view_backward"}) {
    const std::string name = std::string(op) == "opgraph::view_backward" ? "size" : "shape";
    builtins.add_samples(
        op,
        with(retyped({F32, F64}, {good({tensor(F32, {6, 4}), tensor(F32, {2, 3, 4})}, {{name, Shape{6, -1}}}),
                                  good({tensor(F32, {1}), tensor(F32, {})}, {{name, Shape{1}}}),
                                  good({tensor(F32, {3, 0}), tensor(F32, {0, 3})}, {{name, Shape{3, 0}}}),
                                  good({tensor(F32, {12}, Layout::Strided), tensor(F32, {4, 3}, Layout::Transposed)},
                                       {{name, Shape{12}}})}),
             {bad({tensor(F32, {5, 4}), tensor(F32, {2, 3, 4})}, count + "5, 4]", {{name, Shape{5, 4}}}),
              bad({tensor(F32, {2, 11}), tensor(F32, {2, 3, 4})}, count + "2, 11]", {{name, Shape{2, 11}}})}));
  }
}

}  // namespace

void register_activation_samples(BuiltinOps& builtins) {
  register_activation_backwards(builtins);
  register_softmax_backwards(builtins);
  register_arithmetic_backwards(builtins);
  register_reshape_backwards(builtins);
}

}  // namespace opgraph::kernels::samples
