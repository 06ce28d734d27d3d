// Turning CUDA runtime status codes into opgraph::Error.
#pragma once

#include <cuda_runtime.h>

#include "opgraph/core/error.h"

namespace opgraph::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call) {
  throw Error(
      detail::concat("CUDA error in ", call, ": ", cudaGetErrorName(status), " (", cudaGetErrorString(status), ")"));
}

}  // namespace opgraph::cuda

// Throws opgraph::Error naming the call and the CUDA error unless it succeeded.
#define OPGRAPH_CUDA_CHECK(call)                                     \
  do {                                                               \
    const cudaError_t opgraph_cuda_status = (call);                  \
    if (opgraph_cuda_status != cudaSuccess) {                        \
      ::opgraph::cuda::throw_cuda_error(opgraph_cuda_status, #call); \
    }                                                                \
  } while (0)
