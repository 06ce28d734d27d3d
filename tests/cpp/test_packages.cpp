// Loading op packages through the C ABI and calling their ops.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "opgraph/opgraph.h"
#include "opgraph/package/abi.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

const LoadedLibrary& load_test_ops() { return load_library(OPGRAPH_TEST_PACKAGE); }

// -2, -1, 0, 1, ... of the given floating-point dtype.
Tensor ramp(int64_t n, DType dtype = DType::Float32) {
  Tensor t = Tensor::empty({n}, dtype);
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == DType::Float32) {
      t.data_ptr<float>()[i] = static_cast<float>(i) - 2.0f;
    } else {
      t.data_ptr<double>()[i] = static_cast<double>(i) - 2.0;
    }
  }
  return t;
}

TEST(Packages, LoadRegistersEveryOpWithItsNamespace) {
  const LoadedLibrary& lib = load_test_ops();
  EXPECT_EQ(lib.ns, "test_ops");
  EXPECT_EQ(lib.path, std::filesystem::canonical(OPGRAPH_TEST_PACKAGE).string());
  for (const char* name : {"test_ops::scale", "test_ops::scale_backward", "test_ops::add_bias", "test_ops::split_sign",
                           "test_ops::echo_attrs"}) {
    EXPECT_TRUE(Registry::global().contains(name)) << name;
  }
  const OpDef& scale = Registry::global().get("test_ops::scale");
  EXPECT_EQ(scale.schema.str(), "test_ops::scale(Tensor x, *, float factor=2.0) -> Tensor");
  EXPECT_EQ(scale.backward, "test_ops::scale_backward");
  EXPECT_NE(scale.source.find("test_ops.cpp:"), std::string::npos) << scale.source;
}

TEST(Packages, LoadingTwiceReturnsTheSameLibrary) {
  const LoadedLibrary& first = load_test_ops();
  const size_t ops = Registry::global().list().size();
  const LoadedLibrary& again = load_library(OPGRAPH_TEST_PACKAGE);
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(Registry::global().list().size(), ops);
}

TEST(Packages, KernelComputesWithDefaultAndGivenAttributes) {
  load_test_ops();
  Tensor x = ramp(5, DType::Float64);
  auto doubled = call("test_ops::scale", std::span<const Tensor>(&x, 1));
  auto tripled = call("test_ops::scale", std::span<const Tensor>(&x, 1), {{"factor", 3.0}});
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(doubled[0].data_ptr<double>()[i], 2.0 * (i - 2));
    EXPECT_DOUBLE_EQ(tripled[0].data_ptr<double>()[i], 3.0 * (i - 2));
  }
}

TEST(Packages, DestinationPassingWritesCallerOutputs) {
  load_test_ops();
  const OpDef& op = Registry::global().get("test_ops::split_sign");
  Tensor x = ramp(4);
  std::vector<Tensor> outputs = {Tensor::zeros({4}, DType::Float32), Tensor::zeros({4}, DType::Float32)};
  call_out(op, std::span<const Tensor>(&x, 1), outputs, Attrs::bind(op.schema, {}));
  const float positive[] = {0, 0, 0, 1}, negative[] = {-2, -1, 0, 0};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(outputs[0].data_ptr<float>()[i], positive[i]);
    EXPECT_EQ(outputs[1].data_ptr<float>()[i], negative[i]);
  }
}

TEST(Packages, OptionalInputMayBeOmitted) {
  load_test_ops();
  Tensor x = ramp(3);
  Tensor bias = Tensor::zeros({3}, DType::Float32);
  bias.data_ptr<float>()[1] = 10.0f;
  std::vector<Tensor> with = {x, bias}, without = {x, Tensor()};
  EXPECT_EQ(call("test_ops::add_bias", with)[0].data_ptr<float>()[1], 9.0f);
  EXPECT_EQ(call("test_ops::add_bias", without)[0].data_ptr<float>()[1], -1.0f);
  Tensor wrong_bias = Tensor::zeros({4}, DType::Float32);
  std::vector<Tensor> bad = {x, wrong_bias};
  EXPECT_EQ(error_of([&] { call("test_ops::add_bias", bad); }),
            "test_ops::add_bias: bias: expected float32[3], got float32[4]");
}

