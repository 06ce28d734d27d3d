// Pooling over 1, 2 or 3 trailing spatial dims of (batch, channels, ...) or
// unbatched (channels, ...) tensors: max_pool2d/3d (with ATen's indices or
// without), avg_pool2d/3d, adaptive_avg_pool1d/2d/3d and their gradients.
//
// Each output element reduces one window of its input plane (a volume for
// 3-D ops; every op runs as 3-D with leading axes of size 1, see shape/pool.h). The
// kernels split the planes over threads; the reference walks every window in
// order on one thread. Max and average pooling forward have faster kernels of
// their own (engines/pool_fast.cpp), which adaptive_avg_pool1d/2d share when their
// windows are regular.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cpu/engines/pool_fast.h"
#include "kernels/define.h"
#include "kernels/shape/pool.h"

namespace opgraph::kernels {
namespace {

using namespace pool;

Shape pooled_shape(const TensorMeta& input, const Pooling& p) {
  Shape shape = input.shape;
  for (int d = 0; d < p.dims; ++d) shape[shape.size() - p.dims + d] = p.axes()[3 - p.dims + d]->out;
  return shape;
}

// Where in the plane the window's maximum is: the first one, or the last NaN,
// as in PyTorch. Taps sit on the dilation grid anchored at the unclipped window
// origin (oz, oy, ox) * stride - padding.
template <typename T>
int64_t argmax(const T* plane, const Pooling& p, const Window& win, int64_t oz, int64_t oy, int64_t ox) {
  auto first = [](int64_t lo, const Axis& a, int64_t o) {
    const int64_t origin = o * a.stride - a.padding;
    return origin + (lo - origin + a.dilation - 1) / a.dilation * a.dilation;
  };
  int64_t best = -1;
  for (int64_t z = first(win.z0, p.d, oz); z < win.z1; z += p.d.dilation) {
    for (int64_t y = first(win.y0, p.h, oy); y < win.y1; y += p.h.dilation) {
      for (int64_t x = first(win.x0, p.w, ox); x < win.x1; x += p.w.dilation) {
        const int64_t at = (z * p.h.in + y) * p.w.in + x;
        if (best < 0 || plane[at] > plane[best] || std::isnan(plane[at])) best = at;
      }
    }
  }
  return best;
}

// Calls fn(offset) for every element of the window.
template <typename Fn>
void for_window(const Pooling& p, const Window& win, Fn&& fn) {
  for (int64_t z = win.z0; z < win.z1; ++z) {
    for (int64_t y = win.y0; y < win.y1; ++y) {
      for (int64_t x = win.x0; x < win.x1; ++x) fn((z * p.h.in + y) * p.w.in + x);
    }
  }
}

template <typename T>
T average_of(const T* plane, const Pooling& p, const Window& win) {
  double sum = 0;
  for_window(p, win, [&](int64_t at) { sum += plane[at]; });
  return static_cast<T>(sum / static_cast<double>(win.divisor));
}

// Calls fn(o, window, oz, oy, ox) for each output o of a plane, in order.
template <typename Fn>
void for_outputs(const Pooling& p, Fn&& fn) {
  int64_t o = 0;
  for (int64_t oz = 0; oz < p.d.out; ++oz) {
    for (int64_t oy = 0; oy < p.h.out; ++oy) {
      for (int64_t ox = 0; ox < p.w.out; ++ox) fn(o++, window(p, oz, oy, ox), oz, oy, ox);
    }
  }
}

// Forward: out holds the pooled planes, and `indices`, where given, each
// max's position in its plane. Backward: out is the gradient of the input
// planes; each output's gradient goes back to the element its max came from,
// or is spread evenly over its average's window.
template <typename T, Reduce R, bool Backward>
void pool_planes(const T* in, const T* grad, T* out, const Pooling& p, int64_t first, int64_t last,
                 int64_t* indices = nullptr) {
  const int64_t in_size = p.plane_size(), out_size = p.pooled_size();
  for (int64_t plane = first; plane < last; ++plane) {
    const T* src = in + plane * in_size;
    T* dst = out + plane * (Backward ? in_size : out_size);
    if (Backward) std::fill(dst, dst + in_size, T(0));
    for_outputs(p, [&](int64_t o, const Window& win, int64_t oz, int64_t oy, int64_t ox) {
      if constexpr (R == Reduce::Max) {
        const int64_t at = argmax(src, p, win, oz, oy, ox);
        if (Backward) {
          dst[at] += grad[plane * out_size + o];
        } else {
          dst[o] = src[at];
          if (indices != nullptr) indices[plane * out_size + o] = at;
        }
      } else if constexpr (Backward) {
        const T share = grad[plane * out_size + o] / static_cast<T>(win.divisor);
        for_window(p, win, [&](int64_t at) { dst[at] += share; });
      } else {
        dst[o] = average_of(src, p, win);
      }
    });
  }
}

// body(first, last) over the planes [0, planes): on the pool's threads, or
// (for the reference) in one call.
template <bool Threaded, typename Body>
void run_planes(const KernelContext& context, int64_t planes, const Pooling& p, const Body& body) {
  if (Threaded) {
    parallel_planes(context, planes, p, body);
  } else {
    body(0, planes);
  }
}

// Runs a pass over every plane of `input`; `grad` is only read backward.
template <Reduce R, bool Backward, bool Threaded>
void run_pool(const KernelContext& context, const Tensor& input, const Tensor& grad, const Tensor& out,
              const Pooling& p, int64_t* indices = nullptr) {
  const int64_t planes = plane_count(input, p);
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* grad_data = Backward ? grad.data_ptr<T>() : nullptr;
    run_planes<Threaded>(context, planes, p, [&](int64_t first, int64_t last) {
      pool_planes<T, R, Backward>(input.data_ptr<T>(), grad_data, out.data_ptr<T>(), p, first, last, indices);
    });
  });
}

