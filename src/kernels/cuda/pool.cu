// 2-D max and average pooling and their gradients on CUDA, over (N, C, H, W)
// or (C, H, W) inputs, with the geometry the CPU ops read from their
// attributes (kernels/shape/pool.h). One thread per output element; the
// gradients find each window again and add into the zeroed input gradient
// with atomics, since windows overlap when the stride is below the kernel.
#include <cmath>

#include "cuda/cuda_check.h"
#include "kernels/cuda/register.h"
#include "kernels/define.h"
#include "kernels/shape/pool.h"

namespace opgraph::cuda {
namespace {

// One spatial axis, as the kernels read it.
struct Axis2 {
  int64_t in, out, kernel, stride, padding, dilation;
};

// A 2-D pooling: the planes, both axes, and how an average divides.
struct Geometry {
  int64_t planes;
  Axis2 h, w;
  bool count_include_pad;
  int64_t divisor_override;  // 0: none
};

Geometry geometry_of(const kernels::pool::Pooling& p, const Tensor& input) {
  auto axis = [](const kernels::pool::Axis& a) {
    return Axis2{a.in, a.out, a.kernel, a.stride, a.padding, a.dilation};
  };
  const int64_t plane = p.h.in * p.w.in;
  return {plane == 0 ? 0 : input.numel() / plane, axis(p.h), axis(p.w), p.count_include_pad,
          p.divisor_override.value_or(0)};
}

// Where output index o's window starts (unclipped), and its taps inside the input.
struct Taps {
  int64_t origin, first, last;  // taps origin + k * dilation for first <= k < last
  int64_t padded;               // the window's extent within the padded input
};

__device__ Taps taps(const Axis2& a, int64_t o) {
  const int64_t origin = o * a.stride - a.padding;
  const int64_t first = origin < 0 ? (-origin + a.dilation - 1) / a.dilation : 0;
  int64_t last = a.kernel;
  while (last > first && origin + (last - 1) * a.dilation >= a.in) --last;
  const int64_t end = origin + a.kernel < a.in + a.padding ? origin + a.kernel : a.in + a.padding;
  return {origin, first, last, end - origin};
}

__device__ int64_t divisor(const Geometry& g, const Taps& y, const Taps& x) {
  if (g.divisor_override != 0) return g.divisor_override;
  if (g.count_include_pad) return y.padded * x.padded;
  return (y.last - y.first) * (x.last - x.first);
}

// The plane offset of output o's maximum: the first largest, or the last NaN, as PyTorch picks.
template <typename T>
__device__ int64_t argmax(const T* plane, const Geometry& g, const Taps& y, const Taps& x) {
  int64_t best = -1;
  for (int64_t ky = y.first; ky < y.last; ++ky) {
    for (int64_t kx = x.first; kx < x.last; ++kx) {
      const int64_t at = (y.origin + ky * g.h.dilation) * g.w.in + x.origin + kx * g.w.dilation;
      if (best < 0 || plane[at] > plane[best] || isnan(plane[at])) best = at;
    }
  }
  return best;
}

template <typename T>
__global__ void pool_forward(bool max, const T* input, T* output, Geometry g) {
  const int64_t per_plane = g.h.out * g.w.out;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < g.planes * per_plane;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = o / per_plane, oy = o % per_plane / g.w.out, ox = o % g.w.out;
    const T* in = input + plane * g.h.in * g.w.in;
    const Taps y = taps(g.h, oy), x = taps(g.w, ox);
    if (max) {
      const int64_t at = argmax(in, g, y, x);
      output[o] = at < 0 ? T(-INFINITY) : in[at];
      continue;
    }
    T sum = 0;
    for (int64_t ky = y.first; ky < y.last; ++ky) {
      for (int64_t kx = x.first; kx < x.last; ++kx) sum += in[(y.origin + ky) * g.w.in + x.origin + kx];
    }
    output[o] = sum / T(divisor(g, y, x));
  }
}

template <typename T>
__global__ void pool_backward(bool max, const T* grad_output, const T* input, T* grad_input, Geometry g) {
  const int64_t per_plane = g.h.out * g.w.out;
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; o < g.planes * per_plane;
       o += int64_t(gridDim.x) * blockDim.x) {
    const int64_t plane = o / per_plane, oy = o % per_plane / g.w.out, ox = o % g.w.out;
    const int64_t base = plane * g.h.in * g.w.in;
    const Taps y = taps(g.h, oy), x = taps(g.w, ox);
    if (max) {
      const int64_t at = argmax(input + base, g, y, x);
      if (at >= 0) atomicAdd(grad_input + base + at, grad_output[o]);
      continue;
    }
    const T share = grad_output[o] / T(divisor(g, y, x));
    for (int64_t ky = y.first; ky < y.last; ++ky) {
      for (int64_t kx = x.first; kx < x.last; ++kx) {
        atomicAdd(grad_input + base + (y.origin + ky) * g.w.in + x.origin + kx, share);
      }
    }
  }
}

