// Samples of the matrix products (matmul.cpp, product.cpp, gemm.cpp,
// distance.cpp): square and skinny, empty inner and outer sizes, transposed
// operands, a batch, the added term broadcast, the fused activations and
// the backward ops, pairwise distances in several norms; inner sizes that
// differ, ranks the op does not take, integer operands and unknown
// activations are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

// (m x k) @ (k x n) cases as pairs of shapes, each transposed or not.
std::vector<Sample> products(std::initializer_list<DType> dtypes) {
  const std::vector<std::pair<SampleTensor, SampleTensor>> cases = {
      {tensor(F32, {3, 4}), tensor(F32, {4, 5})},
      {tensor(F32, {1, 1}), tensor(F32, {1, 1})},
      {tensor(F32, {0, 4}), tensor(F32, {4, 2})},
      {tensor(F32, {3, 0}), tensor(F32, {0, 2})},
      {tensor(F32, {17, 33}, Layout::Transposed), tensor(F32, {33, 9})},
      {tensor(F32, {8, 64}), tensor(F32, {64, 70}, Layout::Transposed)},
  };
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (auto [a, b] : cases) {
      a.dtype = b.dtype = dtype;
      table.push_back(good({a, b}));
    }
  }
  return table;
}

const char* const activations[] = {"none", "relu", "gelu", "gelu_tanh", "sigmoid", "tanh", "relu6", "silu"};

// `table` with each good sample's activation the next of `activations`.
std::vector<Sample> activated(std::vector<Sample> table) {
  size_t next = 0;
  for (Sample& sample : table) {
    if (sample.good())
      sample.attrs.emplace_back("activation", std::string(activations[next++ % std::size(activations)]));
  }
  return table;
}

const std::string unknown_activation =
    "activation: expected one of \"none\", \"relu\", \"gelu\", \"gelu_tanh\", \"sigmoid\", \"tanh\", \"relu6\", "
    "\"silu\", got \"mish\"";