// The gradient ops take (grad_output, self, attributes): grad_output must have
// the forward output's shape; the result has self's.
std::vector<TensorMeta> pool_backward_shape(const TensorMeta& grad, const TensorMeta& self, const Pooling& p) {
  const TensorMeta forward{self.dtype, pooled_shape(self, p)};
  OPGRAPH_CHECK(grad == forward, "grad_output: expected ", forward.str(), " like the pooled output, got ", grad.str());
  return {self};
}

// --- max_pool2d, max_pool3d

using Ints = std::span<const int64_t>;

template <int Dims>
TensorMeta max_pool_shape(const TensorMeta& self, Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                          bool ceil_mode) {
  return {self.dtype, pooled_shape(self, max_pooling(self, {kernel_size, stride, padding, dilation, ceil_mode}, Dims))};
}

template <int Dims>
void max_pool_cpu(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                  Ints dilation, bool ceil_mode, const Tensor& out) {
  const Pooling p = max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, Dims);
  if (Dims == 2 && is_2x2_stride_2(p)) return run_max_pool_2x2(context, self, out, p);
  run_pool_fast<Reduce::Max>(context, self, out, p);
}

template <int Dims>
void max_pool_reference(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                        Ints dilation, bool ceil_mode, const Tensor& out) {
  run_pool<Reduce::Max, false, false>(
      context, self, Tensor(), out,
      max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, Dims));
}

// --- max_pool2d_with_indices, max_pool3d_with_indices: the values and, as
// ATen, each max's flat position in its input plane ((z * height + y) * width + x).

template <int Dims>
std::vector<TensorMeta> max_pool_with_indices_shape(const TensorMeta& self, Ints kernel_size, Ints stride, Ints padding,
                                                    Ints dilation, bool ceil_mode) {
  const Shape shape = pooled_shape(self, max_pooling(self, {kernel_size, stride, padding, dilation, ceil_mode}, Dims));
  return {{self.dtype, shape}, {DType::Int64, shape}};
}

template <int Dims, bool Threaded>
void max_pool_with_indices_cpu(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride,
                               Ints padding, Ints dilation, bool ceil_mode, const Tensor& values,
                               const Tensor& indices) {
  if (indices.numel() == 0) return;
  const Pooling p = max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, Dims);
  if (Threaded && Dims == 2) return run_pool_fast<Reduce::Max>(context, self, values, p, indices.data_ptr<int64_t>());
  run_pool<Reduce::Max, false, Threaded>(context, self, Tensor(), values, p, indices.data_ptr<int64_t>());
}

// --- avg_pool2d, avg_pool3d; avg_pool1d, which has no divisor_override

