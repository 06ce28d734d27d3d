// The built-in CUDA kernels: each family file adds CUDA kernels to ops the
// CPU side declares (same schema, same shape function), so the registry
// picks them by the inputs' device. The backend's library exports them as
// one batch (kBackendKernelsSymbol, kernels/builtin.h), which the registry
// takes as the backend opens, as it takes the CPU kernels' ops.
#pragma once

#include <cuda_runtime.h>

#include <source_location>
#include <vector>

#include "kernels/typed.h"
#include "opgraph/registry/registry.h"

namespace opgraph::cuda {

using kernels::KernelSpec;

using CudaKernels = std::vector<KernelDef>;

CudaKernels builtin_kernels();

void register_softmax_kernels(CudaKernels& kernels);
void register_cross_entropy_kernels(CudaKernels& kernels);
void register_pool_kernels(CudaKernels& kernels);
void register_gemm_kernels(CudaKernels& kernels);
void register_conv_kernels(CudaKernels& kernels);

// Adds `kernel` as op's CUDA kernel, naming this file and line as its source;
// a typed kernel (kernels/typed.h) is checked against the op's schema as the
// registry takes the batch.
void add_cuda_kernel(CudaKernels& kernels, const char* op, KernelSpec kernel,
                     std::source_location where = std::source_location::current());

inline cudaStream_t stream_of(const KernelContext& context) { return static_cast<cudaStream_t>(context.stream()); }

// Blocks of `threads` covering n items, capped where a grid-stride loop takes over.
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace opgraph::cuda
