#include "kernels/samples/samples.h"

namespace opgraph::kernels {

namespace samples {

std::vector<SampleTensor> elementwise_inputs(DType dtype, double low, double high) {
  std::vector<SampleTensor> inputs = {tensor(dtype, {}),        tensor(dtype, {0}),
                                      tensor(dtype, {1}),       tensor(dtype, {7}),
                                      tensor(dtype, {3, 1, 5}), tensor(dtype, {4, 6}, Layout::Transposed),
                                      tensor(dtype, {2, 9}, Layout::Strided)};
  for (SampleTensor& input : inputs) input.in(low, high);
  return inputs;
}

void add_to_each(Registry& registry, std::initializer_list<const char*> ops, const std::vector<Sample>& samples) {
  for (const char* op : ops) registry.add_samples(op, samples);
}

}  // namespace samples

void register_sample_tables(Registry& registry) {
  samples::register_unary_samples(registry);
  samples::register_binary_samples(registry);
  samples::register_softmax_samples(registry);
  samples::register_matmul_samples(registry);
}

}  // namespace opgraph::kernels