constexpr int kThreads = 256;

using Ints = std::span<const int64_t>;

void run_pool(const KernelContext& context, bool max, const Tensor& self, const kernels::pool::Pooling& pooling,
              const Tensor& out) {
  if (out.numel() == 0) return;
  const Geometry g = geometry_of(pooling, self);
  kernels::dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    pool_forward<T><<<blocks_for(out.numel(), kThreads), kThreads, 0, stream_of(context)>>>(
        max, self.data_ptr<const T>(), out.data_ptr<T>(), g);
  });
}

void run_pool_backward(const KernelContext& context, bool max, const Tensor& grad_output, const Tensor& self,
                       const kernels::pool::Pooling& pooling, const Tensor& grad_input) {
  const cudaStream_t stream = stream_of(context);
  OPGRAPH_CUDA_CHECK(cudaMemsetAsync(grad_input.data(), 0, grad_input.nbytes(), stream));
  if (grad_output.numel() == 0) return;
  const Geometry g = geometry_of(pooling, self);
  kernels::dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    pool_backward<T><<<blocks_for(grad_output.numel(), kThreads), kThreads, 0, stream>>>(
        max, grad_output.data_ptr<const T>(), self.data_ptr<const T>(), grad_input.data_ptr<T>(), g);
  });
}

void max_pool_kernel(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                     Ints dilation, bool ceil_mode, const Tensor& out) {
  run_pool(context, true, self,
           kernels::pool::max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, 2), out);
}

void avg_pool_kernel(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                     const Tensor& out) {
  const kernels::pool::AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  run_pool(context, false, self, kernels::pool::average_pooling(self.meta(), args, 2), out);
}

void max_pool_backward_kernel(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                              Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool ceil_mode,
                              const Tensor& grad_input) {
  run_pool_backward(context, true, grad_output, self,
                    kernels::pool::max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, 2),
                    grad_input);
}

void avg_pool_backward_kernel(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                              Ints kernel_size, Ints stride, Ints padding, bool ceil_mode, bool count_include_pad,
                              std::optional<int64_t> divisor_override, const Tensor& grad_input) {
  const kernels::pool::AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  run_pool_backward(context, false, grad_output, self, kernels::pool::average_pooling(self.meta(), args, 2),
                    grad_input);
}

}  // namespace

void register_pool_kernels(CudaKernels& kernels) {
  add_cuda_kernel(kernels, "aten::max_pool2d", max_pool_kernel);
  add_cuda_kernel(kernels, "aten::avg_pool2d", avg_pool_kernel);
  add_cuda_kernel(kernels, "opgraph::max_pool2d_backward", max_pool_backward_kernel);
  add_cuda_kernel(kernels, "aten::avg_pool2d_backward", avg_pool_backward_kernel);
}

}  // namespace opgraph::cuda
