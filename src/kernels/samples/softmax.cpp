// Samples of softmax and log_softmax (softmax.cpp) along each kind of dim:
// the last, a middle one, the first, over rows of one element and none.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

std::vector<Sample> along_dims(std::vector<Attr> extra) {
  const std::vector<std::pair<SampleTensor, int64_t>> cases = {
      {tensor(F32, {5, 7}), -1},    {tensor(F32, {3, 4, 5}), 1}, {tensor(F32, {6, 3}, Layout::Transposed), 0},
      {tensor(F32, {4, 1}), 1},     {tensor(F32, {0, 4}), 1},    {tensor(F32, {2, 300}, Layout::Strided), 1},
      {tensor(F32, {67, 1031}), 1},  // past the parallel threshold
  };
  std::vector<Sample> table;
  auto attrs = [&](int64_t dim) {
    std::vector<Attr> all = {{"dim", dim}};
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  for (DType dtype : {F32, F64}) {
    for (auto [input, dim] : cases) {
      input.dtype = dtype;
      table.push_back(good({input.in(-8, 8)}, attrs(dim)));
    }
  }
  table.push_back(bad({tensor(F32, {3})}, "dim: expected a dim in [-1, 0] for a tensor of rank 1, got 2", attrs(2)));
  table.push_back(bad({tensor(I64, {3})}, "self: expected float32 or float64, got int64", attrs(0)));
  return table;
}

}  // namespace

void register_softmax_samples(BuiltinOps& builtins) {
  add_to_each(builtins, {"aten::softmax.int", "aten::log_softmax.int"}, along_dims({}));
  add_to_each(builtins, {"aten::_softmax", "aten::_log_softmax"}, along_dims({{"half_to_float", false}}));
}

}  // namespace opgraph::kernels::samples
