// The fast pooling kernels (declared in engines/pool_fast.h): max and
// average pooling forward over 2 or 3 dims, 2x2 max pooling and its
// gradient, and global averages.
#include "kernels/cpu/engines/pool_fast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/define.h"
#include "kernels/shape/pool.h"

namespace opgraph::kernels::pool {

// ---- Fast forward kernels for max_pool2d and avg_pool2d ---------------------
//
// A window's max (or sum) is the max across its columns of the max down its
// rows. So each output row takes two passes that vectorize: down the window's
// rows into a line as wide as the input, then across the line, window by
// window. The line carries the left and right padding as elements that change
// nothing (-inf for max, 0 for sums): every output column then reads its whole
// window, with no clipping in the loop.
//
// On (1, 64, 112, 112) with kernel 3, stride 2 and padding 1 (ResNet's first
// pooling), this is faster for max and for average than oneDNN's pooling
// primitive on the same NCHW data (it reorders to a blocked layout and back).
// oneDNN also has neither divisor_override nor PyTorch's divisor for
// ceil_mode windows that reach past the padding.

// NaN wins a max, as in PyTorch. (`|`, not `||`: a branch on each element
// keeps GCC from vectorizing the loop.)
template <Reduce R, typename T>
T combine(T acc, T value) {
  if constexpr (R == Reduce::Max) {
    return (value > acc) | (value != value) ? value : acc;
  } else {
    return acc + value;
  }
}

template <Reduce R, typename T>
constexpr T neutral() {
  return R == Reduce::Max ? -std::numeric_limits<T>::infinity() : T(0);
}

// Average pooling's divisor for each output element; every plane shares them.
template <typename T>
std::vector<T> divisors(const Pooling& p) {
  std::vector<T> divisor(static_cast<size_t>(p.pooled_size()));
  for (int64_t oz = 0, o = 0; oz < p.d.out; ++oz) {
    for (int64_t oy = 0; oy < p.h.out; ++oy) {
      for (int64_t ox = 0; ox < p.w.out; ++ox) divisor[o++] = T(window(p, oz, oy, ox).divisor);
    }
  }
  return divisor;
}

// dst[i] = src[i] for the first of the sources reduced into dst, else the
// reduction of dst[i] and src[i].
template <Reduce R, typename T>
void accumulate(T* dst, const T* src, int64_t count, bool first) {
  if (first) {
    std::copy(src, src + count, dst);
  } else {
    for (int64_t i = 0; i < count; ++i) dst[i] = combine<R>(dst[i], src[i]);
  }
}

// The pass across a padded line: dst[ox] reduces padded[ox * stride +
// kx * dilation] over kx. kStride is the stride when it is 1 or 2, as in
// nearly every network, else 0: a constant stride lets GCC load whole vectors
// and shuffle them, where a run-time one loads element by element (which
// made the whole kernel much slower).
template <Reduce R, int64_t kStride, typename T>
void across(const T* padded, T* dst, const Axis& w) {
  const int64_t stride = kStride != 0 ? kStride : w.stride;
  for (int64_t ox = 0; ox < w.out; ++ox) dst[ox] = padded[ox * stride];
  for (int64_t kx = 1; kx < w.kernel; ++kx) {
    const T* tap = padded + kx * w.dilation;
    for (int64_t ox = 0; ox < w.out; ++ox) dst[ox] = combine<R>(dst[ox], tap[ox * stride]);
  }
}

// Max pooling that also gives each max's position in its plane (ATen's
// max_pool2d_with_indices) runs the same passes on (value, position) pairs.
// Which pair wins does not depend on the order the pairs meet in: a NaN beats
// a number and a later NaN an earlier one; a larger number beats a smaller
// one and, of equal numbers, the earlier position wins. That is the element
// ATen's scan in row-major order keeps.
template <typename T>
bool beats(T v, int64_t i, T a, int64_t j) {
  const bool v_nan = v != v, a_nan = a != a;
  return v_nan ? (!a_nan || i > j) : (!a_nan && (v > a || (v == a && i < j)));
}

// The position of the padding around a line of pairs (whose value is -inf):
// after every other, so that padding never wins.
constexpr int64_t kNowhere = std::numeric_limits<int64_t>::max();

// accumulate for pairs; the source elements sit at positions src_at, src_at + 1, ...
template <typename T>
void accumulate_pairs(T* dst, int64_t* dst_at, const T* src, int64_t src_at, int64_t count, bool first) {
  for (int64_t i = 0; i < count; ++i) {
    if (first || beats(src[i], src_at + i, dst[i], dst_at[i])) dst[i] = src[i], dst_at[i] = src_at + i;
  }
}

// across for pairs.
template <typename T>
void across_pairs(const T* padded, const int64_t* padded_at, T* dst, int64_t* dst_at, const Axis& w) {
  for (int64_t ox = 0; ox < w.out; ++ox) {
    int64_t best = ox * w.stride;
    for (int64_t kx = 1; kx < w.kernel; ++kx) {
      const int64_t at = ox * w.stride + kx * w.dilation;
      if (beats(padded[at], padded_at[at], padded[best], padded_at[best])) best = at;
    }
    dst[ox] = padded[best];
    dst_at[ox] = padded_at[best];
  }
}

// `divisor` is null for max; `positions`, where given (max only), receives
// each max's position in its plane.
template <typename T, Reduce R>
void pool_planes_fast(const T* in, T* out, const Pooling& p, const T* divisor, int64_t first, int64_t last,
                      int64_t* positions = nullptr) {
  const Axis &h = p.h, &w = p.w;
  // Columns -w.padding ... reach - w.padding - 1: every column a window reads.
  const int64_t reach = (w.out - 1) * w.stride + (w.kernel - 1) * w.dilation + 1;
  const auto size = static_cast<size_t>(std::max(reach, w.padding + w.in));
  std::vector<T> padded(size, neutral<R, T>());
  std::vector<int64_t> padded_at(positions != nullptr ? size : 0, kNowhere);
  T* line = padded.data() + w.padding;
  int64_t* line_at = positions != nullptr ? padded_at.data() + w.padding : nullptr;
  for (int64_t plane = first; plane < last; ++plane) {
    const T* src = in + plane * h.in * w.in;
    for (int64_t oy = 0; oy < h.out; ++oy) {
      bool any_row = false;
      for (int64_t ky = 0; ky < h.kernel; ++ky) {
        const int64_t y = oy * h.stride - h.padding + ky * h.dilation;
        if (y < 0 || y >= h.in) continue;
        if (positions != nullptr) {
          accumulate_pairs(line, line_at, src + y * w.in, y * w.in, w.in, !any_row);
        } else {
          accumulate<R>(line, src + y * w.in, w.in, !any_row);
        }
        any_row = true;
      }
      if (!any_row) std::fill(line, line + w.in, neutral<R, T>());
      T* dst = out + (plane * h.out + oy) * w.out;
      if (positions != nullptr) {
        across_pairs(padded.data(), padded_at.data(), dst, positions + (plane * h.out + oy) * w.out, w);
        continue;
      }
      switch (w.stride) {
        case 1: across<R, 1>(padded.data(), dst, w); break;
        case 2: across<R, 2>(padded.data(), dst, w); break;
        default: across<R, 0>(padded.data(), dst, w); break;
      }
      if (divisor != nullptr) {
        const T* row_divisor = divisor + oy * w.out;
        for (int64_t ox = 0; ox < w.out; ++ox) dst[ox] /= row_divisor[ox];
      }
    }
  }
}

// 3-D windows reduce in two steps: the input slices that an output slice's
// windows span combine into one slab, as rows combine into a line above, and
// the 2-D kernel pools the slab; averages then divide by the 3-D divisors.
template <typename T, Reduce R>
void pool_volumes_fast(const T* in, T* out, const Pooling& p, const T* divisor, int64_t first, int64_t last) {
  Pooling flat = p;
  flat.d = Axis{1, 1};
  const int64_t slice = p.h.in * p.w.in, out_slice = p.h.out * p.w.out;
  std::vector<T> slab(static_cast<size_t>(slice));
  for (int64_t plane = first; plane < last; ++plane) {
    for (int64_t oz = 0; oz < p.d.out; ++oz) {
      bool any_slice = false;
      for (int64_t kz = 0; kz < p.d.kernel; ++kz) {
        const int64_t z = oz * p.d.stride - p.d.padding + kz * p.d.dilation;
        if (z < 0 || z >= p.d.in) continue;
        accumulate<R>(slab.data(), in + (plane * p.d.in + z) * slice, slice, !any_slice);
        any_slice = true;
      }
      if (!any_slice) std::fill(slab.begin(), slab.end(), neutral<R, T>());
      pool_planes_fast<T, R>(slab.data(), out + (plane * p.d.out + oz) * out_slice, flat,
                             divisor == nullptr ? nullptr : divisor + oz * out_slice, 0, 1);
    }
  }
}

template <Reduce R>
void run_pool_fast(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p,
                   int64_t* positions) {
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const std::vector<T> divisors_of_all = R == Reduce::Average ? divisors<T>(p) : std::vector<T>();
    const T* divisor = divisors_of_all.empty() ? nullptr : divisors_of_all.data();
    parallel_planes(context, plane_count(input, p), p, [&](int64_t first, int64_t last) {
      dispatch_cpu([&] {
        if (p.dims == 3) {
          pool_volumes_fast<T, R>(input.data_ptr<T>(), out.data_ptr<T>(), p, divisor, first, last);
        } else {
          pool_planes_fast<T, R>(input.data_ptr<T>(), out.data_ptr<T>(), p, divisor, first, last, positions);
        }
      });
    });
  });
}

