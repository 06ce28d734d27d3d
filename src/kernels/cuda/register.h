// The built-in CUDA kernels: each family file adds CUDA kernels to ops the
// CPU side has declared (same schema, same shape function), so the registry
// picks them by the inputs' device. Called once, when the backend opens.
#pragma once

#include <cuda_runtime.h>

#include <source_location>

#include "opgraph/registry/registry.h"

namespace opgraph::cuda {

void register_cuda_kernels(Registry& registry);

void register_softmax_kernels(Registry& registry);
void register_cross_entropy_kernels(Registry& registry);
void register_pool_kernels(Registry& registry);
void register_gemm_kernels(Registry& registry);
void register_conv_kernels(Registry& registry);

// Adds `kernel` as op's CUDA kernel, naming this file and line as its source.
void add_cuda_kernel(Registry& registry, const char* op, KernelFn kernel,
                     std::source_location where = std::source_location::current());

inline cudaStream_t stream_of(const KernelContext& context) { return static_cast<cudaStream_t>(context.stream()); }

// Blocks of `threads` covering n items, capped where a grid-stride loop takes over.
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace opgraph::cuda
