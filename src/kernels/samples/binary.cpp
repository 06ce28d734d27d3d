// Samples of the broadcasting arithmetic ops (binary.cpp): the corners of
// broadcasting (0-d against a matrix, size-1 dims on both sides, empty
// dims, transposed and strided operands) in each dtype the op takes; shapes
// that do not broadcast and mixed dtypes are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

std::vector<Sample> with_refusals(std::vector<Sample> table) {
  table.push_back(bad({tensor(F32, {3}), tensor(F32, {4})}, "shapes [3] and [4] cannot be broadcast together"));
  table.push_back(bad({tensor(F32, {3}), tensor(F64, {3})},
                      "other: expected float32 like self (there is no type promotion), got float64"));
  return table;
}

}  // namespace

void register_binary_samples(BuiltinOps& builtins) {
  add_to_each(builtins, {"aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::maximum", "aten::minimum"},
              with_refusals(broadcasting({F32, F64, I64}, -5, 5)));
  // Divisors away from zero, so that every dtype's quotient is well defined.
  add_to_each(builtins, {"aten::div.Tensor"}, with_refusals(broadcasting({F32, F64}, 0.5, 3)));
  add_to_each(builtins, {"aten::atan2"}, with_refusals(broadcasting({F32, F64}, -2, 2)));
  // atan2.out runs as the functional form: `out` gives only the result's dtype.
  std::vector<Sample> out = broadcasting({F32, F64}, -2, 2);
  for (Sample& sample : out) sample.inputs.push_back(tensor(sample.inputs[0].dtype, {1}));
  out.push_back(bad({tensor(F32, {3}), tensor(F32, {3}), tensor(F64, {3})},
                    "out: expected float32 like the result (there is no type promotion), got float64[3]"));
  out.push_back(
      bad({tensor(F32, {3}), tensor(F32, {4}), tensor(F32, {3})}, "shapes [3] and [4] cannot be broadcast together"));
  builtins.add_samples("aten::atan2.out", out);
}

}  // namespace opgraph::kernels::samples
