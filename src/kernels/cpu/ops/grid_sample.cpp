// grid_sampler_2d: samples (N, C, H, W) input at the (x, y) positions of an
// (N, Ho, Wo, 2) grid in [-1, 1], giving (N, C, Ho, Wo); bilinear (0),
// nearest (1) or bicubic (2) interpolation, with zeros (0), border (1) or
// reflection (2) padding.
//
// A grid point's geometry is the same for every channel: its taps (the input
// elements it reads and their weights) are worked out once, with ATen's
// formulas and in the input's precision, then applied to every channel plane.
// The reference works them out again for each output element and sums in
// double.
#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/cpu/util/cubic.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

enum class Interpolation : int64_t { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding : int64_t { Zeros = 0, Border = 1, Reflection = 2 };

struct Sampling {
  Interpolation interpolation;
  Padding padding;
  bool align_corners;
  int64_t n, c, h, w, h_out, w_out;
};

Sampling sampling_of(const TensorMeta& input, const TensorMeta& grid, int64_t interpolation, int64_t padding,
                     bool align_corners) {
  OPGRAPH_CHECK(input.dtype == DType::Float32 || input.dtype == DType::Float64,
                "input: expected float32 or float64, got ", input.str());
  OPGRAPH_CHECK(grid.dtype == input.dtype, "grid: expected the input's dtype ", dtype_name(input.dtype), ", got ",
                grid.str());
  OPGRAPH_CHECK(input.dim() == 4, "input: expected rank 4 (batch, channels, height, width), got ", input.str());
  OPGRAPH_CHECK(grid.dim() == 4 && grid.shape[0] == input.shape[0] && grid.shape[3] == 2, "grid: expected (",
                input.shape[0], ", height, width, 2) for input ", input.str(), ", got ", grid.str());
  OPGRAPH_CHECK(input.shape[2] > 0 && input.shape[3] > 0, "input: expected a non-empty plane, got ", input.str());
  OPGRAPH_CHECK(interpolation >= 0 && interpolation <= 2,
                "interpolation_mode: expected 0 (bilinear), 1 (nearest) or 2 (bicubic), got ", interpolation);
  OPGRAPH_CHECK(padding >= 0 && padding <= 2, "padding_mode: expected 0 (zeros), 1 (border) or 2 (reflection), got ",
                padding);
  return {static_cast<Interpolation>(interpolation),
          static_cast<Padding>(padding),
          align_corners,
          input.shape[0],
          input.shape[1],
          input.shape[2],
          input.shape[3],
          grid.shape[1],
          grid.shape[2]};
}

// [-1, 1] -> input coordinates: the corner pixels' centres (align_corners)
// or their outer edges.
template <typename T>
T unnormalize(T coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * T(size - 1) : ((coord + 1) * T(size) - 1) / 2;
}

// Reflects coord off twice_low / 2 and twice_high / 2 until it lies between
// them, in the arithmetic of ATen's vector kernel (on which a far
// coordinate's rounding depends): the distance from the low bound modulo the
// period, folded back past the high bound.
template <typename T>
T reflect(T coord, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return T(0);
  const T low = T(twice_low) / 2, period = T(twice_high - twice_low);
  const T distance = std::fabs(coord - low);
  const T extra = distance - std::trunc(distance / period) * period;
  return std::min(extra, period - extra) + low;
}

// Border and reflection padding bring coord inside [0, size - 1]; a NaN
// becomes 0, as under ATen's vector max.
template <typename T>
T pad_coordinate(T coord, int64_t size, const Sampling& s) {
  if (s.padding == Padding::Zeros) return coord;
  if (s.padding == Padding::Reflection) {
    coord = s.align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
  }
  return std::min(T(size - 1), coord > T(0) ? coord : T(0));
}

// Up to 16 input elements of one plane (offsets y * w + x) and their weights.
// Elements outside the plane read as zero: they add only `outside`, their
// weights times 0, which is NaN where a weight is (a NaN grid coordinate
// gives NaN, as in ATen).
template <typename T>
struct Taps {
  int count = 0;
  std::array<int64_t, 16> offset;
  std::array<T, 16> weight;
  T outside = T(0);