TEST(Packages, EveryAttributeKindCrossesTheAbi) {
  load_test_ops();
  Tensor x = ramp(1);
  NamedAttrs attrs = {{"i", int64_t{7}},
                      {"f", 2.5},
                      {"b", true},
                      {"s", std::string("four")},
                      {"ints", std::vector<int64_t>{1, 2, 3}},
                      {"floats", std::vector<double>{0.5, 0.25}},
                      {"dtype", DType::Int64}};
  auto out = call("test_ops::echo_attrs", std::span<const Tensor>(&x, 1), attrs);
  const double expected[] = {7, 2.5, 1, 4, 6, 0.75, static_cast<double>(DType::Int64), -1};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(out[0].data_ptr<double>()[i], expected[i]) << i;
  attrs.emplace_back("maybe", int64_t{5});
  out = call("test_ops::echo_attrs", std::span<const Tensor>(&x, 1), attrs);
  EXPECT_DOUBLE_EQ(out[0].data_ptr<double>()[7], 5);
}

TEST(Packages, KernelRunsOnTheHostThreadPool) {
  load_test_ops();
  set_num_threads(2);
  Tensor x = Tensor::zeros({100000}, DType::Float32);
  auto out = call("test_ops::parallel_iota", std::span<const Tensor>(&x, 1));
  const int64_t* values = out[0].data_ptr<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(values[i], i);
}

TEST(Packages, ErrorsFromThePackageNameTheOp) {
  load_test_ops();
  Tensor ints = Tensor::zeros({3}, DType::Int32);
  EXPECT_EQ(error_of([&] { call("test_ops::scale", std::span<const Tensor>(&ints, 1)); }),
            "test_ops::scale: x: expected float32 or float64, got int32[3]");
  Tensor x = ramp(2);
  EXPECT_EQ(error_of([&] { call("test_ops::fail", std::span<const Tensor>(&x, 1)); }),
            "test_ops::fail: kernel refused float32[2]");
  EXPECT_EQ(error_of([&] { call("test_ops::scale", std::span<const Tensor>(&x, 1), {{"factor", std::string("x")}}); }),
            "test_ops::scale: attribute 'factor' expects float, got str \"x\"");
}

// test_ops::sum_products(Tensor[] xs, Tensor? bias, Tensor[] ys): bias + sum of xs[i] * ys[i].
std::vector<Tensor> sum_products(const std::vector<Tensor>& inputs, std::vector<size_t> lengths) {
  const OpDef& op = Registry::global().get("test_ops::sum_products");
  return call(op, inputs, Attrs::bind(op.schema, {}, lengths));
}

TEST(Packages, TensorListsCrossTheAbi) {
  load_test_ops();
  Tensor x = ramp(3), bias = ramp(3);  // -2, -1, 0
  auto values = [](const Tensor& t) { return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + 3); };
  EXPECT_EQ(values(sum_products({x, x, bias, x, bias}, {2, 2})[0]), (std::vector<float>{6, 1, 0}));
  EXPECT_EQ(values(sum_products({x, Tensor(), x}, {1, 1})[0]), (std::vector<float>{4, 1, 0}));
}

TEST(Packages, TensorListErrorsFromThePackage) {
  load_test_ops();
  Tensor x = ramp(3), longer = ramp(4);
  EXPECT_EQ(error_of([&] { sum_products({Tensor()}, {0, 0}); }),
            "test_ops::sum_products: xs: expected at least one tensor");
  EXPECT_EQ(error_of([&] { sum_products({x, Tensor(), x, Tensor()}, {1, 2}); }),
            "test_ops::sum_products: input 'ys[1]' is required but was not given");
  EXPECT_EQ(error_of([&] { sum_products({x, x, Tensor(), x, longer}, {2, 2}); }),
            "test_ops::sum_products: ys[1]: expected float32[3], got float32[4]");
  // Shape functions run before kernels, so only the shape function's parameters are checked here.
  const OpDef& list_as_tensor = Registry::global().get("test_ops::list_as_tensor");
  const Attrs one_tensor = Attrs::bind(list_as_tensor.schema, {}, std::vector<size_t>{1});
  EXPECT_EQ(error_of([&] { infer_outputs(list_as_tensor, std::span(&x, 1), one_tensor); }),
            "test_ops::list_as_tensor: tensor argument 0 is a Tensor[]; take it as InputTensorList "
            "(std::vector<Meta> in shape functions)");
}