template <int Dims>
TensorMeta avg_pool_shape(const TensorMeta& self, Ints kernel_size, Ints stride, Ints padding, bool ceil_mode,
                          bool count_include_pad, std::optional<int64_t> divisor_override) {
  const AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  return {self.dtype, pooled_shape(self, average_pooling(self, args, Dims))};
}

template <bool kReference, int Dims>
void avg_pool_kernel(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                     const Tensor& out) {
  const AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  const Pooling p = average_pooling(self.meta(), args, Dims);
  if constexpr (kReference) {
    run_pool<Reduce::Average, false, false>(context, self, Tensor(), out, p);
  } else {
    run_pool_fast<Reduce::Average>(context, self, out, p);
  }
}

TensorMeta avg_pool1d_shape(const TensorMeta& self, Ints kernel_size, Ints stride, Ints padding, bool ceil_mode,
                            bool count_include_pad) {
  return avg_pool_shape<1>(self, kernel_size, stride, padding, ceil_mode, count_include_pad, std::nullopt);
}

template <bool kReference>
void avg_pool1d_kernel(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints stride, Ints padding,
                       bool ceil_mode, bool count_include_pad, const Tensor& out) {
  avg_pool_kernel<kReference, 1>(context, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                 std::nullopt, out);
}

// --- adaptive_avg_pool1d/2d/3d

// Windows that split each input axis into `size` nearly equal parts.
Pooling adaptive_pooling(const TensorMeta& input, const std::vector<int64_t>& size, int dims) {
  check_pooled_input(input, dims);
  Pooling p;
  p.dims = dims;
  p.adaptive = true;
  for (int d = 0; d < dims; ++d) {
    Axis& a = *p.axes()[3 - dims + d];
    a.in = input.shape[input.dim() - dims + d];
    a.out = size[d];
  }
  OPGRAPH_CHECK(std::all_of(size.begin(), size.end(), [](int64_t s) { return s >= 0; }),
                "output_size: expected sizes of at least 0, got ", shape_str(size));
  OPGRAPH_CHECK(p.plane_size() > 0 || input.numel() == 0 || p.pooled_size() == 0, "self: cannot pool an empty plane ",
                input.str(), " to ", shape_str(size));
  return p;
}

template <int Dims>
Pooling adaptive_windows(const TensorMeta& input, Ints output_size) {
  const auto size = per_axis(output_size, "output_size", Dims, {});
  OPGRAPH_CHECK(size.size() == Dims, "output_size: expected 1 or ", Dims, " values, got none");
  return adaptive_pooling(input, size, Dims);
}

template <int Dims>
TensorMeta adaptive_shape(const TensorMeta& self, Ints output_size) {
  return {self.dtype, pooled_shape(self, adaptive_windows<Dims>(self, output_size))};
}

// When each output size divides its input size (a global pool among them),
// adaptive windows over at most 2 dims are avg_pool2d's: a kernel and stride
// of in / out, no padding. Those run on avg_pool2d's fast kernel.
std::optional<Pooling> as_regular_windows(const Pooling& adaptive) {
  if (adaptive.d.in != 1 || adaptive.d.out != 1) return std::nullopt;
  Pooling p;
  Axis* axes[] = {&p.h, &p.w};
  const Axis* given[] = {&adaptive.h, &adaptive.w};
  for (int d = 0; d < 2; ++d) {
    const Axis& a = *given[d];
    if (a.out == 0 || a.in % a.out != 0) return std::nullopt;
    *axes[d] = {a.in, a.out, a.in / a.out, a.in / a.out, 0, 1};
  }
  return p;
}

template <int Dims>
void adaptive_cpu(const KernelContext& context, const Tensor& self, Ints output_size, const Tensor& out) {
  const Pooling p = adaptive_windows<Dims>(self.meta(), output_size);
  if (p.pooled_size() == 1) return run_global_average(context, self, out, p);
  if (const std::optional<Pooling> regular = as_regular_windows(p)) {
    return run_pool_fast<Reduce::Average>(context, self, out, *regular);
  }
  run_pool<Reduce::Average, false, true>(context, self, Tensor(), out, p);
}

template <int Dims>
void adaptive_reference(const KernelContext& context, const Tensor& self, Ints output_size, const Tensor& out) {
  run_pool<Reduce::Average, false, false>(context, self, Tensor(), out,
                                          adaptive_windows<Dims>(self.meta(), output_size));
}

// --- gradients