  // x and y hold whole numbers; compared in T, a NaN or far coordinate is
  // outside without a cast to an integer that cannot hold it.
  void add(const Sampling& s, T x, T y, T w) {
    if (!(x >= 0 && x < T(s.w) && y >= 0 && y < T(s.h))) {
      outside += w * T(0);
      return;
    }
    offset[count] = static_cast<int64_t>(y) * s.w + static_cast<int64_t>(x);
    weight[count++] = w;
  }
};

template <typename T>
Taps<T> taps_at(const Sampling& s, T gx, T gy) {
  Taps<T> taps;
  if (s.interpolation == Interpolation::Bicubic) {
    // The 4x4 neighbourhood around the unpadded position; padding applies to each tap.
    const T x = unnormalize(gx, s.w, s.align_corners), y = unnormalize(gy, s.h, s.align_corners);
    const T x0 = std::floor(x), y0 = std::floor(y);
    const std::array<T, 4> wx = cubic_weights(x - x0), wy = cubic_weights(y - y0);
    for (int j = 0; j < 4; ++j) {
      const T ty = std::trunc(pad_coordinate(y0 - 1 + T(j), s.h, s));
      for (int i = 0; i < 4; ++i) taps.add(s, std::trunc(pad_coordinate(x0 - 1 + T(i), s.w, s)), ty, wx[i] * wy[j]);
    }
    return taps;
  }
  const T x = pad_coordinate(unnormalize(gx, s.w, s.align_corners), s.w, s);
  const T y = pad_coordinate(unnormalize(gy, s.h, s.align_corners), s.h, s);
  if (s.interpolation == Interpolation::Nearest) {
    // nearbyint: halves round to even, as ATen.
    taps.add(s, std::nearbyint(x), std::nearbyint(y), T(1));
    return taps;
  }
  const T x0 = std::floor(x), y0 = std::floor(y);
  const T east = x - x0, south = y - y0, west = 1 - east, north = 1 - south;
  taps.add(s, x0, y0, west * north);
  taps.add(s, x0 + 1, y0, east * north);
  taps.add(s, x0, y0 + 1, west * south);
  taps.add(s, x0 + 1, y0 + 1, east * south);
  return taps;
}

// Grid rows (n, oy) [first, last), every channel at once.
template <typename T>
void sample_rows(const T* input, const T* grid, T* out, const Sampling& s, int64_t first, int64_t last) {
  const int64_t plane = s.h * s.w, out_plane = s.h_out * s.w_out;
  for (int64_t row = first; row < last; ++row) {
    const int64_t n = row / s.h_out, oy = row % s.h_out;
    const T* src = input + n * s.c * plane;
    T* dst = out + n * s.c * out_plane + oy * s.w_out;
    for (int64_t ox = 0; ox < s.w_out; ++ox) {
      const T* g = grid + (row * s.w_out + ox) * 2;
      const Taps<T> taps = taps_at(s, g[0], g[1]);
      for (int64_t c = 0; c < s.c; ++c) {
        const T* channel = src + c * plane;
        T sum = taps.outside;
        for (int k = 0; k < taps.count; ++k) sum += taps.weight[k] * channel[taps.offset[k]];
        dst[c * out_plane + ox] = sum;
      }
    }
  }
}

TensorMeta grid_sample_shape(const TensorMeta& input, const TensorMeta& grid, int64_t interpolation_mode,
                             int64_t padding_mode, bool align_corners) {
  const Sampling s = sampling_of(input, grid, interpolation_mode, padding_mode, align_corners);
  return {input.dtype, {s.n, s.c, s.h_out, s.w_out}};
}

void grid_sample_cpu(const KernelContext& context, const Tensor& input, const Tensor& grid, int64_t interpolation_mode,
                     int64_t padding_mode, bool align_corners, const Tensor& out) {
  const Sampling s = sampling_of(input.meta(), grid.meta(), interpolation_mode, padding_mode, align_corners);
  if (out.numel() == 0) return;
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const int64_t grain = std::max<int64_t>(1, kParallelElements / (s.w_out * std::max<int64_t>(s.c, 1) * 4));
    context.pool->parallel_for(0, s.n * s.h_out, grain, [&](int64_t first, int64_t last) {
      sample_rows<T>(input.data_ptr<T>(), grid.data_ptr<T>(), out.data_ptr<T>(), s, first, last);
    });
  });
}

void grid_sample_reference(const KernelContext&, const Tensor& input_tensor, const Tensor& grid_tensor,
                           int64_t interpolation_mode, int64_t padding_mode, bool align_corners, const Tensor& out) {
  const Sampling s =
      sampling_of(input_tensor.meta(), grid_tensor.meta(), interpolation_mode, padding_mode, align_corners);
  dispatch_floating(input_tensor.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* input = input_tensor.data_ptr<T>();
    const T* grid = grid_tensor.data_ptr<T>();
    T* result = out.data_ptr<T>();
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t c = 0; c < s.c; ++c) {
        const T* plane = input + (n * s.c + c) * s.h * s.w;
        for (int64_t oy = 0; oy < s.h_out; ++oy) {
          for (int64_t ox = 0; ox < s.w_out; ++ox) {
            const T* g = grid + ((n * s.h_out + oy) * s.w_out + ox) * 2;
            const Taps<T> taps = taps_at(s, g[0], g[1]);
            double sum = taps.outside;
            for (int k = 0; k < taps.count; ++k) sum += double(taps.weight[k]) * double(plane[taps.offset[k]]);
            result[((n * s.c + c) * s.h_out + oy) * s.w_out + ox] = static_cast<T>(sum);
          }
        }
      }
    }
  });
}

}  // namespace

void register_grid_sample_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "aten::grid_sampler_2d(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                    "bool align_corners) -> Tensor",
          .shape = grid_sample_shape,
          .cpu = grid_sample_cpu,
          .reference = grid_sample_reference});
  // grid_sampler picks grid_sampler_2d or _3d by the input's rank; only 2-D is here.
  define(builtins, {.schema = "aten::grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
                              "bool align_corners) -> Tensor",
                    .shape = grid_sample_shape,
                    .cpu = grid_sample_cpu,
                    .reference = grid_sample_reference});
}

}  // namespace opgraph::kernels
