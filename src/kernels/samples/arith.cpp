// Samples of the elementwise math that also takes integers (unary_math.cpp,
// binary.cpp): rounding, sign changes, the Scalar overloads of the
// arithmetic, the divisions and their rounding modes, fmod, remainder, pow
// and clamp, on every elementwise shape or the corners of broadcasting, in
// each dtype the op claims. Integer divisors stay off zero (an integer
// division by zero is refused, as PyTorch raises); float divisors do not,
// as their inf and nan are well defined. Dtypes the op does not take, mixed
// dtypes, fractions for integer tensors and unknown rounding modes are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

const std::string numeric_error = "self: expected float32, float64, int32 or int64, got bool";
const std::string floats_error = "self: expected float32 or float64, got int64";
const std::string zero_error = "other: integer division by zero (ZeroDivisionError in PyTorch)";

bool integral(DType dtype) { return dtype == I32 || dtype == I64; }

// Integer tensors' divisors (the second input) in [1, 4], floats' in [-3, 3].
std::vector<Sample> divided(std::vector<Sample> table) {
  for (Sample& sample : table) {
    if (integral(sample.inputs[0].dtype)) {
      sample.inputs[1].in(1, 4);
    } else {
      sample.inputs[1].in(-3, 3);
    }
  }
  return table;
}

// A tensor and Scalar attributes: `whole` for every dtype, `fraction` for floats only.
std::vector<Sample> with_scalars(std::initializer_list<DType> dtypes, const std::vector<Attr>& whole,
                                 const std::vector<Attr>& fraction, double low = -5, double high = 5) {
  std::vector<Sample> table;
  for (DType dtype : dtypes) {
    for (Sample& sample : elementwise({dtype}, low, high, whole)) table.push_back(std::move(sample));
    if (!integral(dtype)) table.push_back(good({tensor(dtype, {3, 7}, Layout::Transposed).in(low, high)}, fraction));
  }
  return table;
}

void register_unary(BuiltinOps& builtins) {
  std::vector<Sample> rounding = elementwise({F32, F64, I32, I64}, -5, 5);
  rounding.push_back(bad({tensor(B, {3})}, numeric_error));
  rounding.push_back(bad({tensor(DType::Int8, {2, 2})}, "self: expected float32, float64, int32 or int64, got int8"));
  add_to_each(builtins, {"aten::abs", "aten::neg", "aten::floor", "aten::ceil", "aten::round", "aten::trunc"},
              rounding);

  // Bounds on both sides, one side, and crossed (min > max: every element is max).
  std::vector<Sample> clamp = elementwise({F32, F64}, -2, 2, {{"min", -1.0}, {"max", int64_t{1}}});
  for (DType dtype : {F32, F64}) {
    clamp.push_back(good({tensor(dtype, {4, 5}, Layout::Transposed)}, {{"min", 0.5}}));
    clamp.push_back(good({tensor(dtype, {2, 6}, Layout::Strided)}, {{"max", int64_t{0}}}));
    clamp.push_back(good({tensor(dtype, {3, 3})}, {{"min", 1.0}, {"max", -1.0}}));
  }
  for (DType dtype : {I32, I64}) {
    clamp.push_back(good({tensor(dtype, {2, 7}, Layout::Transposed)}, {{"min", int64_t{-2}}, {"max", int64_t{3}}}));
    clamp.push_back(good({tensor(dtype, {5})}, {{"max", int64_t{1} << 40}}));  // beyond int32: no overflow
  }
  clamp.push_back(bad({tensor(I64, {3})},
                      "min: expected an integer bound for int64 self (there is no type "
                      "promotion), got 0.5",
                      {{"min", 0.5}}));
  clamp.push_back(
      bad({tensor(B, {3})}, "self: expected float32, float64, int32 or int64, got bool", {{"min", int64_t{0}}}));
  builtins.add_samples("aten::clamp", clamp);

  std::vector<Sample> clamp_tensor;
  for (const Sample& pair : broadcasting({F32, F64}, -2, 2)) {
    const SampleTensor &self = pair.inputs[0], &bound = pair.inputs[1];
    clamp_tensor.push_back(good({self, bound, SampleTensor::absent()}));
    clamp_tensor.push_back(good({self, SampleTensor::absent(), bound}));
    clamp_tensor.push_back(good({self, bound, bound}));
  }
  clamp_tensor.push_back(bad({tensor(F32, {3}), SampleTensor::absent(), SampleTensor::absent()},
                             "min and max: expected at least one of them to be a tensor, got None for both"));
  clamp_tensor.push_back(bad({tensor(F32, {3}), tensor(F64, {3}), SampleTensor::absent()},
                             "min: expected float32 like self (there is no type promotion), got float64[3]"));
  clamp_tensor.push_back(bad({tensor(F32, {3}), SampleTensor::absent(), tensor(F32, {4})},
                             "shapes [3] and [4] cannot be broadcast together"));
  builtins.add_samples("aten::clamp.Tensor", clamp_tensor);
}

