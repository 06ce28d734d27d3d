// Typed kernels and shape functions (kernels/typed.h): a parameter list that
// does not fit the schema is an error when the op is defined, naming the op,
// the parameter and the schema argument; one that fits runs through call()
// with its arguments taken by position.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/define.h"
#include "opgraph/registry/registry.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

constexpr const char* kSchema =
    "t::weighted_sum(Tensor self, Tensor? bias, Tensor[] others, *, Scalar alpha=2, int[]? dims=None, "
    "str mode=\"sum\") -> Tensor";

// out = alpha * self + each of others + bias (where given)
std::vector<TensorMeta> weighted_sum_shape(const TensorMeta& self, const TensorMeta* bias,
                                           std::span<const TensorMeta* const> others, double,
                                           std::optional<std::span<const int64_t>>, std::string_view mode) {
  OPGRAPH_CHECK(mode == "sum", "mode: expected 'sum', got '", mode, "'");
  if (bias) OPGRAPH_CHECK(*bias == self, "bias: expected ", self.str(), ", got ", bias->str());
  for (const TensorMeta* other : others) OPGRAPH_CHECK(*other == self, "others: expected ", self.str());
  return {self};
}

void weighted_sum(const KernelContext&, const Tensor& self, const Tensor* bias, std::span<const Tensor> others,
                  double alpha, std::optional<std::span<const int64_t>> dims, std::string_view, const Tensor& out) {
  OPGRAPH_CHECK(!dims.has_value(), "dims: expected None");
  float* y = out.data_ptr<float>();
  for (int64_t i = 0; i < self.numel(); ++i) {
    float sum = static_cast<float>(alpha) * self.data_ptr<const float>()[i];
    for (const Tensor& other : others) sum += other.data_ptr<const float>()[i];
    if (bias) sum += bias->data_ptr<const float>()[i];
    y[i] = sum;
  }
}

OpDef defined(kernels::OpSpec spec) {
  kernels::BuiltinOps builtins;
  kernels::define(builtins, std::move(spec));
  std::vector<OpDef> ops = std::move(builtins).take();
  ops[0].finalize();
  return std::move(ops[0]);
}

std::string definition_error(kernels::OpSpec spec) {
  return error_of([&] { defined(std::move(spec)); });
}

Tensor filled(float value) {
  Tensor t = Tensor::empty({3}, DType::Float32);
  std::fill_n(t.data_ptr<float>(), 3, value);
  return t;
}

TEST(TypedKernels, RunByPositionWithOptionalListAndDefaults) {
  const OpDef op =
      defined({.schema = kSchema, .shape = weighted_sum_shape, .cpu = weighted_sum, .reference = weighted_sum});
  const std::vector<Tensor> inputs = {filled(1), filled(10), filled(100), filled(1000)};
  const size_t two_others[] = {2};
  // alpha defaults to 2; bias given: 2 * 1 + 100 + 1000 + 10
  std::vector<Tensor> out = call(op, inputs, Attrs::bind(op.schema, {}, two_others));
  EXPECT_EQ(out.at(0).data_ptr<float>()[2], 1112.0f);
  // bias None, alpha given as an int
  const std::vector<Tensor> without_bias = {filled(1), Tensor(), filled(100)};
  const size_t one_other[] = {1};
  out = call(op, without_bias, Attrs::bind(op.schema, {{"alpha", int64_t{3}}}, one_other));
  EXPECT_EQ(out.at(0).data_ptr<float>()[0], 103.0f);
  // the shape function reads the attribute after the list
  EXPECT_NE(error_of([&] {
              call(op, without_bias, Attrs::bind(op.schema, {{"mode", std::string("max")}}, one_other));
            }).find("mode: expected 'sum', got 'max'"),
            std::string::npos);
}

TEST(TypedKernels, MismatchedAttributeNamesParameterAndArgument) {
  auto kernel = [](const KernelContext&, const Tensor&, const Tensor*, std::span<const Tensor>, int64_t,
                   std::optional<std::span<const int64_t>>, std::string_view, const Tensor&) {};
  const std::string message =
      definition_error({.schema = kSchema, .shape = weighted_sum_shape, .cpu = kernel, .reference = kernel});
  EXPECT_NE(message.find("t::weighted_sum (built-in, test_typed_kernels.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find("the cpu kernel takes int64_t as parameter 5 where schema argument 4 'alpha' is Scalar, "
                         "taken as double"),
            std::string::npos)
      << message;
}

TEST(TypedKernels, OptionalTensorMustBeNullable) {
  auto shape = [](const TensorMeta& self, const TensorMeta&, std::span<const TensorMeta* const>, double,
                  std::optional<std::span<const int64_t>>, std::string_view) { return self; };
  const std::string message =
      definition_error({.schema = kSchema, .shape = shape, .cpu = weighted_sum, .reference = weighted_sum});
  EXPECT_NE(message.find("the shape function takes const TensorMeta& as parameter 2 where schema argument 2 'bias' "
                         "is Tensor?, taken as const TensorMeta*"),
            std::string::npos)
      << message;
}

