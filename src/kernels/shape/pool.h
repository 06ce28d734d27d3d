// Pooling geometry, which every device's pooling kernels share (the CPU's
// ops/pool.cpp and engines/pool_fast.cpp, the CUDA pool.cu): the axes of an
// op, read and checked from its attributes, and the window of each output
// element.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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

// A float input of rank dims + 1 or dims + 2 ((batch,) channels, spatial...).
void check_pooled_input(const TensorMeta& input, int dims);

// A per-axis argument: one value for every axis, or one for each of `dims`.
std::vector<int64_t> per_axis(std::span<const int64_t> values, const char* name, int dims,
                              std::vector<int64_t> fallback);

// The window arguments of max_pool{1,2,3}d and their gradients, as their
// schemas have them.
struct MaxPoolArgs {
  std::span<const int64_t> kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

// avg_pool{1,2,3}d's (avg_pool1d has no divisor_override).
struct AvgPoolArgs {
  std::span<const int64_t> kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;
  std::optional<int64_t> divisor_override;
};

// The geometry those arguments give on `input`, checked: what the shape
// functions size outputs with, and what the CPU and CUDA kernels walk.
Pooling max_pooling(const TensorMeta& input, const MaxPoolArgs& args, int dims);
Pooling average_pooling(const TensorMeta& input, const AvgPoolArgs& args, int dims);

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

}  // namespace opgraph::kernels::pool
