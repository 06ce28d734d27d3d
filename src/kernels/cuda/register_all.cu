#include <filesystem>

#include "kernels/cuda/register.h"

namespace opgraph::cuda {

void add_cuda_kernel(Registry& registry, const char* op, KernelFn kernel, std::source_location where) {
  registry.add_kernel(op, DeviceType::CUDA, std::move(kernel),
                      detail::concat(std::filesystem::path(where.file_name()).filename().string(), ":", where.line()));
}

void register_cuda_kernels(Registry& registry) {
  register_softmax_kernels(registry);
  register_cross_entropy_kernels(registry);
  register_pool_kernels(registry);
  register_gemm_kernels(registry);
  register_conv_kernels(registry);
}

}  // namespace opgraph::cuda
