// Devices without a GPU: the registry's choice of kernel by the inputs'
// device, the errors for mixed and unavailable devices, and what the CUDA
// backend says where it cannot run. Device tensors here are from_blob views
// of host memory that no kernel reads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "opgraph/core/device_backend.h"
#include "opgraph/opgraph.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

constexpr Device kCuda0{DeviceType::CUDA, 0};
constexpr Device kCuda1{DeviceType::CUDA, 1};

// A tensor that claims to be on `device`, over host memory nothing reads.
Tensor on_device(float* memory, Device device, Shape shape = {4}) {
  return Tensor::from_blob(memory, std::move(shape), {}, DType::Float32, {}, device);
}

bool cuda_available() { return device_available(DeviceType::CUDA); }

TEST(Devices, CpuIsAlwaysAvailable) { EXPECT_TRUE(device_available(DeviceType::CPU)); }

TEST(Devices, UnavailableCudaSaysWhy) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device; the message is for machines without one";
  std::string why;
  EXPECT_FALSE(device_available(DeviceType::CUDA, &why));
  EXPECT_FALSE(why.empty());
  const std::string message = error_of([] { Tensor::empty({2}, DType::Float32, kCuda0); });
  EXPECT_NE(message.find("CUDA is not available: " + why), std::string::npos) << message;
}

TEST(Devices, OpWithOnlyACpuKernelRefusesCudaInputs) {
  float a[4] = {}, b[4] = {}, out[4] = {};
  const OpDef& add = Registry::global().get("aten::mul.Tensor");
  const Tensor inputs[] = {on_device(a, kCuda0), on_device(b, kCuda0)};
  const Tensor outputs[] = {on_device(out, kCuda0)};
  if (add.kernels[static_cast<size_t>(DeviceType::CUDA)]) GTEST_SKIP() << "aten::mul.Tensor has a CUDA kernel here";
  const std::string message = error_of([&] { call_out(add, inputs, outputs, Attrs::bind(add.schema, {})); });
  EXPECT_NE(message.find("aten::mul.Tensor: no kernel for device cuda:0; it has kernels for: cpu"), std::string::npos)
      << message;
}

TEST(Devices, InputsOnMixedDevicesNameTheOpAndTheInput) {
  float a[4] = {}, b[4] = {};
  const Tensor host = Tensor::zeros({4}, DType::Float32);
  const Tensor inputs[] = {host, on_device(b, kCuda0)};
  const std::string message = error_of([&] { call("aten::mul.Tensor", inputs); });
  EXPECT_NE(message.find("aten::mul.Tensor: input 'other' is on cuda:0 but earlier inputs are on cpu"),
            std::string::npos)
      << message;
  const Tensor two_gpus[] = {on_device(a, kCuda0), on_device(b, kCuda1)};
  const std::string indices = error_of([&] { call("aten::mul.Tensor", two_gpus); });
  EXPECT_NE(indices.find("input 'other' is on cuda:1 but earlier inputs are on cuda:0"), std::string::npos) << indices;
}

TEST(Devices, PackageKernelIsChosenByTheInputsDevice) {
  load_library(OPGRAPH_TEST_PACKAGE);
  const OpDef& probe = Registry::global().get("test_ops::device_probe");
  const Tensor x = Tensor::zeros({3}, DType::Float32);
  EXPECT_EQ(call(probe, std::span<const Tensor>(&x, 1), Attrs::bind(probe.schema, {}))[0].data_ptr<float>()[0], 0.0f);

  float memory[4] = {}, out[4] = {};
  const Tensor input = on_device(memory, kCuda1);
  const Tensor output = on_device(out, kCuda1);
  const std::string message = error_of([&] {
    call_out(probe, std::span<const Tensor>(&input, 1), std::span<const Tensor>(&output, 1),
             Attrs::bind(probe.schema, {}));
  });
  EXPECT_NE(message.find("test_ops::device_probe: the CUDA kernel ran for cuda:1"), std::string::npos) << message;
}