TEST(Packages, PackageBuiltForAbi10StillLoads) {
  load_library(OPGRAPH_TEST_PACKAGE_ABI_1_0);
  Tensor x = ramp(4);
  EXPECT_EQ(call("test_abi_1_0::copy", std::span<const Tensor>(&x, 1))[0].data_ptr<float>()[3], 1.0f);
}

TEST(Packages, PackageBuiltForAbi10CannotDeclareATensorList) {
  std::string message = error_of([] { load_library(OPGRAPH_TEST_PACKAGE_ABI_1_0_LIST); });
  EXPECT_NE(message.find("abi_1_0.c:"), std::string::npos) << message;
  EXPECT_NE(message.find("op 'test_abi_1_0::first': argument 'xs' is a Tensor[], which a package built for op "
                         "package ABI 1.0 cannot take"),
            std::string::npos)
      << message;
}

TEST(Packages, MissingFileIsAnError) {
  EXPECT_EQ(error_of([] { load_library("/nonexistent/libnothing.so"); }),
            "load_library: no such file: '/nonexistent/libnothing.so'");
}

TEST(Packages, LibraryWithoutEntryPointIsAnError) {
  std::string message = error_of([] { load_library(OPGRAPH_TEST_NOT_A_PACKAGE); });
  EXPECT_NE(message.find("is not an opgraph op package"), std::string::npos) << message;
  EXPECT_NE(message.find("opgraph_package_init"), std::string::npos) << message;
}

TEST(Packages, AbiMismatchNamesBothVersions) {
  const size_t ops = Registry::global().list().size();
  std::string message = error_of([] { load_library(OPGRAPH_TEST_PACKAGE_FUTURE_ABI); });
  const std::string versions =
      detail::concat("was built for op package ABI 2.0; this opgraph provides ABI 1.", OPGRAPH_ABI_VERSION_MINOR);
  EXPECT_NE(message.find(versions), std::string::npos) << message;
  EXPECT_EQ(Registry::global().list().size(), ops);
}

TEST(Packages, NameClashLeavesTheRegistryAsItWas) {
  load_test_ops();
  const auto before = Registry::global().list();
  std::string message = error_of([] { load_library(OPGRAPH_TEST_PACKAGE_CLASH); });
  EXPECT_NE(message.find("op 'test_ops::fail' is already registered"), std::string::npos) << message;
  EXPECT_NE(message.find("test_ops.cpp"), std::string::npos) << message;
  EXPECT_NE(message.find("clash.cpp"), std::string::npos) << message;
  EXPECT_EQ(Registry::global().list(), before);
  EXPECT_FALSE(Registry::global().contains("test_ops::only_in_clash"));
  // A failed load is not remembered: trying again fails the same way.
  EXPECT_EQ(error_of([] { load_library(OPGRAPH_TEST_PACKAGE_CLASH); }), message);
}

TEST(Packages, SampleForAnUndeclaredOpIsReportedAtLoad) {
  std::string message = error_of([] { load_library(OPGRAPH_TEST_PACKAGE_BAD_SAMPLE); });
  EXPECT_NE(message.find("def_sample: a sample for op 'test_bad_sample::other', which this package does not "
                         "declare; declare it with def() first"),
            std::string::npos)
      << message;
  EXPECT_FALSE(Registry::global().contains("test_bad_sample::op"));
}

TEST(Packages, KernelArityMismatchIsReportedAtLoad) {
  std::string message = error_of([] { load_library(OPGRAPH_TEST_PACKAGE_BAD_ARITY); });
  EXPECT_NE(message.find("bad_arity.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find("test_bad_arity::op: the kernel takes 0 attributes, the schema declares 1"), std::string::npos)
      << message;
  EXPECT_FALSE(Registry::global().contains("test_bad_arity::op"));
}

}  // namespace
}  // namespace opgraph