TEST(TypedKernels, ListTakenAsOneTensorIsAnError) {
  auto kernel = [](const KernelContext&, const Tensor&, const Tensor*, const Tensor&, double,
                   std::optional<std::span<const int64_t>>, std::string_view, const Tensor&) {};
  const std::string message =
      definition_error({.schema = kSchema, .shape = weighted_sum_shape, .cpu = weighted_sum, .reference = kernel});
  EXPECT_NE(message.find("the reference kernel takes const Tensor& as parameter 4 where schema argument 3 'others' "
                         "is Tensor[], taken as std::span<const Tensor>"),
            std::string::npos)
      << message;
}

TEST(TypedKernels, OptionalAttributeMustBeOptional) {
  auto kernel = [](const KernelContext&, const Tensor&, const Tensor*, std::span<const Tensor>, double,
                   std::span<const int64_t>, std::string_view, const Tensor&) {};
  const std::string message =
      definition_error({.schema = kSchema, .shape = weighted_sum_shape, .cpu = kernel, .reference = kernel});
  EXPECT_NE(message.find("takes std::span<const int64_t> as parameter 6 where schema argument 5 'dims' is int[]?, "
                         "taken as std::optional<std::span<const int64_t>>"),
            std::string::npos)
      << message;
}

TEST(TypedKernels, MissingAndExtraParametersAreCounted) {
  auto too_few = [](const KernelContext&, const Tensor&, const Tensor*) {};
  std::string message =
      definition_error({.schema = kSchema, .shape = weighted_sum_shape, .cpu = too_few, .reference = too_few});
  EXPECT_NE(message.find("the cpu kernel takes 3 parameters, too few for schema argument 3 'others' (Tensor[], "
                         "taken as std::span<const Tensor>)"),
            std::string::npos)
      << message;

  auto two_outputs = [](const KernelContext&, const Tensor&, const Tensor*, std::span<const Tensor>, double,
                        std::optional<std::span<const int64_t>>, std::string_view, const Tensor&, const Tensor&) {};
  message =
      definition_error({.schema = kSchema, .shape = weighted_sum_shape, .cpu = two_outputs, .reference = two_outputs});
  EXPECT_NE(message.find("the cpu kernel takes 2 parameters after the schema's 6 arguments; its outputs are taken "
                         "as 1 const Tensor& (one per returned Tensor) or one std::span<const Tensor>"),
            std::string::npos)
      << message;

  auto extra = [](const TensorMeta& self, const TensorMeta*, std::span<const TensorMeta* const>, double,
                  std::optional<std::span<const int64_t>>, std::string_view, int64_t) { return self; };
  message = definition_error({.schema = kSchema, .shape = extra, .cpu = weighted_sum, .reference = weighted_sum});
  EXPECT_NE(message.find("the shape function takes 7 parameters where the schema has 6 arguments (parameter 7 is "
                         "int64_t)"),
            std::string::npos)
      << message;
}

// A device backend's typed kernel (kernels/cuda/register.h) is checked when
// the registry takes it, against the op the registry already holds.
TEST(TypedKernels, BackendKernelCheckedAgainstTheDeclaredOp) {
  Registry registry;
  registry.add(
      defined({.schema = kSchema, .shape = weighted_sum_shape, .cpu = weighted_sum, .reference = weighted_sum}));
  auto backend_kernel = [](kernels::KernelSpec kernel) {
    return KernelDef{"t::weighted_sum", DeviceType::CUDA, nullptr, "fake.cu:7",
                     [kernel](const OpDef& op) { return kernel.bind(op.schema, "cuda kernel", "fake.cu:7"); }};
  };
  auto without_list = [](const KernelContext&, const Tensor&, const Tensor*, const Tensor&) {};
  const std::string message = error_of([&] { registry.add_kernels({backend_kernel(without_list)}); });
  EXPECT_NE(message.find("t::weighted_sum (fake.cu:7): the cuda kernel takes const Tensor& as parameter 4 where "
                         "schema argument 3 'others' is Tensor[], taken as std::span<const Tensor>"),
            std::string::npos)
      << message;
  EXPECT_FALSE(registry.get("t::weighted_sum").kernels[static_cast<size_t>(DeviceType::CUDA)]);
  registry.add_kernels({backend_kernel(weighted_sum)});
  EXPECT_TRUE(registry.get("t::weighted_sum").kernels[static_cast<size_t>(DeviceType::CUDA)]);
}

}  // namespace
}  // namespace opgraph