void register_fused_samples(BuiltinOps& builtins) {
  // a @ b (+ bias), activated; bias None on every other product.
  std::vector<Sample> gemm;
  for (const Sample& product : products({F32, F64})) {
    const int64_t n = product.inputs[1].shape[1];
    const DType dtype = product.inputs[0].dtype;
    gemm.push_back(
        good({product.inputs[0], product.inputs[1], gemm.size() % 2 ? SampleTensor::absent() : tensor(dtype, {n})}));
  }
  gemm = activated(gemm);
  gemm.push_back(
      bad({tensor(F32, {2, 3}), tensor(F32, {4, 4}), SampleTensor::absent()}, "inner dimensions 3 and 4 differ"));
  gemm.push_back(bad({tensor(F32, {2, 3, 3}), tensor(F32, {3, 4}), SampleTensor::absent()},
                     "a: expected rank 2, got float32[2, 3, 3]"));
  gemm.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {3, 4}), SampleTensor::absent()}, unknown_activation,
                     {{"activation", std::string("mish")}}));
  builtins.add_samples("opgraph::gemm", gemm);

  // The backward of gemm: the gradient and the forward's output, shaped like
  // a @ b. The fast kernel takes f'(z) from that output where f allows
  // (relu, sigmoid, tanh, relu6), the reference from z = a @ b + bias, so
  // they agree only on an output that is the forward's, which random
  // samples are not: the samples take the activations whose derivative
  // both compute from z (none, and gelu and silu, which the fast kernel
  // recomputes).
  std::vector<Sample> gemm_backward;
  for (const Sample& forward : gemm) {
    if (!forward.good()) continue;
    const Shape out = {forward.inputs[0].shape[0], forward.inputs[1].shape[1]};
    const DType dtype = forward.inputs[0].dtype;
    Sample sample = forward;
    sample.inputs.insert(sample.inputs.begin(), tensor(dtype, out));
    sample.inputs.push_back(tensor(dtype, out));
    const char* const from_z[] = {"none", "gelu", "silu"};
    sample.attrs = {{"activation", std::string(from_z[gemm_backward.size() % std::size(from_z)])}};
    gemm_backward.push_back(std::move(sample));
  }
  gemm_backward.push_back(
      bad({tensor(F32, {2, 5}), tensor(F32, {2, 3}), tensor(F32, {3, 4}), SampleTensor::absent(), tensor(F32, {2, 4})},
          "grad_output: expected float32[2, 4] like gemm's output, got float32[2, 5]"));
  gemm_backward.push_back(
      bad({tensor(F32, {2, 4}), tensor(F32, {2, 3}), tensor(F32, {3, 4}), SampleTensor::absent(), tensor(F32, {2, 4})},
          unknown_activation, {{"activation", std::string("mish")}}));
  builtins.add_samples("opgraph::gemm_backward", gemm_backward);

  // opgraph::linear and its backward take aten::linear's operands; the
  // forward also a residual shaped like its output on every other sample,
  // and a multiplier on every third.
  std::vector<Sample> linear = activated(builtins.samples("aten::linear"));
  for (size_t i = 0; i < linear.size(); ++i) {
    Sample& sample = linear[i];
    Shape out = sample.inputs[0].shape;
    if (!out.empty()) out.back() = sample.inputs[1].shape[0];
    const DType dtype = sample.inputs[0].dtype;
    sample.inputs.push_back(sample.good() && i % 2 == 0 ? tensor(dtype, out) : SampleTensor::absent());
    sample.inputs.push_back(sample.good() && i % 3 == 0 ? tensor(dtype, out) : SampleTensor::absent());
  }
  const SampleTensor none = SampleTensor::absent();
  linear.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4, 3}), none, none, none}, unknown_activation,
                       {{"activation", std::string("mish")}}));
  linear.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4, 3}), none, tensor(F32, {2, 3}), none},
                       "residual: expected float32[2, 4] like the product, got float32[2, 3]",
                       {{"activation", std::string("none")}}));
  linear.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4, 3}), none, none, tensor(F64, {2, 4})},
                       "multiplier: expected float32[2, 4] like the product, got float64[2, 4]",
                       {{"activation", std::string("none")}}));
  builtins.add_samples("opgraph::linear", linear);

  std::vector<Sample> linear_backward;
  for (const Sample& forward : builtins.samples("aten::linear")) {
    if (!forward.good()) continue;
    Shape out = forward.inputs[0].shape;
    out.back() = forward.inputs[1].shape[0];
    Sample sample = forward;
    sample.inputs.insert(sample.inputs.begin(), tensor(forward.inputs[0].dtype, out));
    linear_backward.push_back(std::move(sample));
  }
  linear_backward.push_back(bad({tensor(F32, {2, 5}), tensor(F32, {2, 3}), tensor(F32, {4, 3}), SampleTensor::absent()},
                                "grad_output: expected float32[2, 4] like linear's output, got float32[2, 5]"));
  linear_backward.push_back(
      bad({tensor(F32, {2, 4}), tensor(F32, {2, 3}), tensor(F32, {4, 4}), SampleTensor::absent()}, "differ"));
  builtins.add_samples("opgraph::linear_backward", linear_backward);
}

