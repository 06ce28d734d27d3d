// softmax and log_softmax along one dim, and their gradients, on CUDA. The
// tensor is seen as (outer, size, inner): when the dim is the last (inner 1)
// a block takes a row and reduces it with its threads; otherwise a thread
// takes a column of `size` elements `inner` apart.
#include <cmath>

#include "kernels/cuda/reduce_block.cuh"
#include "kernels/cuda/register.h"
#include "kernels/define.h"

namespace opgraph::cuda {
namespace {

enum class Kind { Softmax, LogSoftmax };

constexpr int kRowThreads = 256;

struct Geometry {
  int64_t outer, size, inner;
};

Geometry geometry(const Tensor& t, int64_t dim) {
  const int64_t rank = t.dim();
  const int64_t d = dim < 0 ? dim + rank : dim;
  Geometry g{1, rank == 0 ? 1 : t.shape()[d], 1};
  for (int64_t i = 0; i < d; ++i) g.outer *= t.shape()[i];
  for (int64_t i = d + 1; i < rank; ++i) g.inner *= t.shape()[i];
  return g;
}

template <typename T>
__global__ void softmax_rows(Kind kind, const T* x, T* y, int64_t size) {
  __shared__ T shared[32];
  const T* row = x + blockIdx.x * size;
  T* out = y + blockIdx.x * size;
  const SoftmaxStats<T> stats = softmax_stats(row, size, shared);
  for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
    const T log_p = row[k] - stats.max - stats.log_sum;
    out[k] = kind == Kind::Softmax ? exp(log_p) : log_p;
  }
}

template <typename T>
__global__ void softmax_columns(Kind kind, const T* x, T* y, Geometry g) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < g.outer * g.inner;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = c / g.inner * g.size * g.inner + c % g.inner;
    T max = -INFINITY;
    for (int64_t k = 0; k < g.size; ++k) max = x[base + k * g.inner] > max ? x[base + k * g.inner] : max;
    T sum = 0;
    for (int64_t k = 0; k < g.size; ++k) sum += exp(x[base + k * g.inner] - max);
    const T log_sum = log(sum);
    for (int64_t k = 0; k < g.size; ++k) {
      const T shifted = x[base + k * g.inner] - max;
      y[base + k * g.inner] = kind == Kind::Softmax ? exp(shifted) / sum : shifted - log_sum;
    }
  }
}

// softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy).
template <typename T>
__device__ T backward_term(Kind kind, T dy, T y) {
  return kind == Kind::Softmax ? dy * y : dy;
}
template <typename T>
__device__ T backward_value(Kind kind, T dy, T y, T sum) {
  return kind == Kind::Softmax ? y * (dy - sum) : dy - exp(y) * sum;
}

template <typename T>
__global__ void softmax_backward_rows(Kind kind, const T* dy, const T* y, T* dx, int64_t size) {
  __shared__ T shared[32];
  const int64_t offset = blockIdx.x * size;
  T sum = 0;
  for (int64_t k = threadIdx.x; k < size; k += blockDim.x) sum += backward_term(kind, dy[offset + k], y[offset + k]);
  sum = block_reduce(sum, Sum{}, shared);
  for (int64_t k = threadIdx.x; k < size; k += blockDim.x) {
    dx[offset + k] = backward_value(kind, dy[offset + k], y[offset + k], sum);
  }
}

template <typename T>
__global__ void softmax_backward_columns(Kind kind, const T* dy, const T* y, T* dx, Geometry g) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < g.outer * g.inner;
       c += int64_t(gridDim.x) * blockDim.x) {
    const int64_t base = c / g.inner * g.size * g.inner + c % g.inner;
    T sum = 0;
    for (int64_t k = 0; k < g.size; ++k) sum += backward_term(kind, dy[base + k * g.inner], y[base + k * g.inner]);
    for (int64_t k = 0; k < g.size; ++k) {
      const int64_t i = base + k * g.inner;
      dx[i] = backward_value(kind, dy[i], y[i], sum);
    }
  }
}

// Grids are capped at 65535 rows per launch; longer batches take several.
template <typename Launch>
void over_rows(int64_t rows, Launch&& launch) {
  for (int64_t first = 0; first < rows; first += 65535) launch(first, std::min<int64_t>(rows - first, 65535));
}

// _softmax and softmax.int (and their log forms) differ in their last
// argument only, which the shape functions check and the kernels do not read.
template <Kind kind, typename Unread>
void softmax_kernel(const KernelContext& context, const Tensor& x, int64_t dim, Unread, const Tensor& output) {
  if (x.numel() == 0) return;
  const Geometry g = geometry(x, dim);
  const cudaStream_t stream = stream_of(context);
  kernels::dispatch_floating(x.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data_ptr<const T>();
    T* out = output.data_ptr<T>();
    if (g.inner == 1) {
      over_rows(g.outer, [&](int64_t first, int64_t count) {
        softmax_rows<T>
            <<<unsigned(count), kRowThreads, 0, stream>>>(kind, in + first * g.size, out + first * g.size, g.size);
      });
    } else {
      softmax_columns<T><<<blocks_for(g.outer * g.inner, 256), 256, 0, stream>>>(kind, in, out, g);
    }
  });
}

template <Kind kind>
void softmax_backward_kernel(const KernelContext& context, const Tensor& grad_output, const Tensor& y, int64_t dim,
                             DType, const Tensor& grad_input) {
  if (y.numel() == 0) return;
  const Geometry g = geometry(y, dim);
  const cudaStream_t stream = stream_of(context);
  kernels::dispatch_floating(y.dtype(), "output", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = grad_output.data_ptr<const T>();
    const T* out = y.data_ptr<const T>();
    T* dx = grad_input.data_ptr<T>();
    if (g.inner == 1) {
      over_rows(g.outer, [&](int64_t first, int64_t count) {
        const int64_t offset = first * g.size;
        softmax_backward_rows<T>
            <<<unsigned(count), kRowThreads, 0, stream>>>(kind, dy + offset, out + offset, dx + offset, g.size);
      });
    } else {
      softmax_backward_columns<T><<<blocks_for(g.outer * g.inner, 256), 256, 0, stream>>>(kind, dy, out, dx, g);
    }
  });
}

template <Kind kind>
void add_softmax_kernels(CudaKernels& kernels) {
  constexpr bool log = kind == Kind::LogSoftmax;
  add_cuda_kernel(kernels, log ? "aten::log_softmax.int" : "aten::softmax.int",
                  softmax_kernel<kind, std::optional<DType>>);
  add_cuda_kernel(kernels, log ? "aten::_log_softmax" : "aten::_softmax", softmax_kernel<kind, bool>);
  add_cuda_kernel(kernels, log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data",
                  softmax_backward_kernel<kind>);
}

}  // namespace

void register_softmax_kernels(CudaKernels& kernels) {
  add_softmax_kernels<Kind::Softmax>(kernels);
  add_softmax_kernels<Kind::LogSoftmax>(kernels);
}

}  // namespace opgraph::cuda