// 2x2 windows at stride 2 without padding, most networks' max pooling. Two
// passes that vectorize: the max of each pair of input rows, for a batch of
// output rows, then the max of neighbours across the whole batch as one flat
// loop, where a loop per output row would run mostly in its scalar remainder
// on short rows (14 outputs on a 28-pixel MNIST plane). Faster than the
// general kernel there.
bool is_2x2_stride_2(const Pooling& p) {
  for (const Axis* a : {&p.h, &p.w}) {
    if (a->kernel != 2 || a->stride != 2 || a->padding != 0 || a->dilation != 1 || a->out * 2 > a->in) return false;
  }
  return true;
}

template <typename T>
void max_pool_2x2_planes(const T* in, T* out, const Pooling& p, int64_t first, int64_t last) {
  constexpr Reduce kMax = Reduce::Max;
  const int64_t width = 2 * p.w.out;  // the input columns the windows read
  // Output rows per batch: their row pairs' maxima fill about 4096 elements, in L1.
  const int64_t batch = std::clamp<int64_t>(4096 / std::max<int64_t>(width, 1), 1, p.h.out);
  std::vector<T> pairs(static_cast<size_t>(batch * width));
  for (int64_t plane = first; plane < last; ++plane) {
    for (int64_t oy0 = 0; oy0 < p.h.out; oy0 += batch) {
      const int64_t rows = std::min(batch, p.h.out - oy0);
      for (int64_t r = 0; r < rows; ++r) {
        const T* top = in + (plane * p.h.in + 2 * (oy0 + r)) * p.w.in;
        const T* bottom = top + p.w.in;
        T* pair = pairs.data() + r * width;
        for (int64_t x = 0; x < width; ++x) pair[x] = combine<kMax>(top[x], bottom[x]);
      }
      T* dst = out + (plane * p.h.out + oy0) * p.w.out;
      for (int64_t o = 0; o < rows * p.w.out; ++o) dst[o] = combine<kMax>(pairs[2 * o], pairs[2 * o + 1]);
    }
  }
}

