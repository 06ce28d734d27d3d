// Samples of the comparisons, logical and bitwise ops and the tests of a
// value (compare.cpp): the corners of broadcasting in every
// dtype the op takes, small integer ranges so that equal elements occur, the
// Scalar overloads on every elementwise shape; shapes that do not
// broadcast, mixed dtypes, scalars the dtype cannot hold and dtypes the op
// does not take are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

const std::string any_real = "self: expected float32, float64, int64, int32 or bool, got complex64";
const std::string integral = "self: expected bool or an integer dtype, got float32";

// Two broadcasting tensors, in `dtypes`, refused with shapes that do not
// broadcast, `mixed` (self float32, other float64 or int64) and `wrong` (self of `dtype`).
std::vector<Sample> pairs(std::initializer_list<DType> dtypes, DType other, const std::string& mixed, DType wrong,
                          const std::string& wrong_error) {
  std::vector<Sample> table = broadcasting(dtypes, -2, 2);
  table.push_back(bad({tensor(I64, {3}), tensor(I64, {4})}, "shapes [3] and [4] cannot be broadcast together"));
  const DType self = other == F64 ? F32 : I32;
  table.push_back(bad({tensor(self, {3}), tensor(other, {3})}, mixed));
  table.push_back(bad({tensor(wrong, {3}), tensor(wrong, {3})}, wrong_error));
  return table;
}

// A Tensor and a Scalar `other`: each dtype with a whole number, floats
// with a fraction, bool with 0 and 1.
std::vector<Sample> with_scalar(std::initializer_list<DType> dtypes, bool fractions, DType wrong,
                                const std::string& wrong_error) {
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (Sample& sample : elementwise({dtype}, -2, 2, {{"other", int64_t{1}}})) table.push_back(std::move(sample));
    if (fractions && (dtype == F32 || dtype == F64)) table.push_back(good({tensor(dtype, {4, 5})}, {{"other", 0.5}}));
  }
  table.push_back(good({tensor(B, {2, 3})}, {{"other", int64_t{0}}}));
  table.push_back(bad({tensor(I64, {3})}, "other: expected a", {{"other", 1.5}}));
  table.push_back(bad({tensor(wrong, {3})}, wrong_error, {{"other", int64_t{1}}}));
  return table;
}

}  // namespace

void register_compare_samples(BuiltinOps& builtins) {
  add_to_each(builtins,
              {"aten::eq.Tensor", "aten::ne.Tensor", "aten::lt.Tensor", "aten::gt.Tensor", "aten::le.Tensor",
               "aten::ge.Tensor", "aten::logical_and", "aten::logical_or", "aten::logical_xor"},
              pairs({F32, F64, I32, I64, B}, F64, "other: expected float32 like self", DType::Complex64, any_real));
  add_to_each(builtins,
              {"aten::bitwise_and.Tensor", "aten::bitwise_or.Tensor", "aten::bitwise_xor.Tensor",
               "aten::__and__.Tensor", "aten::__or__.Tensor"},
              pairs({I32, I64, B}, I64, "other: expected int32 like self", F32, integral));

  add_to_each(builtins,
              {"aten::eq.Scalar", "aten::ne.Scalar", "aten::lt.Scalar", "aten::gt.Scalar", "aten::le.Scalar",
               "aten::ge.Scalar"},
              with_scalar({F32, F64, I32, I64}, true, DType::Complex64, any_real));
  add_to_each(builtins, {"aten::bitwise_and.Scalar", "aten::bitwise_or.Scalar", "aten::bitwise_xor.Scalar"},
              with_scalar({I32, I64}, false, F32, integral));

  std::vector<Sample> tests = elementwise({F32, F64, I32, I64, B}, -2, 2);
  tests.push_back(bad({tensor(DType::Complex64, {3})}, "got complex64"));
  tests.push_back(bad({tensor(DType::Complex128, {2, 2})}, "got complex128"));
  add_to_each(builtins, {"aten::isnan", "aten::isinf", "aten::logical_not", "aten::sign"}, tests);

  std::vector<Sample> bitwise_not = elementwise({I32, I64, B}, -5, 5);
  bitwise_not.push_back(bad({tensor(F32, {3})}, integral));
  bitwise_not.push_back(bad({tensor(F64, {2, 2})}, "self: expected bool or an integer dtype, got float64"));
  builtins.add_samples("aten::bitwise_not", bitwise_not);
}

}  // namespace opgraph::kernels::samples
