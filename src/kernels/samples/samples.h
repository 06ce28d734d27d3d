// The built-in ops' sample tables (registry/sample.h), one file per op
// family, added to the ops after they are registered. A table lists the
// shapes that hurt (0-d, empty, one element, odd sizes, transposed and
// strided views, broadcasting corners), every dtype the op claims, and bad
// samples with the text their error must contain.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels::samples {

using Layout = SampleTensor::Layout;
using Attr = std::pair<std::string, AttrValue>;

inline SampleTensor tensor(DType dtype, Shape shape, Layout layout = Layout::Contiguous) {
  return SampleTensor::of(dtype, std::move(shape), layout);
}

inline Sample good(std::vector<SampleTensor> inputs, std::vector<Attr> attrs = {}) {
  return {std::move(inputs), std::move(attrs)};
}

inline Sample bad(std::vector<SampleTensor> inputs, std::string error, std::vector<Attr> attrs = {}) {
  Sample sample{std::move(inputs), std::move(attrs)};
  sample.error = std::move(error);
  return sample;
}

// One input of each shape an elementwise op must take, of `dtype`, values in [low, high].
std::vector<SampleTensor> elementwise_inputs(DType dtype, double low = -2, double high = 2);

// Adds `samples` to each op of `ops`.
void add_to_each(Registry& registry, std::initializer_list<const char*> ops, const std::vector<Sample>& samples);

void register_unary_samples(Registry& registry);
void register_binary_samples(Registry& registry);
void register_softmax_samples(Registry& registry);
void register_matmul_samples(Registry& registry);

}  // namespace opgraph::kernels::samples