std::vector<TensorMeta> max_pool_backward_shape(const TensorMeta& grad_output, const TensorMeta& self, Ints kernel_size,
                                                Ints stride, Ints padding, Ints dilation, bool ceil_mode) {
  return pool_backward_shape(grad_output, self,
                             max_pooling(self, {kernel_size, stride, padding, dilation, ceil_mode}, 2));
}

template <bool Threaded>
void max_pool_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                           Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool ceil_mode,
                           const Tensor& grad_input) {
  const Pooling p = max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, 2);
  if (Threaded && is_2x2_stride_2(p)) return run_max_pool_2x2_backward(context, self, grad_output, grad_input, p);
  run_pool<Reduce::Max, true, Threaded>(context, self, grad_output, grad_input, p);
}

// max_pool2d_with_indices_backward: (grad_output, self, ..., indices); each
// output's gradient goes to the position its index names.
std::vector<TensorMeta> max_pool_indices_backward_shape(const TensorMeta& grad_output, const TensorMeta& self,
                                                        Ints kernel_size, Ints stride, Ints padding, Ints dilation,
                                                        bool ceil_mode, const TensorMeta& indices) {
  const auto result =
      pool_backward_shape(grad_output, self, max_pooling(self, {kernel_size, stride, padding, dilation, ceil_mode}, 2));
  OPGRAPH_CHECK(indices.dtype == DType::Int64 && indices.shape == grad_output.shape, "indices: expected int64",
                shape_str(grad_output.shape), " like grad_output, got ", indices.str());
  return result;
}

template <bool Threaded>
void max_pool_indices_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                                   Ints kernel_size, Ints stride, Ints padding, Ints dilation, bool ceil_mode,
                                   const Tensor& indices_tensor, const Tensor& grad_input) {
  const Pooling p = max_pooling(self.meta(), {kernel_size, stride, padding, dilation, ceil_mode}, 2);
  const int64_t in_size = p.plane_size(), out_size = p.pooled_size(), planes = plane_count(self, p);
  if (grad_input.numel() == 0) return;
  const int64_t* indices = indices_tensor.data_ptr<int64_t>();
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* grad = grad_output.data_ptr<T>();
    T* result = grad_input.data_ptr<T>();
    run_planes<Threaded>(context, planes, p, [&](int64_t first, int64_t last) {
      for (int64_t plane = first; plane < last; ++plane) {
        T* dst = result + plane * in_size;
        std::fill(dst, dst + in_size, T(0));
        for (int64_t o = plane * out_size; o < (plane + 1) * out_size; ++o) {
          OPGRAPH_CHECK(indices[o] >= 0 && indices[o] < in_size, "indices: expected positions in [0, ", in_size,
                        ") of a plane, got ", indices[o]);
          dst[indices[o]] += grad[o];
        }
      }
    });
  });
}

std::vector<TensorMeta> avg_pool_backward_shape(const TensorMeta& grad_output, const TensorMeta& self, Ints kernel_size,
                                                Ints stride, Ints padding, bool ceil_mode, bool count_include_pad,
                                                std::optional<int64_t> divisor_override) {
  const AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  return pool_backward_shape(grad_output, self, average_pooling(self, args, 2));
}

template <bool Threaded>
void avg_pool_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                           Ints kernel_size, Ints stride, Ints padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, const Tensor& grad_input) {
  const AvgPoolArgs args{kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override};
  run_pool<Reduce::Average, true, Threaded>(context, self, grad_output, grad_input,
                                            average_pooling(self.meta(), args, 2));
}

// _adaptive_avg_pool2d_backward(grad_output, self): the windows come from the
// two shapes.
Pooling adaptive_backward_windows(const TensorMeta& grad, const TensorMeta& self) {
  OPGRAPH_CHECK(grad.dim() == self.dim() && grad.dim() >= 2, "grad_output: expected rank ", self.dim(), " like self ",
                self.str(), ", got ", grad.str());
  return adaptive_pooling(self, {grad.shape[grad.dim() - 2], grad.shape[grad.dim() - 1]}, 2);
}

std::vector<TensorMeta> adaptive_backward_shape(const TensorMeta& grad_output, const TensorMeta& self) {
  return pool_backward_shape(grad_output, self, adaptive_backward_windows(grad_output, self));
}

template <bool Threaded>
void adaptive_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& self,
                           const Tensor& grad_input) {
  run_pool<Reduce::Average, true, Threaded>(context, self, grad_output, grad_input,
                                            adaptive_backward_windows(grad_output.meta(), self.meta()));
}

}  // namespace

