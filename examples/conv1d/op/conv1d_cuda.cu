// conv1d on CUDA, with shared-memory tiling of the input and the kernel taps:
// a block computes kTile outputs, walking the taps kChunk at a time; for each
// chunk it stages the taps and the kTile + kChunk - 1 input elements they
// touch in shared memory, so every global element is read once per chunk
// instead of once per tap. Any input_size and conv_size: elements past the
// input read as zero.
//
//   out[i]    = sum_{j < kn, i + j < n} in[i + j] * k[j]
//   d_in[p]   = sum_{j < kn, j <= p}    g[p - j] * k[j]
//   d_k[j]    = sum_{i + j < n}         g[i] * in[i + j]
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "conv1d_cuda.h"

namespace conv1d::cuda {
namespace {

constexpr int kTile = 256;   // outputs (threads) per block
constexpr int kChunk = 256;  // taps staged at a time
constexpr int kRows = 2048;  // input rows a gradient-of-kernel block sums over

template <typename T>
__device__ T load(const T* data, int64_t i, int64_t n) {
  return i >= 0 && i < n ? data[i] : T(0);
}

template <typename T>
__global__ void forward_kernel(const T* in, const T* k, T* out, int64_t n, int64_t kn) {
  __shared__ T taps[kChunk];
  __shared__ T window[kTile + kChunk - 1];
  const int64_t first = int64_t(blockIdx.x) * kTile;
  T sum = 0;
  for (int64_t k0 = 0; k0 < kn; k0 += kChunk) {
    const int count = kn - k0 < kChunk ? int(kn - k0) : kChunk;
    for (int t = threadIdx.x; t < kChunk; t += blockDim.x) taps[t] = t < count ? k[k0 + t] : T(0);
    for (int t = threadIdx.x; t < kTile + kChunk - 1; t += blockDim.x) window[t] = load(in, first + k0 + t, n);
    __syncthreads();
    for (int j = 0; j < count; ++j) sum += window[threadIdx.x + j] * taps[j];
    __syncthreads();
  }
  if (first + threadIdx.x < n) out[first + threadIdx.x] = sum;
}

// d_in over the same tiles: the window holds g[p0 - k0 - (kChunk - 1) + t].
template <typename T>
__global__ void grad_input_kernel(const T* g, const T* k, T* grad_input, int64_t n, int64_t kn) {
  __shared__ T taps[kChunk];
  __shared__ T window[kTile + kChunk - 1];
  const int64_t first = int64_t(blockIdx.x) * kTile;
  T sum = 0;
  for (int64_t k0 = 0; k0 < kn && k0 < first + kTile; k0 += kChunk) {
    const int count = kn - k0 < kChunk ? int(kn - k0) : kChunk;
    for (int t = threadIdx.x; t < kChunk; t += blockDim.x) taps[t] = t < count ? k[k0 + t] : T(0);
    const int64_t origin = first - k0 - (kChunk - 1);
    for (int t = threadIdx.x; t < kTile + kChunk - 1; t += blockDim.x) window[t] = load(g, origin + t, n);
    __syncthreads();
    for (int j = 0; j < count; ++j) sum += window[threadIdx.x + kChunk - 1 - j] * taps[j];
    __syncthreads();
  }
  if (first + threadIdx.x < n) grad_input[first + threadIdx.x] = sum;
}

// A block sums kRows rows of g for kTile taps (one per thread) and adds its
// partial sums into d_k, which starts zeroed.
template <typename T>
__global__ void grad_kernel_kernel(const T* g, const T* in, T* grad_kernel, int64_t n, int64_t kn) {
  __shared__ T rows[kChunk];
  __shared__ T window[kChunk + kTile - 1];
  const int64_t i_first = int64_t(blockIdx.x) * kRows;
  for (int64_t j_first = int64_t(blockIdx.y) * kTile; j_first < kn; j_first += int64_t(gridDim.y) * kTile) {
    T sum = 0;
    for (int64_t i0 = i_first; i0 < i_first + kRows && i0 < n; i0 += kChunk) {
      for (int t = threadIdx.x; t < kChunk; t += blockDim.x) rows[t] = load(g, i0 + t, n);
      for (int t = threadIdx.x; t < kChunk + kTile - 1; t += blockDim.x) window[t] = load(in, i0 + j_first + t, n);
      __syncthreads();
      for (int i = 0; i < kChunk; ++i) sum += rows[i] * window[i + threadIdx.x];
      __syncthreads();
    }
    if (j_first + threadIdx.x < kn) atomicAdd(grad_kernel + j_first + threadIdx.x, sum);
  }
}

void check_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": CUDA launch failed: " + cudaGetErrorString(status));
  }
}

unsigned tiles(int64_t n, int64_t per_block) { return static_cast<unsigned>((n + per_block - 1) / per_block); }

}  // namespace

template <typename T>
void forward(const T* input, const T* kernel, T* out, int64_t n, int64_t kn, void* stream) {
  if (n == 0) return;
  forward_kernel<T><<<tiles(n, kTile), kTile, 0, static_cast<cudaStream_t>(stream)>>>(input, kernel, out, n, kn);
  check_launch("conv1d");
}

template <typename T>
void backward(const T* grad_output, const T* input, const T* kernel, T* grad_input, T* grad_kernel, int64_t n,
              int64_t kn, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const cudaError_t zeroed = cudaMemsetAsync(grad_kernel, 0, static_cast<size_t>(kn) * sizeof(T), s);
  if (zeroed != cudaSuccess) {
    throw std::runtime_error(std::string("conv1d_backward: cannot zero grad_kernel: ") + cudaGetErrorString(zeroed));
  }
  if (n == 0) return;
  grad_input_kernel<T><<<tiles(n, kTile), kTile, 0, s>>>(grad_output, kernel, grad_input, n, kn);
  const dim3 grid(tiles(n, kRows), static_cast<unsigned>(std::min<int64_t>(tiles(kn, kTile), 65535)));
  grad_kernel_kernel<T><<<grid, kTile, 0, s>>>(grad_output, input, grad_kernel, n, kn);
  check_launch("conv1d_backward");
}

template void forward<float>(const float*, const float*, float*, int64_t, int64_t, void*);
template void forward<double>(const double*, const double*, double*, int64_t, int64_t, void*);
template void backward<float>(const float*, const float*, const float*, float*, float*, int64_t, int64_t, void*);
template void backward<double>(const double*, const double*, const double*, double*, double*, int64_t, int64_t, void*);

}  // namespace conv1d::cuda
