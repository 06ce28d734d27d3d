#include <filesystem>

#include "kernels/builtin.h"
#include "kernels/cuda/register.h"

namespace opgraph::cuda {

void add_cuda_kernel(CudaKernels& kernels, const char* op, KernelSpec kernel, std::source_location where) {
  std::string source = detail::concat(std::filesystem::path(where.file_name()).filename().string(), ":", where.line());
  auto bind = [kernel = std::move(kernel), source](const OpDef& declared) {
    return kernel.bind(declared.schema, "cuda kernel", source);
  };
  kernels.push_back({op, DeviceType::CUDA, nullptr, std::move(source), std::move(bind)});
}

CudaKernels builtin_kernels() {
  CudaKernels kernels;
  register_softmax_kernels(kernels);
  register_cross_entropy_kernels(kernels);
  register_pool_kernels(kernels);
  register_gemm_kernels(kernels);
  register_conv_kernels(kernels);
  return kernels;
}

}  // namespace opgraph::cuda

// The batch the registry takes as the backend opens (src/global_registry.cpp).
extern "C" __attribute__((visibility("default"))) void opgraph_backend_kernels(
    std::vector<opgraph::KernelDef>* kernels) {
  static_assert(std::is_same_v<decltype(&opgraph_backend_kernels), opgraph::kernels::BackendKernelsFn>);
  *kernels = opgraph::cuda::builtin_kernels();
}