TEST(Devices, ScratchOnAnUnavailableDeviceFailsTheCall) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device, where scratch memory is granted";
  load_library(OPGRAPH_TEST_PACKAGE);
  const OpDef& probe = Registry::global().get("test_ops::device_probe");
  float memory[4] = {}, out[4] = {};
  const Tensor input = on_device(memory, kCuda0);
  const Tensor output = on_device(out, kCuda0);
  const std::string message = error_of([&] {
    call_out(probe, std::span<const Tensor>(&input, 1), std::span<const Tensor>(&output, 1),
             Attrs::bind(probe.schema, {{"use_scratch", true}}));
  });
  EXPECT_NE(message.find("test_ops::device_probe: CUDA is not available"), std::string::npos) << message;
}

TEST(Devices, ReferenceImplementationsRunOnTheCpuOnly) {
  float a[4] = {}, b[4] = {};
  const Tensor inputs[] = {on_device(a, kCuda0), on_device(b, kCuda0)};
  const OpDef& mul = Registry::global().get("aten::mul.Tensor");
  const std::string message = error_of([&] { call(mul, inputs, Attrs::bind(mul.schema, {}), {.reference = true}); });
  EXPECT_NE(message.find("the reference implementation runs on cpu, the inputs are on cuda:0"), std::string::npos)
      << message;
}

TEST(Devices, CopyToAnUnavailableDeviceSaysWhy) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a CUDA device";
  float memory[4] = {};
  const Tensor host = Tensor::zeros({4}, DType::Float32);
  const std::string message = error_of([&] { on_device(memory, kCuda0).copy_(host); });
  EXPECT_NE(message.find("CUDA is not available"), std::string::npos) << message;
}

// How a backend library opens, each in a process of its own (the backend
// opens once per process) that loads a fake one through OPGRAPH_CUDA_BACKEND.
class BackendLibrary : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// Exits 0 when `check` returns true, else prints why it failed and exits 1.
[[noreturn]] void exit_with(const char* library, bool (*check)()) {
  setenv("OPGRAPH_CUDA_BACKEND", library, 1);
  try {
    std::exit(check() ? 0 : 1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(1);
  }
}

TEST_F(BackendLibrary, HandsItsKernelsToTheRegistryAsItOpens) {
  EXPECT_EXIT(exit_with(OPGRAPH_TEST_FAKE_BACKEND,
                        [] {
                          const OpDef& mul = Registry::global().get("aten::mul.Tensor");
                          if (mul.kernels[static_cast<size_t>(DeviceType::CUDA)]) return false;  // not before it opens
                          Tensor a = Tensor::empty({3}, DType::Float32), b = Tensor::empty({3}, DType::Float32);
                          std::fill_n(a.data_ptr<float>(), 3, 2.0f);
                          std::fill_n(b.data_ptr<float>(), 3, 3.0f);
                          a = a.to(kCuda0);
                          b = b.to(kCuda0);
                          const Tensor product = call("aten::mul.Tensor", std::vector{a, b})[0].to(Device::cpu());
                          return product.data_ptr<float>()[2] == 60.0f;  // the fake kernel's 2 * 3 * 10
                        }),
              ::testing::ExitedWithCode(0), "");
}

TEST_F(BackendLibrary, WhoseKernelsDoNotFitStaysUnavailableWithTheReason) {
  EXPECT_EXIT(exit_with(OPGRAPH_TEST_FAKE_BACKEND_UNDECLARED_OP,
                        [] {
                          std::string why;
                          return !device_available(DeviceType::CUDA, &why) &&
                                 why.find("taking the kernels of ") != std::string::npos &&
                                 why.find(
                                     "cannot add a cuda kernel for op 'fake::undeclared' (fake_backend.cpp): no "
                                     "such op is declared") != std::string::npos;
                        }),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace opgraph
