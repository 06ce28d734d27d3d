// Block-wide reductions for kernels that give one block to one row.
#pragma once

namespace opgraph::cuda {

template <typename T, typename Op>
__device__ T warp_reduce(T value, Op op) {
  for (int offset = 16; offset > 0; offset /= 2) value = op(value, __shfl_down_sync(0xffffffffu, value, offset));
  return value;
}

// Every thread of the block gets the reduction of all threads' `value`.
// `shared` holds at least 32 values; blockDim.x is a multiple of 32.
template <typename T, typename Op>
__device__ T block_reduce(T value, Op op, T* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  value = warp_reduce(value, op);
  __syncthreads();  // `shared` may still be read by an earlier reduction
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  value = shared[0];
  for (int w = 1; w < warps; ++w) value = op(value, shared[w]);
  return value;
}

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

// The row's maximum and the log of sum(exp(x - max)), by the block's threads:
// log_softmax(x) = x - max - log_sum, as softmax and cross-entropy take it.
template <typename T>
struct SoftmaxStats {
  T max, log_sum;
};

template <typename T>
__device__ SoftmaxStats<T> softmax_stats(const T* row, int64_t n, T* shared) {
  T max = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) max = row[k] > max ? row[k] : max;
  max = block_reduce(max, Max{}, shared);
  T sum = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) sum += exp(row[k] - max);
  return {max, log(block_reduce(sum, Sum{}, shared))};
}

}  // namespace opgraph::cuda