void register_pool_ops(BuiltinOps& builtins) {
  // Gradient ops first: the forward ops name them. ATen's max_pool2d gradient
  // needs the forward's indices; this one finds the maxima again instead.
  define(builtins, {.schema = "opgraph::max_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
                              "int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                    .shape = max_pool_backward_shape,
                    .cpu = max_pool_backward_cpu<true>,
                    .reference = max_pool_backward_cpu<false>});
  define(builtins,
         {.schema = "aten::max_pool2d_with_indices_backward(Tensor grad_output, Tensor self, int[2] kernel_size, "
                    "int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices) -> Tensor",
          .shape = max_pool_indices_backward_shape,
          .cpu = max_pool_indices_backward_cpu<true>,
          .reference = max_pool_indices_backward_cpu<false>});
  define(builtins,
         {.schema = "aten::avg_pool2d_backward(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, "
                    "int[2] padding, bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor",
          .shape = avg_pool_backward_shape,
          .cpu = avg_pool_backward_cpu<true>,
          .reference = avg_pool_backward_cpu<false>});
  define(builtins, {.schema = "aten::_adaptive_avg_pool2d_backward(Tensor grad_output, Tensor self) -> Tensor",
                    .shape = adaptive_backward_shape,
                    .cpu = adaptive_backward_cpu<true>,
                    .reference = adaptive_backward_cpu<false>});
  define(builtins, {.schema = "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
                              "int[2] dilation=1, bool ceil_mode=False) -> Tensor",
                    .shape = max_pool_shape<2>,
                    .cpu = max_pool_cpu<2>,
                    .reference = max_pool_reference<2>,
                    .backward = "opgraph::max_pool2d_backward"});
  define(builtins, {.schema = "aten::max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
                              "int[3] dilation=1, bool ceil_mode=False) -> Tensor",
                    .shape = max_pool_shape<3>,
                    .cpu = max_pool_cpu<3>,
                    .reference = max_pool_reference<3>});
  define(builtins, {.schema = "aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
                              "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
                    .shape = max_pool_with_indices_shape<2>,
                    .cpu = max_pool_with_indices_cpu<2, true>,
                    .reference = max_pool_with_indices_cpu<2, false>});
  define(builtins, {.schema = "aten::max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], "
                              "int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
                    .shape = max_pool_with_indices_shape<3>,
                    .cpu = max_pool_with_indices_cpu<3, true>,
                    .reference = max_pool_with_indices_cpu<3, false>});
  define(builtins, {.schema = "aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
                              "bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
                    .shape = avg_pool1d_shape,
                    OPGRAPH_CPU_AND_REFERENCE(avg_pool1d_kernel)});
  define(builtins,
         {.schema = "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
                    "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          .shape = avg_pool_shape<2>,
          .cpu = avg_pool_kernel<false, 2>,
          .reference = avg_pool_kernel<true, 2>,
          .backward = "aten::avg_pool2d_backward"});
  define(builtins,
         {.schema = "aten::avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
                    "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
          .shape = avg_pool_shape<3>,
          .cpu = avg_pool_kernel<false, 3>,
          .reference = avg_pool_kernel<true, 3>});
  define(builtins, {.schema = "aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor",
                    .shape = adaptive_shape<1>,
                    .cpu = adaptive_cpu<1>,
                    .reference = adaptive_reference<1>});
  define(builtins, {.schema = "aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
                    .shape = adaptive_shape<2>,
                    .cpu = adaptive_cpu<2>,
                    .reference = adaptive_reference<2>});
  define(builtins, {.schema = "aten::_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",
                    .shape = adaptive_shape<2>,
                    .cpu = adaptive_cpu<2>,
                    .reference = adaptive_reference<2>,
                    .backward = "aten::_adaptive_avg_pool2d_backward"});
  define(builtins, {.schema = "aten::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor",
                    .shape = adaptive_shape<3>,
                    .cpu = adaptive_cpu<3>,
                    .reference = adaptive_reference<3>});
  define(builtins, {.schema = "aten::_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor",
                    .shape = adaptive_shape<3>,
                    .cpu = adaptive_cpu<3>,
                    .reference = adaptive_reference<3>});
}

}  // namespace opgraph::kernels
