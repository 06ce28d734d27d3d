// Samples of the elementwise ops of one floating-point tensor (activation.cpp,
// unary_math.cpp): each on every elementwise shape, in float32 and float64,
// with its values inside the op's domain; integers and bool are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

std::vector<Sample> float_unary(double low, double high) {
  std::vector<Sample> table = elementwise({F32, F64}, low, high);
  table.push_back(bad({tensor(I64, {3})}, "self: expected float32 or float64, got int64"));
  table.push_back(bad({tensor(B, {2, 2})}, "self: expected float32 or float64, got bool"));
  return table;
}

}  // namespace

void register_unary_math_samples(BuiltinOps& builtins) {
  add_to_each(builtins, {"aten::relu", "aten::sigmoid",     "aten::tanh",      "aten::silu",     "aten::gelu",
                         "aten::elu",  "aten::hardsigmoid", "aten::hardswish", "aten::hardtanh", "aten::leaky_relu",
                         "aten::exp",  "aten::expm1",       "aten::erf",       "aten::sin",      "aten::cos",
                         "aten::tan",  "aten::sinh",        "aten::cosh",      "aten::atan",     "aten::asinh"},
              float_unary(-2, 2));
  add_to_each(builtins, {"aten::acos", "aten::asin", "aten::atanh"}, float_unary(-0.9, 0.9));
  add_to_each(builtins, {"aten::acosh"}, float_unary(1.1, 3));
  add_to_each(builtins, {"aten::log", "aten::log2", "aten::log10", "aten::sqrt", "aten::rsqrt", "aten::reciprocal"},
              float_unary(0.1, 3));
  add_to_each(builtins, {"aten::log1p"}, float_unary(-0.5, 3));
  // The attribute checks of the ops that take one.
  builtins.add_samples(
      "aten::gelu",
      {good({tensor(F32, {5})}, {{"approximate", std::string("tanh")}}),
       bad({tensor(F32, {5})}, "approximate: expected \"none\" or \"tanh\"", {{"approximate", std::string("erf")}}),
       bad({tensor(F32, {5})}, "attribute 'approximate' expects str", {{"approximate", int64_t{3}}})});
}

}  // namespace opgraph::kernels::samples
