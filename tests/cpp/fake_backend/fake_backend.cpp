// A device backend library for the tests of how a backend opens, built in
// place of libopgraph_cuda.so and chosen with OPGRAPH_CUDA_BACKEND: "device"
// memory is host memory, and its one kernel multiplies there, so that a call
// on its tensors shows which kernel the registry picked. Built a second time
// with OPGRAPH_FAKE_BACKEND_UNDECLARED_OP, its kernel names an op nobody
// declares, which must leave the backend unavailable.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "opgraph/core/device_backend.h"
#include "opgraph/core/tensor.h"
#include "opgraph/registry/registry.h"

namespace {

using namespace opgraph;

class HostMemoryBackend final : public DeviceBackend {
 public:
  int device_count() const override { return 1; }
  void* allocate(size_t bytes, int) override { return std::malloc(bytes == 0 ? 1 : bytes); }
  void deallocate(void* memory, int) noexcept override { std::free(memory); }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_strided(const Tensor&, const Tensor&) override {
    throw Error("the fake backend copies contiguous data only");
  }
  void fill_zero(void* memory, size_t bytes, int) override { std::memset(memory, 0, bytes); }
  void* current_stream(int) const override { return nullptr; }
  void set_current_stream(int, void*) override {}
  void synchronize(int) override {}
  void check_kernel(std::string_view) override {}
};

// out = self * other * 10, float32: not what the CPU kernel computes.
void multiply_by_ten(const KernelContext&, std::span<const Tensor> in, std::span<const Tensor> out, const Attrs&) {
  const float *a = in[0].data_ptr<float>(), *b = in[1].data_ptr<float>();
  float* c = out[0].data_ptr<float>();
  for (int64_t i = 0; i < out[0].numel(); ++i) c[i] = a[i] * b[i] * 10;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) DeviceBackend* opgraph_cuda_backend_open(std::string*) {
  static HostMemoryBackend backend;
  return &backend;
}

extern "C" __attribute__((visibility("default"))) void opgraph_backend_kernels(std::vector<KernelDef>* kernels) {
#ifdef OPGRAPH_FAKE_BACKEND_UNDECLARED_OP
  const char* op = "fake::undeclared";
#else
  const char* op = "aten::mul.Tensor";
#endif
  kernels->push_back({op, DeviceType::CUDA, multiply_by_ten, "fake_backend.cpp"});
}