void run_max_pool_2x2(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p) {
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    parallel_planes(context, plane_count(input, p), p, [&](int64_t first, int64_t last) {
      dispatch_cpu([&] { max_pool_2x2_planes<T>(input.data_ptr<T>(), out.data_ptr<T>(), p, first, last); });
    });
  });
}

// The gradient of 2x2 max pooling: each output's gradient goes to its
// window's first maximum (or last NaN, as in argmax), the rest of the input
// plane stays 0. Without the general kernel's per-window geometry this is
// faster on the small planes of a training step.
template <typename T>
void max_pool_2x2_backward_planes(const T* in, const T* grad, T* out, const Pooling& p, int64_t first, int64_t last) {
  const int64_t in_size = p.h.in * p.w.in, out_size = p.h.out * p.w.out;
  for (int64_t plane = first; plane < last; ++plane) {
    const T* src = in + plane * in_size;
    const T* g = grad + plane * out_size;
    T* dst = out + plane * in_size;
    std::fill(dst, dst + in_size, T(0));
    for (int64_t oy = 0; oy < p.h.out; ++oy) {
      const int64_t top = 2 * oy * p.w.in;
      for (int64_t ox = 0; ox < p.w.out; ++ox) {
        const int64_t taps[4] = {top + 2 * ox, top + 2 * ox + 1, top + p.w.in + 2 * ox, top + p.w.in + 2 * ox + 1};
        int64_t best = taps[0];
        for (int i = 1; i < 4; ++i) {
          const T value = src[taps[i]];
          if (value > src[best] || value != value) best = taps[i];
        }
        dst[best] += g[oy * p.w.out + ox];
      }
    }
  }
}

void run_max_pool_2x2_backward(const KernelContext& context, const Tensor& input, const Tensor& grad, const Tensor& out,
                               const Pooling& p) {
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    parallel_planes(context, plane_count(input, p), p, [&](int64_t first, int64_t last) {
      max_pool_2x2_backward_planes<T>(input.data_ptr<T>(), grad.data_ptr<T>(), out.data_ptr<T>(), p, first, last);
    });
  });
}

// A global average (a 1x1 output, as before a classifier) sums each plane as
// one contiguous run, in lane-wise partial sums (reduce_lanes).
template <typename T>
void global_average_planes(const T* in, T* out, int64_t plane_size, int64_t first, int64_t last) {
  for (int64_t plane = first; plane < last; ++plane) {
    const T* src = in + plane * plane_size;
    const T sum = reduce_lanes(plane_size, T(0), [src](int64_t i) { return src[i]; }, [](T a, T b) { return a + b; });
    out[plane] = sum / static_cast<T>(plane_size);
  }
}

void run_global_average(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p) {
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    parallel_planes(context, plane_count(input, p), p, [&](int64_t first, int64_t last) {
      const int64_t plane_size = p.plane_size();
      dispatch_cpu([&] { global_average_planes<T>(input.data_ptr<T>(), out.data_ptr<T>(), plane_size, first, last); });
    });
  });
}

template void run_pool_fast<Reduce::Max>(const KernelContext&, const Tensor&, const Tensor&, const Pooling&, int64_t*);
template void run_pool_fast<Reduce::Average>(const KernelContext&, const Tensor&, const Tensor&, const Pooling&,
                                             int64_t*);

}  // namespace opgraph::kernels::pool
