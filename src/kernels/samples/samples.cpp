#include "kernels/samples/samples.h"

namespace opgraph::kernels {

namespace samples {

std::vector<SampleTensor> elementwise_inputs(DType dtype, double low, double high) {
  std::vector<SampleTensor> inputs = {tensor(dtype, {}), tensor(dtype, {0}), tensor(dtype, {1}), tensor(dtype, {7}),
                                      tensor(dtype, {3, 1, 5}), tensor(dtype, {4, 6}, Layout::Transposed),
                                      tensor(dtype, {2, 9}, Layout::Strided),
                                      // past the kernels' parallel threshold, in uneven chunks
                                      tensor(dtype, {300, 257}, Layout::Transposed)};
  for (SampleTensor& input : inputs) input.in(low, high);
  return inputs;
}

std::vector<Sample> broadcasting(std::initializer_list<DType> dtypes, double low, double high) {
  const std::vector<std::pair<SampleTensor, SampleTensor>> pairs = {
      {tensor(F32, {3, 1}), tensor(F32, {1, 4})},
      {tensor(F32, {}), tensor(F32, {2, 3})},
      {tensor(F32, {0, 3}), tensor(F32, {3})},
      {tensor(F32, {5, 4}, Layout::Transposed), tensor(F32, {4})},
      {tensor(F32, {2, 3, 4}, Layout::Strided), tensor(F32, {2, 1, 4})},
      {tensor(F32, {1}), tensor(F32, {1})},
      {tensor(F32, {128, 1, 301}), tensor(F32, {5, 301})},  // parallel
  };
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (auto [self, other] : pairs) {
      self.dtype = other.dtype = dtype;
      table.push_back(good({self.in(low, high), other.in(low, high)}));
    }
  }
  return table;
}

std::vector<Sample> elementwise(std::initializer_list<DType> dtypes, double low, double high,
                                const std::vector<Attr>& attrs) {
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (SampleTensor& input : elementwise_inputs(dtype, low, high)) table.push_back(good({input}, attrs));
  }
  return table;
}

std::vector<Sample> retyped(std::initializer_list<DType> dtypes, const std::vector<Sample>& samples) {
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (Sample sample : samples) {
      for (SampleTensor& input : sample.inputs) {
        if (input.dtype == F32) input.dtype = dtype;
      }
      table.push_back(std::move(sample));
    }
  }
  return table;
}

std::vector<Sample> any_dtype(const std::vector<Sample>& samples) { return retyped({F32, F64, I32, I64, B}, samples); }

std::vector<Sample> with(std::vector<Sample> table, std::initializer_list<Sample> more) {
  table.insert(table.end(), more.begin(), more.end());
  return table;
}

void add_to_each(BuiltinOps& builtins, std::initializer_list<const char*> ops, const std::vector<Sample>& samples) {
  for (const char* op : ops) builtins.add_samples(op, samples);
}

}  // namespace samples

void register_sample_tables(BuiltinOps& builtins) {
  samples::register_unary_math_samples(builtins);
  samples::register_binary_samples(builtins);
  samples::register_softmax_samples(builtins);
  samples::register_matmul_samples(builtins);
  samples::register_reduce_samples(builtins);
  samples::register_pool_samples(builtins);
  samples::register_norm_samples(builtins);
  samples::register_compare_samples(builtins);
  samples::register_arith_samples(builtins);
  samples::register_shape_samples(builtins);
  samples::register_scatter_samples(builtins);
  samples::register_conv_samples(builtins);
  samples::register_loss_samples(builtins);
  samples::register_activation_samples(builtins);
  samples::register_upsample_samples(builtins);
  samples::register_factory_samples(builtins);
  samples::register_attention_samples(builtins);
  samples::register_fft_samples(builtins);
  samples::register_data_dependent_samples(builtins);
  samples::register_recurrent_samples(builtins);
  samples::register_quantization_samples(builtins);
  samples::register_random_samples(builtins);
}

}  // namespace opgraph::kernels
