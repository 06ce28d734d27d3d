// Resampling the spatial dims of (batch, channels, spatial...) tensors:
// upsample_nearest{1,2,3}d, upsample_linear1d, upsample_bilinear2d,
// upsample_trilinear3d and upsample_bicubic2d, each in its output_size form
// and its .vec form (output_size or scale_factors).
//
// Every mode is separable: along each axis an output index reads a few input
// indices ("taps") with weights. The taps are computed once per axis with
// ATen's formulas and in its precision (float for float32), so that nearest
// picks the same elements as PyTorch and the interpolating modes the same
// neighbours. 1-D and 2-D ops run as 3-D with leading axes of size 1.
#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/cubic.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

enum class Mode { Nearest, Linear, Cubic };

// Axes are (depth, height, width); a 2-D op has depth 1, a 1-D op height 1 too.
struct Resize {
  Mode mode = Mode::Nearest;
  bool align_corners = false;
  // upsample_nearest2d keeps ATen's nearest_idx shortcuts: an output as large
  // as its input copies it and one twice as large repeats each element, even
  // where a scale factor given would pick other elements. 1-D and 3-D do not.
  bool nearest_shortcuts = false;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1};
  std::array<std::optional<double>, 3> scales;
};

// What tells the ops apart: how many spatial dims, which interpolation, and
// whether it is the .vec overload.
struct Family {
  int dims;
  Mode mode;
  bool vec;
};

std::optional<double> optional_float(const AttrValue& value) {
  if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<double>(*integer);
  if (const auto* real = std::get_if<double>(&value)) return *real;
  return std::nullopt;
}