void register_affine_samples(BuiltinOps& builtins) {
  // self + alpha * (mat1 @ mat2): self broadcast from a row, a column, a scalar, or full.
  std::vector<Sample> addmm;
  const std::vector<Shape> added = {{5}, {3, 1}, {}, {3, 5}};
  size_t next = 0;
  for (DType dtype : {F32, F64}) {
    for (const auto& [a, b] : std::vector<std::pair<SampleTensor, SampleTensor>>{
             {tensor(dtype, {3, 4}), tensor(dtype, {4, 5})},
             {tensor(dtype, {3, 0}), tensor(dtype, {0, 5})},
             {tensor(dtype, {4, 3}, Layout::Transposed), tensor(dtype, {3, 5}, Layout::Strided)},
             {tensor(dtype, {3, 1}), tensor(dtype, {1, 5})}}) {
      std::vector<Attr> scales;
      if (next % 2) scales = {{"beta", 0.5}, {"alpha", int64_t{-2}}};
      Shape self = added[next++ % added.size()];
      Shape product = {a.shape[0], b.shape[1]};
      if (self.size() == 2 && self[1] == 1) self[0] = product[0];
      addmm.push_back(good({tensor(dtype, self), a, b}, scales));
    }
  }
  addmm.push_back(bad({tensor(F32, {3}), tensor(F32, {2, 4}), tensor(F32, {5, 3})},
                      "cannot multiply float32[2, 4] by float32[5, 3]: inner dimensions 4 and 5 differ"));
  addmm.push_back(bad({tensor(F32, {4}), tensor(F32, {2, 4}), tensor(F32, {4, 3})},
                      "self: float32[4] does not broadcast to the product's shape [2, 3]"));
  addmm.push_back(bad({tensor(I64, {3}), tensor(I64, {2, 4}), tensor(I64, {4, 3})},
                      "mat1: expected float32 or float64, got int64[2, 4]"));
  builtins.add_samples("aten::addmm", addmm);

  std::vector<Sample> baddbmm;
  for (DType dtype : {F32, F64}) {
    baddbmm.push_back(good({tensor(dtype, {2, 3, 5}), tensor(dtype, {2, 3, 4}), tensor(dtype, {2, 4, 5})},
                           {{"beta", int64_t{0}}, {"alpha", 1.5}}));
    baddbmm.push_back(good({tensor(dtype, {5}), tensor(dtype, {2, 3, 4}), tensor(dtype, {2, 4, 5})}));
    baddbmm.push_back(good({tensor(dtype, {0, 1, 2}), tensor(dtype, {0, 1, 3}), tensor(dtype, {0, 3, 2})}));
    baddbmm.push_back(
        good({tensor(dtype, {3, 1, 6}), tensor(dtype, {3, 5, 4}, Layout::Transposed), tensor(dtype, {3, 4, 6})},
             {{"beta", -1.0}}));
  }
  baddbmm.push_back(bad({tensor(F32, {2, 3, 5}), tensor(F32, {2, 3, 4}), tensor(F32, {3, 4, 5})},
                        "mat2: expected batch 2 like self, got float32[3, 4, 5]"));
  baddbmm.push_back(
      bad({tensor(F32, {2, 3, 5}), tensor(F32, {2, 3, 4}), tensor(F32, {2, 5, 5})}, "inner dimensions 4 and 5 differ"));
  builtins.add_samples("aten::baddbmm", baddbmm);

  // matmul: vectors, matrices and broadcast batches on either side.
  std::vector<Sample> matmul = products({F32, F64});
  for (DType dtype : {F32, F64}) {
    matmul.push_back(good({tensor(dtype, {3}), tensor(dtype, {3})}));
    matmul.push_back(good({tensor(dtype, {2, 3}), tensor(dtype, {3})}));
    matmul.push_back(good({tensor(dtype, {3}), tensor(dtype, {3, 4}, Layout::Transposed)}));
    matmul.push_back(good({tensor(dtype, {5, 1, 2, 3}), tensor(dtype, {4, 3, 2})}));
    matmul.push_back(good({tensor(dtype, {0, 2, 3}), tensor(dtype, {3, 2})}));
  }
  matmul.push_back(bad({tensor(F32, {3}), tensor(F32, {4})},
                       "cannot multiply float32[3] by float32[4]: inner dimensions 3 and 4 differ"));
  matmul.push_back(
      bad({tensor(F32, {}), tensor(F32, {3})}, "expected operands of rank 1 or more, got float32[] and float32[3]"));
  matmul.push_back(
      bad({tensor(I64, {2, 3}), tensor(I64, {3, 2})}, "self: expected float32 or float64, got int64[2, 3]"));
  builtins.add_samples("aten::matmul", matmul);
}

