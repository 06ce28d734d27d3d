// Samples of the matrix products (matmul.cpp, product.cpp): square and
// skinny, empty inner and outer sizes, transposed operands, a batch; inner
// sizes that differ and ranks the op does not take are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

constexpr DType F32 = DType::Float32;
constexpr DType F64 = DType::Float64;

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

}  // namespace

void register_matmul_samples(Registry& registry) {
  std::vector<Sample> mm = products({F32, F64});
  mm.push_back(bad({tensor(F32, {2, 3}), tensor(F32, {4, 5})}, "inner dimensions 3 and 4 differ"));
  mm.push_back(bad({tensor(F32, {3}), tensor(F32, {3, 5})}, "self: expected rank 2, got float32[3]"));
  registry.add_samples("aten::mm", mm);

  std::vector<Sample> bmm;
  for (DType dtype : {F32, F64}) {
    bmm.push_back(good({tensor(dtype, {2, 3, 4}), tensor(dtype, {2, 4, 5})}));
    bmm.push_back(good({tensor(dtype, {0, 3, 4}), tensor(dtype, {0, 4, 5})}));
    bmm.push_back(good({tensor(dtype, {3, 5, 6}, Layout::Transposed), tensor(dtype, {3, 6, 2})}));
  }
  bmm.push_back(bad({tensor(F32, {2, 3, 4}), tensor(F32, {2, 5, 5})}, "inner dimensions 4 and 5 differ"));
  bmm.push_back(bad({tensor(F32, {3, 4}), tensor(F32, {4, 5})}, "self: expected rank 3, got float32[3, 4]"));
  registry.add_samples("aten::bmm", bmm);

  std::vector<Sample> linear;
  for (DType dtype : {F32, F64}) {
    linear.push_back(good({tensor(dtype, {4, 6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
    linear.push_back(good({tensor(dtype, {2, 5, 6}), tensor(dtype, {3, 6}), SampleTensor::absent()}));
    linear.push_back(good({tensor(dtype, {6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
    linear.push_back(good({tensor(dtype, {0, 6}), tensor(dtype, {3, 6}), tensor(dtype, {3})}));
  }
  linear.push_back(bad({tensor(F32, {4, 6}), tensor(F32, {3, 5}), SampleTensor::absent()}, "differ"));
  linear.push_back(bad({tensor(F32, {4, 6}), tensor(F64, {3, 6}), SampleTensor::absent()}, "float32"));
  registry.add_samples("aten::linear", linear);
}

}  // namespace opgraph::kernels::samples
