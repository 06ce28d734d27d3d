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
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

}  // namespace opgraph::cuda