// One lambda serves the fourteen upsample schemas, which differ in which of
// these attributes they have, so they keep the raw kernel form: where each
// sits in a schema's Attrs is found when the op is defined (UpsamplePositions)
// and a call reads it there (UpsampleAttrs).
struct UpsamplePositions {
  std::optional<size_t> output_size, align_corners, scale_factors;
  std::array<std::optional<size_t>, 3> scales;  // the .vec-less overloads' scales_d/h/w, or scales
  UpsamplePositions(const Schema& schema, int dims)
      : output_size(attribute_index(schema, "output_size")),
        align_corners(attribute_index(schema, "align_corners")),
        scale_factors(attribute_index(schema, "scale_factors")) {
    static constexpr const char* kScaleNames[3][3] = {
        {"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
    for (int d = 0; d < dims; ++d) scales[d] = attribute_index(schema, kScaleNames[dims - 1][d]);
  }
};

struct UpsampleAttrs {
  const AttrValue* output_size = nullptr;
  bool align_corners = false;
  const AttrValue* scale_factors = nullptr;
  std::array<const AttrValue*, 3> scales{};
  UpsampleAttrs(const UpsamplePositions& at, const Attrs& attrs) {
    if (at.output_size) output_size = &attrs[*at.output_size];
    if (at.align_corners) align_corners = std::get<bool>(attrs[*at.align_corners]);
    if (at.scale_factors) scale_factors = &attrs[*at.scale_factors];
    for (size_t d = 0; d < 3; ++d) {
      if (at.scales[d]) scales[d] = &attrs[*at.scales[d]];
    }
  }
};

Resize resize_of(const TensorMeta& input, const UpsampleAttrs& attrs, const Family& f) {
  OPGRAPH_CHECK(input.dtype == DType::Float32 || input.dtype == DType::Float64,
                "input: expected float32 or float64, got ", input.str());
  OPGRAPH_CHECK(input.dim() == 2 + f.dims, "input: expected rank ", 2 + f.dims, " (batch, channels and ", f.dims,
                " spatial dims), got ", input.str());
  Resize r;
  r.mode = f.mode;
  r.nearest_shortcuts = f.mode == Mode::Nearest && f.dims == 2;
  if (f.mode != Mode::Nearest) r.align_corners = attrs.align_corners;
  const int first = 3 - f.dims;  // the first of the three axes this op uses
  for (int d = 0; d < f.dims; ++d) r.in[first + d] = input.shape[2 + d];

  const AttrValue& sizes = *attrs.output_size;
  const auto* size = std::get_if<std::vector<int64_t>>(&sizes);
  if (f.vec) {
    const AttrValue& scale_factors = *attrs.scale_factors;
    const auto* factors = std::get_if<std::vector<double>>(&scale_factors);
    OPGRAPH_CHECK((size != nullptr) != (factors != nullptr),
                  "expected exactly one of output_size and scale_factors, got output_size=", attr_str(sizes),
                  " and scale_factors=", attr_str(scale_factors));
    if (factors != nullptr) {
      OPGRAPH_CHECK(static_cast<int>(factors->size()) == f.dims, "scale_factors: expected ", f.dims, " values, got ",
                    attr_str(scale_factors));
      for (int d = 0; d < f.dims; ++d) {
        const double scale = (*factors)[d], extent = static_cast<double>(r.in[first + d]) * scale;
        OPGRAPH_CHECK(std::isfinite(scale) && scale > 0, "scale_factors: expected positive values, got ",
                      attr_str(scale_factors));
        OPGRAPH_CHECK(extent < 0x1p62, "scale_factors: ", attr_str(scale_factors),
                      " make an output too large for input ", input.str());
        r.scales[first + d] = scale;
        r.out[first + d] = static_cast<int64_t>(extent);  // truncated, as ATen
      }
    }
  } else {
    for (int d = 0; d < f.dims; ++d) r.scales[first + d] = optional_float(*attrs.scales[d]);
  }
  if (size != nullptr) {
    OPGRAPH_CHECK(static_cast<int>(size->size()) == f.dims, "output_size: expected ", f.dims, " sizes, got ",
                  shape_str(*size));
    for (int d = 0; d < f.dims; ++d) r.out[first + d] = (*size)[d];
  }
  for (int a = 0; a < 3; ++a) {
    OPGRAPH_CHECK(r.in[a] > 0 && r.out[a] > 0, "input and output sizes must be greater than 0, got input ", input.str(),
                  " and output sizes ", r.out[0], "x", r.out[1], "x", r.out[2]);
  }
  return r;
}

// One axis's taps: output index o reads input index[o * count + k] with
// weight[o * count + k], k < count.
template <typename T>
struct Taps {
  int64_t count = 1;
  std::vector<int64_t> index;
  std::vector<T> weight;
};

// ATen's compute_scales_value and area_pixel_compute_scale.
template <typename T>
T scale_of(const Resize& r, int axis) {
  const int64_t in = r.in[axis], out = r.out[axis];
  if (r.align_corners && r.mode != Mode::Nearest) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  const std::optional<double>& scale = r.scales[axis];
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : T(in) / T(out);
}

// ATen's area_pixel_compute_source_index: where output index o lies in the
// input; the linear modes clamp a negative position to 0.
template <typename T>
T source_position(const Resize& r, T scale, int64_t o) {
  if (r.align_corners) return scale * T(o);
  const T position = scale * (T(o) + T(0.5)) - T(0.5);
  return r.mode != Mode::Cubic && position < T(0) ? T(0) : position;
}

template <typename T>
Taps<T> axis_taps(const Resize& r, int axis) {
  const int64_t in = r.in[axis], out = r.out[axis];
  Taps<T> taps;
  taps.count = r.mode == Mode::Nearest ? 1 : r.mode == Mode::Linear ? 2 : 4;
  taps.index.resize(static_cast<size_t>(out * taps.count));
  taps.weight.resize(taps.index.size());
  for (int64_t o = 0; o < out; ++o) {
    int64_t* index = taps.index.data() + o * taps.count;
    T* weight = taps.weight.data() + o * taps.count;
    if (r.mode == Mode::Nearest) {
      weight[0] = T(1);
      if (r.nearest_shortcuts && (out == in || out == 2 * in)) {
        index[0] = out == in ? o : o / 2;
      } else {
        // nearest_neighbor_compute_source_index, in float whatever the dtype.
        index[0] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale_of<float>(r, axis))), in - 1);
      }
    } else if (r.mode == Mode::Linear) {
      if (out == in) {
        index[0] = index[1] = o;
        weight[0] = T(1), weight[1] = T(0);
        continue;
      }
      const T position = source_position(r, scale_of<T>(r, axis), o);
      index[0] = std::min(static_cast<int64_t>(std::floor(position)), in - 1);
      index[1] = index[0] + (index[0] < in - 1 ? 1 : 0);
      const T lambda = std::clamp(position - T(index[0]), T(0), T(1));
      weight[0] = T(1) - lambda, weight[1] = lambda;
    } else {
      const T position = source_position(r, scale_of<T>(r, axis), o);
      const auto start = static_cast<int64_t>(std::floor(position));
      const std::array<T, 4> w = cubic_weights(position - T(start));
      for (int k = 0; k < 4; ++k) {
        index[k] = std::clamp<int64_t>(start - 1 + k, 0, in - 1);  // the border repeats
        weight[k] = w[k];
      }
    }
  }
  return taps;
}