void register_distance_samples(BuiltinOps& builtins) {
  // p = 0 counts differences, 1 and 2 the usual norms, 3 a general one.
  std::vector<Sample> cdist;
  const double norms[] = {2.0, 1.0, 0.0, 3.0};
  size_t next = 0;
  for (DType dtype : {F32, F64}) {
    for (const auto& [a, b] : std::vector<std::pair<SampleTensor, SampleTensor>>{
             {tensor(dtype, {3, 4}), tensor(dtype, {5, 4})},
             {tensor(dtype, {2, 3, 4}), tensor(dtype, {2, 5, 4})},
             {tensor(dtype, {0, 4}), tensor(dtype, {5, 4})},
             {tensor(dtype, {6, 3}, Layout::Transposed), tensor(dtype, {2, 3}, Layout::Strided)},
             {tensor(dtype, {1, 1}), tensor(dtype, {1, 1})}}) {
      cdist.push_back(good({a, b}, {{"p", norms[next++ % std::size(norms)]}, {"compute_mode", std::monostate{}}}));
    }
  }
  cdist.push_back(bad({tensor(F32, {3, 4}), tensor(F32, {5, 3})},
                      "x1 and x2: expected rows of the same size, got float32[3, 4] and float32[5, 3]",
                      {{"p", 2.0}, {"compute_mode", std::monostate{}}}));
  cdist.push_back(bad({tensor(F32, {3, 4}), tensor(F32, {5, 4})}, "p: expected a non-negative value, got -1",
                      {{"p", -1.0}, {"compute_mode", std::monostate{}}}));
  add_to_each(builtins, {"aten::cdist", "aten::_cdist_forward"}, cdist);

  std::vector<Sample> pdist;
  for (DType dtype : {F32, F64}) {
    pdist.push_back(good({tensor(dtype, {5, 4})}, {{"p", 2.0}}));
    pdist.push_back(good({tensor(dtype, {1, 4})}, {{"p", 1.0}}));
    pdist.push_back(good({tensor(dtype, {6, 3}, Layout::Transposed)}, {{"p", 0.0}}));
    pdist.push_back(good({tensor(dtype, {4, 5}, Layout::Strided)}, {{"p", 3.0}}));
    pdist.push_back(good({tensor(dtype, {3, 0})}, {{"p", 2.0}}));
  }
  pdist.push_back(
      bad({tensor(F32, {2, 5, 4})}, "self: expected a matrix (rows, features), got float32[2, 5, 4]", {{"p", 2.0}}));
  pdist.push_back(bad({tensor(F32, {5, 4})}, "p: expected a non-negative value, got -1", {{"p", -1.0}}));
  add_to_each(builtins, {"aten::pdist", "aten::_pdist_forward"}, pdist);
}

}  // namespace

void register_matmul_samples(BuiltinOps& builtins) {
  std::vector<Sample> mm = products({F32, F64});
  mm.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4, 5})}, "inner dimensions 3 and 4 differ"));
  mm.push_back(bad({tensor(F32, {3}), tensor(F32, {3, 5})}, "self: expected rank 2, got float32[3]"));
  builtins.add_samples("aten::mm", mm);

  std::vector<Sample> bmm;
  for (DType dtype : {F32, F64}) {
    bmm.push_back(good({tensor(dtype, {2, 3, 4}), tensor(dtype, {2, 4, 5})}));
    bmm.push_back(good({tensor(dtype, {0, 3, 4}), tensor(dtype, {0, 4, 5})}));
    bmm.push_back(good({tensor(dtype, {3, 5, 6}, Layout::Transposed), tensor(dtype, {3, 6, 2})}));
  }
  bmm.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {2, 5, 5})}, "inner dimensions 4 and 5 differ"));
  bmm.push_back(bad({tensor(F32, {3, 4}), tensor(F32, {4, 5})}, "self: expected rank 3, got float32[3, 4]"));
  builtins.add_samples("aten::bmm", bmm);

  std::vector<Sample> linear;
  for (DType dtype : {F32, F64}) {
    linear.push_back(good({tensor(dtype, {4, 6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
    linear.push_back(good({tensor(dtype, {2, 5, 6}), tensor(dtype, {3, 6}), SampleTensor::absent()}));
    linear.push_back(good({tensor(dtype, {6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
    linear.push_back(good({tensor(dtype, {0, 6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
  }
  linear.push_back(bad({tensor(F32, {4, 6}), tensor(F32, {3, 5}), SampleTensor::absent()}, "differ"));
  linear.push_back(bad({tensor(F32, {4, 6}), tensor(F64, {3, 6}), SampleTensor::absent()}, "float32"));
  builtins.add_samples("aten::linear", linear);

  register_fused_samples(builtins);
  register_affine_samples(builtins);
  register_distance_samples(builtins);
}

}  // namespace opgraph::kernels::samples
