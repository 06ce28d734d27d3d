// The conv1d package's CUDA kernels (conv1d_cuda.cu), as plain launchers the
// registration (conv1d.cpp) calls: each queues its work on `stream` (a
// cudaStream_t) and returns, throwing std::runtime_error if a launch fails.
#pragma once

#include <cstdint>

namespace conv1d::cuda {

template <typename T>
void forward(const T* input, const T* kernel, T* out, int64_t n, int64_t kn, void* stream);

template <typename T>
void backward(const T* grad_output, const T* input, const T* kernel, T* grad_input, T* grad_kernel, int64_t n,
              int64_t kn, void* stream);

}  // namespace conv1d::cuda
