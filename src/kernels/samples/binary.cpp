// Samples of the broadcasting arithmetic ops (binary.cpp): the corners of
// broadcasting (0-d against a matrix, size-1 dims on both sides, empty
// dims, transposed and strided operands) in each dtype the op takes; shapes
// that do not broadcast and mixed dtypes are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

std::vector<Sample> broadcasting(std::initializer_list<DType> dtypes, double low, double high) {
  const std::vector<std::pair<SampleTensor, SampleTensor>> pairs = {
      {tensor(DType::Float32, {3, 1}), tensor(DType::Float32, {1, 4})},
      {tensor(DType::Float32, {}), tensor(DType::Float32, {2, 3})},
      {tensor(DType::Float32, {0, 3}), tensor(DType::Float32, {3})},
      {tensor(DType::Float32, {5, 4}, Layout::Transposed), tensor(DType::Float32, {4})},
      {tensor(DType::Float32, {2, 3, 4}, Layout::Strided), tensor(DType::Float32, {2, 1, 4})},
      {tensor(DType::Float32, {1}), tensor(DType::Float32, {1})},
  };
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (auto [self, other] : pairs) {
      self.dtype = other.dtype = dtype;
      table.push_back(good({self.in(low, high), other.in(low, high)}));
    }
  }
  table.push_back(bad({tensor(DType::Float32, {3}), tensor(DType::Float32, {4})},
                      "shapes [3] and [4] cannot be broadcast together"));
  table.push_back(bad({tensor(DType::Float32, {3}), tensor(DType::Float64, {3})},
                      "other: expected float32 like self (there is no type promotion), got float64"));
  return table;
}

}  // namespace

void register_binary_samples(Registry& registry) {
  add_to_each(registry, {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::maximum",
                         "aten::minimum"},
              broadcasting({DType::Float32, DType::Float64, DType::Int64}, -5, 5));
  // Divisors away from zero, so that every dtype's quotient is well defined.
  add_to_each(registry, {"aten::div.Tensor"}, broadcasting({DType::Float32, DType::Float64}, 0.5, 3));
  add_to_each(registry, {"aten::atan2"}, broadcasting({DType::Float32, DType::Float64}, -2, 2));
}

}  // namespace opgraph::kernels::samples