void register_scalar_arithmetic(BuiltinOps& builtins) {
  const std::string bool_error = "self: expected float32, float64, int32, int64, complex64 or complex128, got bool";
  const std::string fraction_error = "other: expected an integer for a int64 tensor (no type promotion), got 1.5";
  std::vector<Sample> add = with_scalars({F32, F64, I32, I64}, {{"other", int64_t{3}}, {"alpha", int64_t{-2}}},
                                         {{"other", 0.5}, {"alpha", 1.5}});
  add.push_back(bad({tensor(B, {3})}, bool_error, {{"other", int64_t{1}}}));
  add.push_back(bad({tensor(I64, {3})}, fraction_error, {{"other", 1.5}}));
  add.push_back(bad({tensor(I64, {3})}, "alpha: expected an integer for a int64 tensor (no type promotion), got 1.5",
                    {{"other", int64_t{1}}, {"alpha", 1.5}}));
  add_to_each(builtins, {"aten::add.Scalar", "aten::sub.Scalar"}, add);

  std::vector<Sample> mul = with_scalars({F32, F64, I32, I64}, {{"other", int64_t{-3}}}, {{"other", 0.5}});
  mul.push_back(bad({tensor(B, {3})}, bool_error, {{"other", int64_t{1}}}));
  mul.push_back(bad({tensor(I64, {3})}, fraction_error, {{"other", 1.5}}));
  builtins.add_samples("aten::mul.Scalar", mul);

  std::vector<Sample> rsub =
      with_scalars({F32, F64}, {{"other", int64_t{3}}, {"alpha", int64_t{2}}}, {{"other", 0.5}, {"alpha", 1.5}});
  rsub.push_back(bad({tensor(I64, {3})}, floats_error, {{"other", int64_t{1}}}));
  rsub.push_back(bad({tensor(B, {3})}, "self: expected float32 or float64, got bool", {{"other", int64_t{1}}}));
  builtins.add_samples("aten::rsub.Scalar", rsub);

  const std::string int_quotient = "self: expected float32, float64, complex64 or complex128, got int64";
  std::vector<Sample> div = with_scalars({F32, F64}, {{"other", int64_t{-3}}}, {{"other", 0.25}});
  div.push_back(good({tensor(F32, {5})}, {{"other", 0.0}}));  // inf and nan
  div.push_back(bad({tensor(I64, {3})}, int_quotient, {{"other", int64_t{2}}}));
  div.push_back(bad({tensor(B, {3})}, "got bool", {{"other", int64_t{2}}}));
  builtins.add_samples("aten::div.Scalar", div);

  // Each rounding mode; integers only with one (their true quotient is a float).
  std::vector<Sample> div_mode;
  for (const char* mode : {"trunc", "floor"}) {
    for (Sample& sample :
         with_scalars({F32, F64, I32, I64}, {{"other", int64_t{-3}}, {"rounding_mode", std::string(mode)}},
                      {{"other", 0.75}, {"rounding_mode", std::string(mode)}})) {
      div_mode.push_back(std::move(sample));
    }
  }
  div_mode.push_back(
      good({tensor(F64, {4, 3}, Layout::Transposed)}, {{"other", 1.5}, {"rounding_mode", std::monostate{}}}));
  div_mode.push_back(bad({tensor(F32, {3})}, "rounding_mode: expected None, \"trunc\" or \"floor\", got \"x\"",
                         {{"other", int64_t{2}}, {"rounding_mode", std::string("x")}}));
  div_mode.push_back(
      bad({tensor(I64, {3})}, zero_error, {{"other", int64_t{0}}, {"rounding_mode", std::string("trunc")}}));
  div_mode.push_back(
      bad({tensor(I64, {3})}, int_quotient, {{"other", int64_t{2}}, {"rounding_mode", std::monostate{}}}));
  builtins.add_samples("aten::div.Scalar_mode", div_mode);

  std::vector<Sample> modulo = with_scalars({F32, F64, I32, I64}, {{"other", int64_t{-3}}}, {{"other", 1.5}}, -9, 9);
  modulo.push_back(bad({tensor(B, {3})}, numeric_error, {{"other", int64_t{2}}}));
  modulo.push_back(bad({tensor(I64, {3})}, zero_error, {{"other", int64_t{0}}}));
  add_to_each(builtins, {"aten::fmod.Scalar", "aten::remainder.Scalar"}, modulo);
}

