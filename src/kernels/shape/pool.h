// Pooling geometry shared by the pooling kernels (pool.cpp) and the fast
// forward kernels (pool_fast.cpp): the axes of an op, the window of each
// output element, and the split of planes over threads.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels::pool {

// One output element's window: slices [z0, z1), rows [y0, y1) and columns
// [x0, x1), already clipped to the plane, and the divisor an average uses.
struct Window {
  int64_t z0, z1, y0, y1, x0, x1;
  int64_t divisor;
};

// Window geometry of a whole op, per axis.
struct Axis {
  int64_t in = 0, out = 0, kernel = 1, stride = 1, padding = 0, dilation = 1;
};

// An op's geometry over (depth, height, width); a 2-D op has depth 1, a 1-D op height 1 too.
struct Pooling {
  int dims = 2;  // spatial dims of the op; the axes before them have size 1
  Axis d{1, 1}, h{1, 1}, w;
  std::array<Axis*, 3> axes() { return {&d, &h, &w}; }
  std::array<const Axis*, 3> axes() const { return {&d, &h, &w}; }
  int64_t plane_size() const { return d.in * h.in * w.in; }
  int64_t pooled_size() const { return d.out * h.out * w.out; }
  bool adaptive = false;
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;
};

// The geometry max_pool{1,2,3}d's (with dilation) and avg_pool{1,2,3}d's
// (with their divisor) attributes give on `input`, checked: what their shape
// functions size outputs with, and what the CPU and CUDA kernels walk.
Pooling max_pooling(const TensorMeta& input, const Attrs& attrs, int dims);
Pooling average_pooling(const TensorMeta& input, const Attrs& attrs, int dims);

// One axis of the window of output index o: [lo, hi) clipped to the input,
// and the extent an average divides by when it counts padding.
struct Span {
  int64_t lo, hi, padded;
};

inline Span span(const Axis& a, bool adaptive, int64_t o) {
  if (adaptive) {
    // PyTorch's split: start = floor(i * in / out), end = ceil((i + 1) * in / out).
    const int64_t lo = o * a.in / a.out, hi = ((o + 1) * a.in + a.out - 1) / a.out;
    return {lo, hi, hi - lo};
  }
  const int64_t start = o * a.stride - a.padding;
  // Averages that count padding divide by the window clipped to the padded input.
  return {std::max<int64_t>(start, 0), std::min(start + (a.kernel - 1) * a.dilation + 1, a.in),
          std::min(start + a.kernel, a.in + a.padding) - start};
}

// The clipped window of output (oz, oy, ox); for averages, the divisor too.
inline Window window(const Pooling& p, int64_t oz, int64_t oy, int64_t ox) {
  const Span z = span(p.d, p.adaptive, oz), y = span(p.h, p.adaptive, oy), x = span(p.w, p.adaptive, ox);
  const int64_t inside = (z.hi - z.lo) * (y.hi - y.lo) * (x.hi - x.lo);
  const int64_t divisor = p.adaptive            ? inside
                          : p.divisor_override  ? *p.divisor_override
                          : p.count_include_pad ? z.padded * y.padded * x.padded
                                                : inside;
  return {z.lo, z.hi, y.lo, y.hi, x.lo, x.hi, divisor};
}

enum class Reduce { Max, Average };

inline int64_t plane_count(const Tensor& input, const Pooling& p) {
  return p.plane_size() == 0 ? 0 : input.numel() / p.plane_size();
}

// Runs body(first, last) over the planes [0, planes), in chunks of enough
// planes to cover ~64K input elements.
template <typename Body>
void parallel_planes(const KernelContext& context, int64_t planes, const Pooling& p, const Body& body) {
  context.pool->parallel_for(0, planes, std::max<int64_t>(1, 65536 / std::max<int64_t>(p.plane_size(), 1)), body);
}

// ---- Fast kernels (pool_fast.cpp)

// Forward max or average pooling over 2 or 3 dims (and adaptive pooling with
// regular windows, which is average pooling). `positions`, where given (2-D
// max pooling only), receives each max's position in its plane, as ATen's
// max_pool2d_with_indices.
template <Reduce R>
void run_pool_fast(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p,
                   int64_t* positions = nullptr);

// 2-D only.
bool is_2x2_stride_2(const Pooling& p);
void run_max_pool_2x2(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p);
void run_max_pool_2x2_backward(const KernelContext& context, const Tensor& input, const Tensor& grad, const Tensor& out,
                               const Pooling& p);
// Each plane's average, for any number of spatial dims.
void run_global_average(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p);

}  // namespace opgraph::kernels::pool