template <typename T>
std::array<Taps<T>, 3> all_taps(const Resize& r) {
  return {axis_taps<T>(r, 0), axis_taps<T>(r, 1), axis_taps<T>(r, 2)};
}

// Output rows (plane, od, oy) [first, last): the depth and height taps first
// combine whole input rows into `line` (nearest reads its row in place), then
// each output column combines its width taps from the line.
template <typename T>
void resample_rows(const T* in, T* out, const Resize& r, const std::array<Taps<T>, 3>& taps, T* line, int64_t first,
                   int64_t last) {
  const auto [di, hi, wi] = r.in;
  const auto [d_out, h_out, w_out] = r.out;
  const Taps<T>&depth = taps[0], &height = taps[1], &width = taps[2];
  for (int64_t row = first; row < last; ++row) {
    const int64_t plane = row / (d_out * h_out), od = row / h_out % d_out, oy = row % h_out;
    const T* src_plane = in + plane * di * hi * wi;
    const T* src = line;
    if (r.mode == Mode::Nearest) {
      src = src_plane + (depth.index[od] * hi + height.index[oy]) * wi;
    } else {
      std::fill(line, line + wi, T(0));
      for (int64_t td = 0; td < depth.count; ++td) {
        for (int64_t ty = 0; ty < height.count; ++ty) {
          const T w = depth.weight[od * depth.count + td] * height.weight[oy * height.count + ty];
          const T* input_row =
              src_plane + (depth.index[od * depth.count + td] * hi + height.index[oy * height.count + ty]) * wi;
          for (int64_t x = 0; x < wi; ++x) line[x] += w * input_row[x];
        }
      }
    }
    T* dst = out + row * w_out;
    const int64_t count = width.count;
    const int64_t* index = width.index.data();
    const T* weight = width.weight.data();
    for (int64_t ox = 0; ox < w_out; ++ox) {
      T sum = T(0);
      for (int64_t k = 0; k < count; ++k) sum += weight[ox * count + k] * src[index[ox * count + k]];
      dst[ox] = sum;
    }
  }
}

void resample_cpu(const KernelContext& context, const Tensor& input, const Tensor& output, const Resize& r) {
  if (output.numel() == 0) return;
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const std::array<Taps<T>, 3> taps = all_taps<T>(r);
    const int64_t rows = output.numel() / r.out[2];
    const int64_t grain = std::max<int64_t>(1, kParallelElements / (r.in[2] + r.out[2]));
    context.pool->parallel_for(0, rows, grain, [&](int64_t first, int64_t last) {
      std::vector<T> line(static_cast<size_t>(r.in[2]));
      dispatch_cpu(
          [&] { resample_rows<T>(input.data_ptr<T>(), output.data_ptr<T>(), r, taps, line.data(), first, last); });
    });
  });
}