void register_tensor_arithmetic(BuiltinOps& builtins) {
  const std::string bool_pair = numeric_error;
  std::vector<Sample> modulo = divided(broadcasting({F32, F64, I32, I64}, -9, 9));
  modulo.push_back(bad({tensor(B, {3}), tensor(B, {3})}, bool_pair));
  modulo.push_back(bad({tensor(I64, {3}), tensor(I64, {3}).in(0, 0)}, zero_error));
  modulo.push_back(bad({tensor(F32, {3}), tensor(F64, {3})}, "other: expected float32 like self"));
  add_to_each(builtins, {"aten::fmod.Tensor", "aten::remainder.Tensor"}, modulo);

  std::vector<Sample> div_mode;
  for (const char* mode : {"trunc", "floor"}) {
    for (Sample& sample : divided(broadcasting({F32, F64, I32, I64}, -9, 9))) {
      sample.attrs = {{"rounding_mode", std::string(mode)}};
      div_mode.push_back(std::move(sample));
    }
  }
  for (Sample& sample : broadcasting({F32, F64}, -2, 2)) {
    sample.attrs = {{"rounding_mode", std::monostate{}}};
    div_mode.push_back(std::move(sample));
  }
  div_mode.push_back(bad({tensor(F32, {3}), tensor(F32, {3})},
                         "rounding_mode: expected None, \"trunc\" or \"floor\", got \"x\"",
                         {{"rounding_mode", std::string("x")}}));
  div_mode.push_back(
      bad({tensor(I64, {3}), tensor(I64, {3}).in(0, 0)}, zero_error, {{"rounding_mode", std::string("floor")}}));
  builtins.add_samples("aten::div.Tensor_mode", div_mode);

  // Float bases positive (a negative base to a fraction is nan); integer exponents of either sign.
  std::vector<Sample> pow = broadcasting({F32, F64}, 0.5, 2);
  for (Sample& sample : broadcasting({I32, I64}, -3, 3)) pow.push_back(std::move(sample));
  pow.push_back(bad({tensor(B, {3}), tensor(B, {3})}, bool_pair));
  pow.push_back(bad({tensor(F32, {3}), tensor(I64, {3})},
                    "other: expected float32 like self (there is no type promotion), got int64"));
  builtins.add_samples("aten::pow.Tensor_Tensor", pow);

  std::vector<Sample> pow_scalar = with_scalars({F32, F64}, {{"exponent", int64_t{3}}}, {{"exponent", 0.5}}, 0.5, 2);
  pow_scalar.push_back(good({tensor(F32, {2, 5})}, {{"exponent", -2.0}}));
  pow_scalar.push_back(bad({tensor(I64, {3})}, floats_error, {{"exponent", int64_t{2}}}));
  pow_scalar.push_back(
      bad({tensor(B, {3})}, "self: expected float32 or float64, got bool", {{"exponent", int64_t{2}}}));
  builtins.add_samples("aten::pow.Tensor_Scalar", pow_scalar);

  std::vector<Sample> scalar_base = with_scalars({F32, F64, I32, I64}, {{"self", int64_t{2}}}, {{"self", 2.5}}, -3, 4);
  scalar_base.push_back(
      bad({tensor(B, {3})}, "exponent: expected float32, float64, int32 or int64, got bool", {{"self", int64_t{2}}}));
  scalar_base.push_back(bad({tensor(DType::Int8, {3})}, "exponent: expected float32, float64, int32 or int64, got int8",
                            {{"self", int64_t{2}}}));
  builtins.add_samples("aten::pow.Scalar", scalar_base);
}

}  // namespace

void register_arith_samples(BuiltinOps& builtins) {
  register_unary(builtins);
  register_scalar_arithmetic(builtins);
  register_tensor_arithmetic(builtins);
}

}  // namespace opgraph::kernels::samples