// Every output element as the weighted sum over all its taps, in double.
void resample_reference(const Tensor& input, const Tensor& output, const Resize& r) {
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const std::array<Taps<T>, 3> t = all_taps<T>(r);
    const int64_t in_plane = r.in[0] * r.in[1] * r.in[2], out_plane = r.out[0] * r.out[1] * r.out[2];
    const int64_t planes = output.numel() / out_plane;
    const T* in = input.data_ptr<T>();
    T* out = output.data_ptr<T>();
    for (int64_t plane = 0; plane < planes; ++plane) {
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t od = o / (r.out[1] * r.out[2]), oy = o / r.out[2] % r.out[1], ox = o % r.out[2];
        double sum = 0;
        for (int64_t a = 0; a < t[0].count; ++a) {
          for (int64_t b = 0; b < t[1].count; ++b) {
            for (int64_t c = 0; c < t[2].count; ++c) {
              const int64_t z = t[0].index[od * t[0].count + a], y = t[1].index[oy * t[1].count + b],
                            x = t[2].index[ox * t[2].count + c];
              const double w = double(t[0].weight[od * t[0].count + a]) * double(t[1].weight[oy * t[1].count + b]) *
                               double(t[2].weight[ox * t[2].count + c]);
              sum += w * double(in[plane * in_plane + (z * r.in[1] + y) * r.in[2] + x]);
            }
          }
        }
        out[plane * out_plane + o] = static_cast<T>(sum);
      }
    }
  });
}

void define_upsample(BuiltinOps& builtins, const char* schema, Family f,
                     std::source_location where = std::source_location::current()) {
  const UpsamplePositions at(Schema::parse(schema), f.dims);
  auto shape = [f, at](std::span<const TensorMeta* const> in, const Attrs& attrs) -> std::vector<TensorMeta> {
    const Resize r = resize_of(*in[0], UpsampleAttrs(at, attrs), f);
    Shape out = in[0]->shape;
    for (int d = 0; d < f.dims; ++d) out[2 + d] = r.out[3 - f.dims + d];
    return {{in[0]->dtype, out}};
  };
  auto cpu = [f, at](const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                     const Attrs& attrs) {
    resample_cpu(context, in[0], out[0], resize_of(in[0].meta(), UpsampleAttrs(at, attrs), f));
  };
  auto reference = [f, at](const KernelContext&, std::span<const Tensor> in, std::span<const Tensor> out,
                           const Attrs& attrs) {
    resample_reference(in[0], out[0], resize_of(in[0].meta(), UpsampleAttrs(at, attrs), f));
  };
  define(builtins, {.schema = schema, .shape = shape, .cpu = cpu, .reference = reference}, where);
}

}  // namespace

void register_upsample_ops(BuiltinOps& builtins) {
  const Mode nearest = Mode::Nearest, linear = Mode::Linear, cubic = Mode::Cubic;
  define_upsample(builtins,
                  "aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, "
                  "float[]? scale_factors) -> Tensor",
                  {2, nearest, true});
  define_upsample(builtins,
                  "aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
                  "float[]? scale_factors) -> Tensor",
                  {2, linear, true});
  define_upsample(builtins,
                  "aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
                  "float? scales_w=None) -> Tensor",
                  {2, nearest, false});
  define_upsample(builtins,
                  "aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
                  "float? scales_h=None, float? scales_w=None) -> Tensor",
                  {2, linear, false});
  define_upsample(builtins,
                  "aten::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor",
                  {1, nearest, false});
  define_upsample(builtins,
                  "aten::upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, "
                  "float[]? scale_factors) -> Tensor",
                  {1, nearest, true});
  define_upsample(builtins,
                  "aten::upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, "
                  "float? scales=None) -> Tensor",
                  {1, linear, false});
  define_upsample(builtins,
                  "aten::upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
                  "float[]? scale_factors) -> Tensor",
                  {1, linear, true});
  define_upsample(builtins,
                  "aten::upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
                  "float? scales_h=None, float? scales_w=None) -> Tensor",
                  {3, nearest, false});
  define_upsample(builtins,
                  "aten::upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, "
                  "float[]? scale_factors) -> Tensor",
                  {3, nearest, true});
  define_upsample(builtins,
                  "aten::upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, "
                  "float? scales_d=None, float? scales_h=None, float? scales_w=None) -> Tensor",
                  {3, linear, false});
  define_upsample(builtins,
                  "aten::upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
                  "float[]? scale_factors) -> Tensor",
                  {3, linear, true});
  define_upsample(builtins,
                  "aten::upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, "
                  "float? scales_h=None, float? scales_w=None) -> Tensor",
                  {2, cubic, false});
  define_upsample(builtins,
                  "aten::upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
                  "float[]? scale_factors) -> Tensor",
                  {2, cubic, true});
}

}  // namespace opgraph::kernels
