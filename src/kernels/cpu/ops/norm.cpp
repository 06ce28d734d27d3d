// Normalizations: layer_norm and rms_norm over trailing dims, layer_norm's
// gradient, group_norm
// (and instance_norm, a group per channel) and its gradient, and batch_norm
// with running statistics (inference) or the batch's own (training).
//
// Statistics are sums in double; the normalization itself runs in the
// input's type, as a per-row or per-channel affine map x * a + c.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <source_location>
#include <span>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/output_mask.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"
#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

// The norm ops share their functions over schemas that differ in which of
// these attributes they have and where (layer_norm and native_layer_norm,
// the four batch_norm forms, a gradient's shape checks through its forward
// op's), so they keep the raw kernel form: where each attribute sits in a
// schema's Attrs is found once, when the op is defined (NormPositions), and a
// call reads it there (NormAttrs).
enum class Field : size_t {
  normalized_shape,
  eps,
  output_mask,
  N,
  C,
  HxW,
  group,
  num_groups,
  training,
  momentum,
  use_input_stats,
  kCount
};

constexpr const char* kFieldNames[] = {
    "normalized_shape", "eps",      "output_mask",    "N", "C", "HxW", "group", "num_groups",
    "training",         "momentum", "use_input_stats"};
static_assert(std::size(kFieldNames) == static_cast<size_t>(Field::kCount));

struct NormPositions {
  std::array<std::optional<size_t>, static_cast<size_t>(Field::kCount)> at;
  explicit NormPositions(const Schema& schema) {
    for (size_t f = 0; f < at.size(); ++f) at[f] = attribute_index(schema, kFieldNames[f]);
  }
};

class NormAttrs {
 public:
  NormAttrs(const NormPositions& positions, const Attrs& attrs) : positions_(positions), attrs_(attrs) {}
  // The attribute's value; the op's schema has it.
  const AttrValue& value(Field field) const { return attrs_[*positions_.at[static_cast<size_t>(field)]]; }
  template <typename T>
  const T& read(Field field) const {
    return std::get<T>(value(field));
  }

 private:
  const NormPositions& positions_;
  const Attrs& attrs_;
};

using NormShape = std::vector<TensorMeta> (*)(std::span<const TensorMeta* const>, const NormAttrs&);
using NormKernel = void (*)(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>, const NormAttrs&);

struct NormSpec {
  const char* schema;
  NormShape shape;
  NormKernel cpu;
  NormKernel reference;
};

void define_norm(BuiltinOps& builtins, NormSpec spec, std::source_location where = std::source_location::current()) {
  auto at = std::make_shared<const NormPositions>(Schema::parse(spec.schema));
  auto kernel = [at](NormKernel fn) -> KernelFn {
    return [fn, at](const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) { fn(context, inputs, outputs, NormAttrs(*at, attrs)); };
  };
  define(builtins,
         {.schema = spec.schema,
          .shape = [shape = spec.shape, at](std::span<const TensorMeta* const> inputs,
                                            const Attrs& attrs) { return shape(inputs, NormAttrs(*at, attrs)); },
          .cpu = kernel(spec.cpu),
          .reference = kernel(spec.reference)},
         where);
}

// An optional per-feature tensor (weight, bias, running stats): absent, or
// `shape` in the input's dtype.
void check_optional(const TensorMeta* meta, const char* argument, const Shape& shape, const TensorMeta& input) {
  if (meta == nullptr) return;
  const TensorMeta expected{input.dtype, shape};
  OPGRAPH_CHECK(*meta == expected, argument, ": expected ", expected.str(), " to match input ", input.str(), ", got ",
                meta->str());
}

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<const T>() : nullptr;
}

// `t`'s data, or `n` copies of `absent` in `scratch` when t is undefined (an
// absent weight or bias): loops that multiply by it or add it then have no
// branch to keep them from vectorizing.
template <typename T>
const T* data_or(const Tensor& t, T absent, int64_t n, std::vector<T>& scratch) {
  if (t.defined()) return t.data_ptr<const T>();
  scratch.assign(static_cast<size_t>(n), absent);
  return scratch.data();
}

template <typename T>
const T* data_or_ones(const Tensor& t, int64_t n, std::vector<T>& scratch) {
  return data_or(t, T(1), n, scratch);
}

template <typename T>
void store(std::span<const double> values, const Tensor& out) {
  T* to = out.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) to[i] = static_cast<T>(values[i]);
}

// Sum of map(0) ... map(n - 1): in T's lanes over chunks of kChunk, the
// chunks' sums added in double. Each lane of a chunk sums 16 float values at
// most, so the total keeps close to a sum in double, at one vector add per
// element where double lanes take a conversion and two.
template <typename T, typename Map>
double chunked_sum(int64_t n, Map&& map) {
  constexpr int64_t kChunk = 512;
  double total = 0;
  for (int64_t c = 0; c < n; c += kChunk) {
    total += reduce_lanes(
        std::min(kChunk, n - c), T(0), [&](int64_t i) { return map(c + i); }, [](T a, T b) { return a + b; });
  }
  return total;
}

// Mean and (biased) variance of x[0..n). Two passes over x keep the variance
// accurate when the mean is large.
template <typename T>
std::pair<T, double> row_moments(const T* x, int64_t n) {
  const T mean = static_cast<T>(chunked_sum<T>(n, [=](int64_t i) { return x[i]; }) / static_cast<double>(n));
  const double var =
      chunked_sum<T>(n, [=](int64_t i) { return (x[i] - mean) * (x[i] - mean); }) / static_cast<double>(n);
  return {mean, var};
}

// ---- layer_norm -------------------------------------------------------------

// The first normalized dim of a floating `input` whose trailing dims the
// normalized_shape attribute must be.
int64_t normalized_axis(const TensorMeta& input, const NormAttrs& attrs) {
  check_floating(input, "input");
  const auto& normalized = attrs.read<std::vector<int64_t>>(Field::normalized_shape);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized.size());
  OPGRAPH_CHECK(!normalized.empty() && axis >= 0 && Shape(input.shape.begin() + axis, input.shape.end()) == normalized,
                "normalized_shape: expected a non-empty shape that ends the input's shape ", shape_str(input.shape),
                ", got ", shape_str(normalized));
  return axis;
}

std::vector<TensorMeta> native_layer_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  const TensorMeta& input = *inputs[0];
  const int64_t axis = normalized_axis(input, attrs);
  const auto& normalized = attrs.read<std::vector<int64_t>>(Field::normalized_shape);
  check_optional(inputs[1], "weight", normalized, input);
  check_optional(inputs[2], "bias", normalized, input);
  TensorMeta stats{input.dtype, Shape(input.shape.begin(), input.shape.begin() + axis)};
  stats.shape.resize(input.shape.size(), 1);
  return {input, stats, stats};
}

std::vector<TensorMeta> layer_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  return {native_layer_norm_shape(inputs, attrs)[0]};
}

// The input as rows of the normalized_shape's elements.
struct NormalizedRows {
  int64_t rows, cols;
};

NormalizedRows normalized_rows(const Tensor& input, const NormAttrs& attrs) {
  const int64_t cols = product(attrs.read<std::vector<int64_t>>(Field::normalized_shape));
  return {cols == 0 ? 0 : input.numel() / cols, cols};
}

// Writes y for one row and returns its (mean, rstd). An absent weight is
// ones and an absent bias zeros (exact), so that y is one pass over the row.
template <typename T>
std::pair<T, T> layer_norm_row(const T* x, const T* w, const T* b, double eps, T* y, int64_t n) {
  const auto [mean, var] = row_moments(x, n);
  const T rstd = static_cast<T>(1.0 / std::sqrt(var + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  return {mean, rstd};
}

// Serves layer_norm (one output) and native_layer_norm (three).
void layer_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[0], attrs);
  const double eps = attrs.read<double>(Field::eps);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = inputs[0].data_ptr<const T>();
    std::vector<T> ones, zeros;
    const T* w = data_or_ones<T>(inputs[1], args.cols, ones);
    const T* b = data_or(inputs[2], T(0), args.cols, zeros);
    T* y = outputs[0].data_ptr<T>();
    T* mean = outputs.size() > 1 ? outputs[1].data_ptr<T>() : nullptr;
    T* rstd = outputs.size() > 1 ? outputs[2].data_ptr<T>() : nullptr;
    parallel_rows(context, args.rows, args.cols, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) {
          const auto stats = layer_norm_row(x + r * args.cols, w, b, eps, y + r * args.cols, args.cols);
          if (mean != nullptr) std::tie(mean[r], rstd[r]) = stats;
        }
      });
    });
  });
}

void layer_norm_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[0], attrs);
  const double eps = attrs.read<double>(Field::eps);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = inputs[0].data_ptr<const T>();
    const T* w = data_or_null<T>(inputs[1]);
    const T* b = data_or_null<T>(inputs[2]);
    T* y = outputs[0].data_ptr<T>();
    for (int64_t r = 0; r < args.rows; ++r) {
      const T* row = x + r * args.cols;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < args.cols; ++i) mean += row[i];
      mean /= static_cast<double>(args.cols);
      for (int64_t i = 0; i < args.cols; ++i) var += (row[i] - mean) * (row[i] - mean);
      var /= static_cast<double>(args.cols);
      const double rstd = 1.0 / std::sqrt(var + eps);
      for (int64_t i = 0; i < args.cols; ++i) {
        y[r * args.cols + i] = static_cast<T>((row[i] - mean) * rstd * (w ? w[i] : 1.0) + (b ? b[i] : 0.0));
      }
      if (outputs.size() > 1) {
        outputs[1].data_ptr<T>()[r] = static_cast<T>(mean);
        outputs[2].data_ptr<T>()[r] = static_cast<T>(rstd);
      }
    }
  });
}

// ---- rms_norm ---------------------------------------------------------------
// y = x / sqrt(mean(x^2) + eps) * weight over the normalized dims: Llama's,
// T5's and torch.nn.RMSNorm's normalization. An absent eps is the dtype's
// machine epsilon, as PyTorch's.

std::vector<TensorMeta> rms_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  const TensorMeta& input = *inputs[0];
  normalized_axis(input, attrs);
  check_optional(inputs[1], "weight", attrs.read<std::vector<int64_t>>(Field::normalized_shape), input);
  return {input};
}

template <typename T>
double rms_norm_eps(const NormAttrs& attrs) {
  const AttrValue& eps = attrs.value(Field::eps);
  return std::holds_alternative<double>(eps) ? std::get<double>(eps) : std::numeric_limits<T>::epsilon();
}

void rms_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                  const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[0], attrs);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const double eps = rms_norm_eps<T>(attrs);
    const T* x = inputs[0].data_ptr<const T>();
    std::vector<T> ones;
    const T* w = data_or_ones<T>(inputs[1], args.cols, ones);
    T* y = outputs[0].data_ptr<T>();
    parallel_rows(context, args.rows, args.cols, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) {
          const T* row = x + r * args.cols;
          const double mean_square =
              chunked_sum<T>(args.cols, [=](int64_t i) { return row[i] * row[i]; }) / static_cast<double>(args.cols);
          const T rstd = static_cast<T>(1.0 / std::sqrt(mean_square + eps));
          T* out = y + r * args.cols;
          for (int64_t i = 0; i < args.cols; ++i) out[i] = row[i] * rstd * w[i];
        }
      });
    });
  });
}

void rms_norm_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                        const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[0], attrs);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const double eps = rms_norm_eps<T>(attrs);
    const T* x = inputs[0].data_ptr<const T>();
    const T* w = data_or_null<T>(inputs[1]);
    T* y = outputs[0].data_ptr<T>();
    for (int64_t r = 0; r < args.rows; ++r) {
      double sum = 0;
      for (int64_t i = 0; i < args.cols; ++i) sum += double(x[r * args.cols + i]) * x[r * args.cols + i];
      const double rstd = 1.0 / std::sqrt(sum / static_cast<double>(args.cols) + eps);
      for (int64_t i = 0; i < args.cols; ++i) {
        y[r * args.cols + i] = static_cast<T>(x[r * args.cols + i] * rstd * (w ? w[i] : 1.0));
      }
    }
  });
}

// ---- native_layer_norm_backward ---------------------------------------------
// Inputs: grad_out, input, mean, rstd, weight?, bias?. With xhat = (x - mean)
// * rstd and g = grad_out * weight, per row of n elements:
//   grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)),
// and over all rows grad_weight = sum(grad_out * xhat), grad_bias = sum(grad_out).

std::vector<TensorMeta> native_layer_norm_backward_shape(std::span<const TensorMeta* const> inputs,
                                                         const NormAttrs& attrs) {
  const TensorMeta* forward_inputs[] = {inputs[1], inputs[4], inputs[5]};
  const std::vector<TensorMeta> forward = native_layer_norm_shape(forward_inputs, attrs);
  const TensorMeta& input = forward[0];
  check_same_meta(*inputs[0], "grad_out", input, "input");
  const char* names[] = {"mean", "rstd"};
  for (int k = 0; k < 2; ++k) {
    const TensorMeta& stats = *inputs[2 + k];
    OPGRAPH_CHECK(stats.dtype == input.dtype && stats.numel() == forward[1].numel(), names[k], ": expected ",
                  forward[1].str(), " (one value per normalized row of input ", input.str(), "), got ", stats.str());
  }
  const std::array<bool, 3> mask = output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask));
  const TensorMeta per_feature{input.dtype, attrs.read<std::vector<int64_t>>(Field::normalized_shape)};
  return {unless_masked(mask[0], input), unless_masked(mask[1], per_feature), unless_masked(mask[2], per_feature)};
}

void layer_norm_backward_cpu(const KernelContext& context, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[1], attrs);
  const std::array<bool, 3> mask = output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask));
  const int64_t rows = args.rows, n = args.cols;
  dispatch_floating(inputs[1].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = inputs[0].data_ptr<const T>();
    const T* x = inputs[1].data_ptr<const T>();
    const T* mean = inputs[2].data_ptr<const T>();
    const T* rstd = inputs[3].data_ptr<const T>();
    std::vector<T> ones;
    const T* w = data_or_ones(inputs[4], n, ones);
    if (mask[0]) {
      T* dx = outputs[0].data_ptr<T>();
      parallel_rows(context, rows, 3 * n, [&](int64_t begin, int64_t end) {
        dispatch_cpu([&] {
          for (int64_t r = begin; r < end; ++r) {
            const T *g = dy + r * n, *xr = x + r * n;
            const T m = mean[r], s = rstd[r];
            auto plus = [](double a, double c) { return a + c; };
            const double sum_g = reduce_lanes(n, 0.0, [=](int64_t i) { return double(g[i] * w[i]); }, plus);
            const double sum_gx =
                reduce_lanes(n, 0.0, [=](int64_t i) { return double(g[i] * w[i] * (xr[i] - m)); }, plus);
            const T mean_g = static_cast<T>(sum_g / n), mean_gx = static_cast<T>(sum_gx * s / n);
            for (int64_t i = 0; i < n; ++i) dx[r * n + i] = s * (g[i] * w[i] - mean_g - (xr[i] - m) * s * mean_gx);
          }
        });
      });
    }
    if (!mask[1] && !mask[2]) return;
    T* dw = mask[1] ? outputs[1].data_ptr<T>() : nullptr;
    T* db = mask[2] ? outputs[2].data_ptr<T>() : nullptr;
    // Column sums, a tile of columns at a time, each in double.
    const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;
    parallel_rows(context, tiles, rows * kColumnTile, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t first = t * kColumnTile, width = std::min(kColumnTile, n - first);
          double sum_w[kColumnTile] = {}, sum_b[kColumnTile] = {};
          for (int64_t r = 0; r < rows; ++r) {
            const T *g = dy + r * n + first, *xr = x + r * n + first;
            const T m = mean[r], s = rstd[r];
            for (int64_t j = 0; j < width; ++j) {
              sum_w[j] += double(g[j] * (xr[j] - m) * s);
              sum_b[j] += double(g[j]);
            }
          }
          for (int64_t j = 0; j < width; ++j) {
            if (dw != nullptr) dw[first + j] = static_cast<T>(sum_w[j]);
            if (db != nullptr) db[first + j] = static_cast<T>(sum_b[j]);
          }
        }
      });
    });
  });
}

// The gradients from their definition, for rows of `cols` values, each
// normalized with its mean and rstd (inputs: grad_out, input, mean, rstd,
// weight?), then scaled by weight[feature(r, i)] (of `features`): with
// xhat = (x - mean) * rstd and g = grad_out * weight,
//   grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)) along each row,
//   grad_weight[f] = sum(grad_out * xhat), grad_bias[f] = sum(grad_out) over f's elements.
template <typename Feature>
void normalized_rows_backward_reference(std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                        const std::array<bool, 3>& mask, int64_t rows, int64_t cols, int64_t features,
                                        Feature feature) {
  dispatch_floating(inputs[1].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = inputs[0].data_ptr<const T>();
    const T* x = inputs[1].data_ptr<const T>();
    const T* mean = inputs[2].data_ptr<const T>();
    const T* rstd = inputs[3].data_ptr<const T>();
    const T* w = data_or_null<T>(inputs[4]);
    std::vector<double> dx(static_cast<size_t>(rows * cols)), dw(static_cast<size_t>(features)), db(dw.size());
    for (int64_t r = 0; r < rows; ++r) {
      auto xhat = [&](int64_t i) { return (double(x[r * cols + i]) - mean[r]) * rstd[r]; };
      auto g = [&](int64_t i) { return double(dy[r * cols + i]) * (w ? w[feature(r, i)] : 1.0); };
      double sum_g = 0, sum_gx = 0;
      for (int64_t i = 0; i < cols; ++i) {
        sum_g += g(i);
        sum_gx += g(i) * xhat(i);
        dw[feature(r, i)] += dy[r * cols + i] * xhat(i);
        db[feature(r, i)] += dy[r * cols + i];
      }
      for (int64_t i = 0; i < cols; ++i) {
        dx[r * cols + i] = rstd[r] * (g(i) - sum_g / cols - xhat(i) * sum_gx / cols);
      }
    }
    if (mask[0]) store<T>(dx, outputs[0]);
    if (mask[1]) store<T>(dw, outputs[1]);
    if (mask[2]) store<T>(db, outputs[2]);
  });
}

void layer_norm_backward_reference(const KernelContext&, std::span<const Tensor> inputs,
                                   std::span<const Tensor> outputs, const NormAttrs& attrs) {
  const NormalizedRows args = normalized_rows(inputs[1], attrs);
  normalized_rows_backward_reference(inputs, outputs, output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask)),
                                     args.rows, args.cols, args.cols, [](int64_t, int64_t i) { return i; });
}

// ---- group_norm and instance_norm ---------------------------------------------
// The input (N, C, spatial...) is N * G rows of C/G channels of HxW values;
// each row is normalized with its own mean and rstd, then each channel c gets
// weight[c] and bias[c].

struct Groups {
  int64_t batch, channels, plane, groups;
};

int64_t attr_at_least(const NormAttrs& attrs, Field field, int64_t lowest) {
  const char* name = kFieldNames[static_cast<size_t>(field)];
  const int64_t value = attrs.read<int64_t>(field);
  OPGRAPH_CHECK(value >= lowest, name, ": expected at least ", lowest, ", got ", value);
  return value;
}

// Checks input, weight and bias against `g` and returns the input.
TensorMeta group_norm_input(std::span<const TensorMeta* const> inputs, const Groups& g) {
  const TensorMeta& input = *inputs[0];
  check_floating(input, "input");
  OPGRAPH_CHECK(input.dim() >= 2, "input: expected rank 2 or more (N, C, ...), got ", input.str());
  OPGRAPH_CHECK(g.groups >= 1 && g.channels % g.groups == 0, "groups: expected a divisor of the ", g.channels,
                " channels, got ", g.groups);
  check_optional(inputs[1], "weight", {g.channels}, input);
  check_optional(inputs[2], "bias", {g.channels}, input);
  return input;
}

// Spread as in the input: N, C and the product of the spatial dims.
Groups input_groups(const Shape& shape, int64_t groups) {
  return {shape[0], shape[1], product(std::span(shape).subspan(2)), groups};
}

// native_group_norm gives N, C, HxW and group as attributes.
Groups native_groups(const NormAttrs& attrs) {
  return {attr_at_least(attrs, Field::N, 0), attr_at_least(attrs, Field::C, 0), attr_at_least(attrs, Field::HxW, 0),
          attr_at_least(attrs, Field::group, 1)};
}

std::vector<TensorMeta> native_group_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  const Groups g = native_groups(attrs);
  const TensorMeta input = group_norm_input(inputs, g);
  const int64_t total = checked_mul(checked_mul(g.batch, g.channels, "C"), g.plane, "HxW");
  OPGRAPH_CHECK(input.shape[0] == g.batch && input.shape[1] == g.channels && input.numel() == total,
                "input: expected N=", g.batch, " x C=", g.channels, " x HxW=", g.plane, " elements, got ", input.str());
  const TensorMeta stats{input.dtype, {g.batch, g.groups}};
  return {input, stats, stats};
}

std::vector<TensorMeta> group_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  OPGRAPH_CHECK(inputs[0]->dim() >= 2, "input: expected rank 2 or more (N, C, ...), got ", inputs[0]->str());
  return {group_norm_input(inputs, input_groups(inputs[0]->shape, attrs.read<int64_t>(Field::num_groups)))};
}

// Fast: each row's statistics, then each channel's affine map; mean and rstd
// (N, G) are written when given.
template <typename T>
void group_norm(const KernelContext& context, const Groups& g, double eps, const Tensor& input, const Tensor& weight,
                const Tensor& bias, const Tensor& out, T* mean, T* rstd) {
  const int64_t per_group = g.channels / g.groups, cols = per_group * g.plane;
  const T* x = input.data_ptr<const T>();
  const T* w = data_or_null<T>(weight);
  const T* b = data_or_null<T>(bias);
  T* y = out.data_ptr<T>();
  parallel_rows(context, g.batch * g.groups, cols, [&](int64_t begin, int64_t end) {
    dispatch_cpu([&] {
      for (int64_t r = begin; r < end; ++r) {
        const auto [m, var] = row_moments(x + r * cols, cols);
        const T s = static_cast<T>(1.0 / std::sqrt(var + eps));
        if (mean != nullptr) {
          mean[r] = m;
          rstd[r] = s;
        }
        for (int64_t k = 0; k < per_group; ++k) {
          const int64_t c = r % g.groups * per_group + k, at = r * cols + k * g.plane;
          const T a = s * (w ? w[c] : T(1)), shift = (b ? b[c] : T(0)) - m * a;
          for (int64_t i = 0; i < g.plane; ++i) y[at + i] = x[at + i] * a + shift;
        }
      }
    });
  });
}

template <typename T>
void group_norm_reference(const Groups& g, double eps, const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const Tensor& out, T* mean, T* rstd) {
  const int64_t per_group = g.channels / g.groups, cols = per_group * g.plane;
  const T* x = input.data_ptr<const T>();
  const T* w = data_or_null<T>(weight);
  const T* b = data_or_null<T>(bias);
  T* y = out.data_ptr<T>();
  for (int64_t r = 0; r < g.batch * g.groups; ++r) {
    double sum = 0, squares = 0;
    for (int64_t i = 0; i < cols; ++i) sum += x[r * cols + i];
    const double m = sum / cols;
    for (int64_t i = 0; i < cols; ++i) squares += (x[r * cols + i] - m) * (x[r * cols + i] - m);
    const double s = 1.0 / std::sqrt(squares / cols + eps);
    for (int64_t i = 0; i < cols; ++i) {
      const int64_t c = r % g.groups * per_group + i / g.plane;
      y[r * cols + i] = static_cast<T>((x[r * cols + i] - m) * s * (w ? w[c] : 1.0) + (b ? b[c] : 0.0));
    }
    if (mean != nullptr) {
      mean[r] = static_cast<T>(m);
      rstd[r] = static_cast<T>(s);
    }
  }
}

// Runs the fast kernel or the reference on inputs (input, weight?, bias?, ...)
// and outputs (out, [mean, rstd]).
template <bool Reference>
void run_group_norm(const KernelContext& context, const Groups& g, double eps, std::span<const Tensor> inputs,
                    std::span<const Tensor> outputs) {
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    T* mean = outputs.size() > 1 ? outputs[1].data_ptr<T>() : nullptr;
    T* rstd = outputs.size() > 1 ? outputs[2].data_ptr<T>() : nullptr;
    if (Reference) {
      group_norm_reference<T>(g, eps, inputs[0], inputs[1], inputs[2], outputs[0], mean, rstd);
    } else {
      group_norm<T>(context, g, eps, inputs[0], inputs[1], inputs[2], outputs[0], mean, rstd);
    }
  });
}

template <bool Reference>
void native_group_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs,
                           std::span<const Tensor> outputs, const NormAttrs& attrs) {
  run_group_norm<Reference>(context, native_groups(attrs), attrs.read<double>(Field::eps), inputs, outputs);
}

template <bool Reference>
void group_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const NormAttrs& attrs) {
  run_group_norm<Reference>(context, input_groups(inputs[0].shape(), attrs.read<int64_t>(Field::num_groups)),
                            attrs.read<double>(Field::eps), inputs, outputs);
}

// ---- native_group_norm_backward -----------------------------------------------
// Inputs: grad_out, input, mean, rstd (N, G), weight?. Per (n, c), with sums
// over the channel's plane, ds = sum(dy * x) and db = sum(dy); then per (n, g)
// over its channels, with s = rstd and m = mean:
//   grad_input = s * w[c] * dy + u * x + v, where u and v make the row's
//   gradient orthogonal to 1 and xhat (as for layer_norm),
//   grad_weight[c] = sum_n s * (ds - m * db), grad_bias[c] = sum_n db.

std::vector<TensorMeta> native_group_norm_backward_shape(std::span<const TensorMeta* const> inputs,
                                                         const NormAttrs& attrs) {
  const TensorMeta* forward_inputs[] = {inputs[1], inputs[4], nullptr};
  const std::vector<TensorMeta> forward = native_group_norm_shape(forward_inputs, attrs);
  check_same_meta(*inputs[0], "grad_out", forward[0], "input");
  check_same_meta(*inputs[2], "mean", forward[1], "the forward's mean (N, group)");
  check_same_meta(*inputs[3], "rstd", forward[2], "the forward's rstd (N, group)");
  const std::array<bool, 3> mask = output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask));
  const TensorMeta per_channel{forward[0].dtype, {attrs.read<int64_t>(Field::C)}};
  return {unless_masked(mask[0], forward[0]), unless_masked(mask[1], per_channel), unless_masked(mask[2], per_channel)};
}

void group_norm_backward_cpu(const KernelContext& context, std::span<const Tensor> inputs,
                             std::span<const Tensor> outputs, const NormAttrs& attrs) {
  const Groups g = native_groups(attrs);
  const std::array<bool, 3> mask = output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask));
  const int64_t per_group = g.channels / g.groups, rows = g.batch * g.channels, hw = g.plane;
  dispatch_floating(inputs[1].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = inputs[0].data_ptr<const T>();
    const T* x = inputs[1].data_ptr<const T>();
    const T* mean = inputs[2].data_ptr<const T>();
    const T* rstd = inputs[3].data_ptr<const T>();
    std::vector<T> ones;
    const T* w = data_or_ones(inputs[4], g.channels, ones);
    std::vector<double> ds(static_cast<size_t>(rows)), db(ds.size());
    parallel_rows(context, rows, 2 * hw, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) {
          const T *gr = dy + r * hw, *xr = x + r * hw;
          auto plus = [](double a, double c) { return a + c; };
          ds[r] = reduce_lanes(hw, 0.0, [=](int64_t i) { return double(gr[i] * xr[i]); }, plus);
          db[r] = row_sum(gr, hw);
        }
      });
    });
    if (mask[0]) {
      T* dx = outputs[0].data_ptr<T>();
      const double count = static_cast<double>(per_group * hw);
      parallel_rows(context, g.batch * g.groups, 2 * per_group * hw, [&](int64_t begin, int64_t end) {
        dispatch_cpu([&] {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t first = r % g.groups * per_group, n = r / g.groups;
            double sum_ds = 0, sum_db = 0;  // weighted by w over the group's channels
            for (int64_t c = first; c < first + per_group; ++c) {
              sum_ds += ds[n * g.channels + c] * w[c];
              sum_db += db[n * g.channels + c] * w[c];
            }
            const double m = mean[r], s = rstd[r];
            const double u = (sum_db * m - sum_ds) * s * s * s / count;
            const T ut = static_cast<T>(u), vt = static_cast<T>(-u * m - sum_db * s / count);
            for (int64_t c = first; c < first + per_group; ++c) {
              const T a = static_cast<T>(s * w[c]);
              const int64_t at = (n * g.channels + c) * hw;
              for (int64_t i = 0; i < hw; ++i) dx[at + i] = a * dy[at + i] + ut * x[at + i] + vt;
            }
          }
        });
      });
    }
    std::vector<double> dw(static_cast<size_t>(g.channels)), dbias(dw.size());
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t c = 0; c < g.channels; ++c) {
        const int64_t r = n * g.groups + c / per_group;
        dw[c] += (ds[n * g.channels + c] - double(mean[r]) * db[n * g.channels + c]) * rstd[r];
        dbias[c] += db[n * g.channels + c];
      }
    }
    if (mask[1]) store<T>(dw, outputs[1]);
    if (mask[2]) store<T>(dbias, outputs[2]);
  });
}

void group_norm_backward_reference(const KernelContext&, std::span<const Tensor> inputs,
                                   std::span<const Tensor> outputs, const NormAttrs& attrs) {
  const Groups g = native_groups(attrs);
  const int64_t per_group = g.channels / g.groups;
  normalized_rows_backward_reference(inputs, outputs, output_mask(attrs.read<std::vector<int64_t>>(Field::output_mask)),
                                     g.batch * g.groups, per_group * g.plane, g.channels,
                                     [&](int64_t r, int64_t i) { return r % g.groups * per_group + i / g.plane; });
}

// ---- batch_norm ------------------------------------------------------------------
// Inputs: input, weight?, bias? and, where the schema has them, running_mean
// and running_var. Per channel c, y = (x - mean[c]) * rstd[c] * w[c] + b[c],
// with the running statistics (inference) or the batch's (training).

TensorMeta batch_norm_input(std::span<const TensorMeta* const> inputs) {
  const TensorMeta& input = *inputs[0];
  check_floating(input, "input");
  OPGRAPH_CHECK(input.dim() >= 2, "input: expected rank 2 or more (N, C, ...), got ", input.str());
  const Shape channels{input.shape[1]};
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (size_t i = 1; i < inputs.size(); ++i) check_optional(inputs[i], names[i - 1], channels, input);
  return input;
}

std::vector<TensorMeta> batch_norm_no_training_shape(std::span<const TensorMeta* const> inputs, const NormAttrs&) {
  const TensorMeta input = batch_norm_input(inputs);
  // ATen saves no statistics in inference: both come back empty.
  const TensorMeta empty{input.dtype, {0}};
  return {input, empty, empty};
}

// aten::batch_norm in training normalizes with the batch's statistics and
// leaves the running ones (which ATen updates in place) as they are.
std::vector<TensorMeta> batch_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  OPGRAPH_CHECK(attrs.read<bool>(Field::training) || (inputs[3] != nullptr && inputs[4] != nullptr),
                "running_mean, running_var: expected tensors in inference mode (training=False), got None");
  return {batch_norm_input(inputs)};
}

// _native_batch_norm_legit (with running statistics or .no_stats) and
// _native_batch_norm_legit_functional, which returns the updated running
// statistics as well: training saves the batch's mean and rstd per channel,
// inference saves nothing.
std::vector<TensorMeta> batch_norm_legit_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  const TensorMeta input = batch_norm_input(inputs);
  const bool training = attrs.read<bool>(Field::training);
  OPGRAPH_CHECK(training || inputs.size() == 5, "training: expected True without running statistics, got False");
  const TensorMeta saved{input.dtype, {training ? input.shape[1] : 0}};
  return {input, saved, saved};
}

std::vector<TensorMeta> batch_norm_functional_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  std::vector<TensorMeta> outputs = batch_norm_legit_shape(inputs, attrs);
  outputs.push_back(*inputs[3]);
  outputs.push_back(*inputs[4]);
  return outputs;
}

// Per-channel statistics, in double.
struct ChannelStats {
  std::vector<double> mean, rstd;
  std::vector<double> squares;  // sums of squared deviations (training only)
  int64_t count = 0;            // values per channel
};

template <typename T>
ChannelStats running_stats(const Tensor& running_mean, const Tensor& running_var, double eps) {
  const int64_t channels = running_mean.numel();
  ChannelStats stats;
  for (int64_t c = 0; c < channels; ++c) {
    stats.mean.push_back(running_mean.data_ptr<const T>()[c]);
    stats.rstd.push_back(1.0 / std::sqrt(double(running_var.data_ptr<const T>()[c]) + eps));
  }
  return stats;
}

// The batch's statistics for each channel, two passes over its rows.
template <typename T>
ChannelStats batch_stats(const KernelContext& context, const DimLayout& layout, const T* x, double eps) {
  ChannelStats stats{std::vector<double>(layout.size), std::vector<double>(layout.size),
                     std::vector<double>(layout.size), layout.outer * layout.inner};
  const double count = static_cast<double>(stats.count);
  parallel_rows(context, layout.size, stats.count, [&](int64_t begin, int64_t end) {
    dispatch_cpu([&] {
      for (int64_t c = begin; c < end; ++c) {
        double sum = 0, squares = 0;
        for (int64_t o = 0; o < layout.outer; ++o) {
          sum += row_sum(x + (o * layout.size + c) * layout.inner, layout.inner);
        }
        const double m = sum / count;
        for (int64_t o = 0; o < layout.outer; ++o) {
          const T* row = x + (o * layout.size + c) * layout.inner;
          squares += reduce_lanes(
              layout.inner, 0.0, [=](int64_t i) { return (row[i] - m) * (row[i] - m); },
              [](double a, double b) { return a + b; });
        }
        stats.mean[c] = m;
        stats.squares[c] = squares;
        stats.rstd[c] = 1.0 / std::sqrt(squares / count + eps);
      }
    });
  });
  return stats;
}

template <typename T>
ChannelStats batch_stats_reference(const DimLayout& layout, const T* x, double eps) {
  ChannelStats stats{{}, {}, {}, layout.outer * layout.inner};
  for (int64_t c = 0; c < layout.size; ++c) {
    double sum = 0, squares = 0;
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t i = 0; i < layout.inner; ++i) sum += x[(o * layout.size + c) * layout.inner + i];
    }
    const double m = sum / stats.count;
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t i = 0; i < layout.inner; ++i) {
        const double d = x[(o * layout.size + c) * layout.inner + i] - m;
        squares += d * d;
      }
    }
    stats.mean.push_back(m);
    stats.squares.push_back(squares);
    stats.rstd.push_back(1.0 / std::sqrt(squares / stats.count + eps));
  }
  return stats;
}

// y = x * scale[c] + shift[c], with the per-channel affine map folded once.
template <typename T>
void normalize_channels(const KernelContext& context, const DimLayout& layout, const ChannelStats& stats,
                        std::span<const Tensor> inputs, const Tensor& out) {
  const T* w = data_or_null<T>(inputs[1]);
  const T* b = data_or_null<T>(inputs[2]);
  std::vector<T> scale(static_cast<size_t>(layout.size)), shift(scale.size());
  for (int64_t c = 0; c < layout.size; ++c) {
    const double s = (w ? w[c] : 1.0) * stats.rstd[c];
    scale[c] = static_cast<T>(s);
    shift[c] = static_cast<T>((b ? b[c] : 0.0) - stats.mean[c] * s);
  }
  const T* x = inputs[0].data_ptr<const T>();
  T* y = out.data_ptr<T>();
  const int64_t n = layout.inner;
  parallel_rows(context, layout.outer * layout.size, n, [&](int64_t begin, int64_t end) {
    dispatch_cpu([&] {
      for (int64_t r = begin; r < end; ++r) {
        const T a = scale[r % layout.size], c = shift[r % layout.size];
        for (int64_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * a + c;
      }
    });
  });
}

template <typename T>
void normalize_channels_reference(const DimLayout& layout, const ChannelStats& stats, std::span<const Tensor> inputs,
                                  const Tensor& out) {
  const T* x = inputs[0].data_ptr<const T>();
  const T* w = data_or_null<T>(inputs[1]);
  const T* b = data_or_null<T>(inputs[2]);
  T* y = out.data_ptr<T>();
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t c = 0; c < layout.size; ++c) {
      for (int64_t i = 0; i < layout.inner; ++i) {
        const int64_t at = (o * layout.size + c) * layout.inner + i;
        const double normalized = (x[at] - stats.mean[c]) * stats.rstd[c];
        y[at] = static_cast<T>(normalized * (w ? w[c] : 1.0) + (b ? b[c] : 0.0));
      }
    }
  }
}

// Training's other outputs: the saved mean and rstd, and for the functional
// form the running statistics moved `momentum` of the way to the batch's
// (with the unbiased variance, as ATen).
template <typename T>
void store_training_outputs(const ChannelStats& stats, double momentum, std::span<const Tensor> inputs,
                            std::span<const Tensor> outputs) {
  store<T>(stats.mean, outputs[1]);
  store<T>(stats.rstd, outputs[2]);
  if (outputs.size() < 5) return;
  const T* running_mean = inputs[3].data_ptr<const T>();
  const T* running_var = inputs[4].data_ptr<const T>();
  for (size_t c = 0; c < stats.mean.size(); ++c) {
    const double unbiased = stats.squares[c] / static_cast<double>(stats.count - 1);
    outputs[3].data_ptr<T>()[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * stats.mean[c]);
    outputs[4].data_ptr<T>()[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * unbiased);
  }
}

// Serves every batch_norm op. The legit ops' running_mean and running_var are
// `Tensor(a!)`: ATen updates them in place in training. Kernels here never
// write their inputs, so those are read (in inference) and left as they are;
// a graph that keeps the updated statistics is a functionalized one, whose
// _native_batch_norm_legit_functional returns them as outputs 3 and 4.
template <bool Reference>
void run_batch_norm(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const NormAttrs& attrs, bool training) {
  const DimLayout layout = layout_around(inputs[0].shape(), 1);
  const double eps = attrs.read<double>(Field::eps);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = inputs[0].data_ptr<const T>();
    const ChannelStats stats = !training   ? running_stats<T>(inputs[3], inputs[4], eps)
                               : Reference ? batch_stats_reference(layout, x, eps)
                                           : batch_stats(context, layout, x, eps);
    if (Reference) {
      normalize_channels_reference<T>(layout, stats, inputs, outputs[0]);
    } else {
      normalize_channels<T>(context, layout, stats, inputs, outputs[0]);
    }
    if (training && outputs.size() > 1) {
      store_training_outputs<T>(stats, attrs.read<double>(Field::momentum), inputs, outputs);
    } else if (outputs.size() == 5) {  // the running statistics, unchanged
      std::memcpy(outputs[3].data(), inputs[3].data(), inputs[3].nbytes());
      std::memcpy(outputs[4].data(), inputs[4].data(), inputs[4].nbytes());
    }
  });
}

// The ops with a `training` attribute.
template <bool Reference>
void batch_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const NormAttrs& attrs) {
  run_batch_norm<Reference>(context, inputs, outputs, attrs, attrs.read<bool>(Field::training));
}

template <bool Reference>
void batch_norm_inference_cpu(const KernelContext& context, std::span<const Tensor> inputs,
                              std::span<const Tensor> outputs, const NormAttrs& attrs) {
  run_batch_norm<Reference>(context, inputs, outputs, attrs, false);
}

// ---- instance_norm ---------------------------------------------------------------
// Inputs: input, weight?, bias?, running_mean?, running_var?. With the input's
// statistics it is group_norm with a group per channel (running statistics,
// which ATen would update in place, are left as they are); without, it is
// inference-mode batch_norm.

std::vector<TensorMeta> instance_norm_shape(std::span<const TensorMeta* const> inputs, const NormAttrs& attrs) {
  const TensorMeta input = batch_norm_input(inputs);
  OPGRAPH_CHECK(attrs.read<bool>(Field::use_input_stats) || (inputs[3] != nullptr && inputs[4] != nullptr),
                "running_mean, running_var: expected tensors when use_input_stats is False, got None");
  return {input};
}

template <bool Reference>
void instance_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                       const NormAttrs& attrs) {
  if (!attrs.read<bool>(Field::use_input_stats)) {
    return batch_norm_inference_cpu<Reference>(context, inputs, outputs, attrs);
  }
  const Groups per_channel = input_groups(inputs[0].shape(), inputs[0].size(1));
  run_group_norm<Reference>(context, per_channel, attrs.read<double>(Field::eps), inputs, outputs);
}

}  // namespace

void register_norm_ops(BuiltinOps& builtins) {
  define_norm(builtins, {.schema = "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
                                   "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
                         .shape = native_layer_norm_shape,
                         .cpu = layer_norm_cpu,
                         .reference = layer_norm_reference});
  define_norm(builtins,
              {.schema = "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                         "Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
               .shape = layer_norm_shape,
               .cpu = layer_norm_cpu,
               .reference = layer_norm_reference});
  define_norm(builtins, {.schema = "aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                                   "float? eps=None) -> Tensor",
                         .shape = rms_norm_shape,
                         .cpu = rms_norm_cpu,
                         .reference = rms_norm_reference});
  define_norm(builtins, {.schema = "aten::native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
                                   "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
                                   "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
                         .shape = native_layer_norm_backward_shape,
                         .cpu = layer_norm_backward_cpu,
                         .reference = layer_norm_backward_reference});
  define_norm(builtins, {.schema = "aten::native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, "
                                   "SymInt C, SymInt HxW, int group, float eps) -> (Tensor, Tensor, Tensor)",
                         .shape = native_group_norm_shape,
                         OPGRAPH_CPU_AND_REFERENCE(native_group_norm_cpu)});
  define_norm(builtins,
              {.schema = "aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
                         "float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor",
               .shape = group_norm_shape,
               OPGRAPH_CPU_AND_REFERENCE(group_norm_cpu)});
  define_norm(builtins, {.schema = "aten::native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, "
                                   "Tensor rstd, Tensor? weight, SymInt N, SymInt C, SymInt HxW, int group, "
                                   "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
                         .shape = native_group_norm_backward_shape,
                         .cpu = group_norm_backward_cpu,
                         .reference = group_norm_backward_reference});
  define_norm(builtins, {.schema = "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, "
                                   "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) "
                                   "-> (Tensor, Tensor, Tensor)",
                         .shape = batch_norm_no_training_shape,
                         OPGRAPH_CPU_AND_REFERENCE(batch_norm_inference_cpu)});
  define_norm(builtins, {.schema = "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                                   "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) "
                                   "-> Tensor",
                         .shape = batch_norm_shape,
                         OPGRAPH_CPU_AND_REFERENCE(batch_norm_cpu)});
  define_norm(builtins, {.schema = "aten::_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, "
                                   "Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, "
                                   "float eps) -> (Tensor, Tensor, Tensor)",
                         .shape = batch_norm_legit_shape,
                         OPGRAPH_CPU_AND_REFERENCE(batch_norm_cpu)});
  define_norm(builtins,
              {.schema = "aten::_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, "
                         "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
               .shape = batch_norm_legit_shape,
               OPGRAPH_CPU_AND_REFERENCE(batch_norm_cpu)});
  define_norm(builtins,
              {.schema = "aten::_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, "
                         "Tensor running_mean, Tensor running_var, bool training, float momentum, float eps) "
                         "-> (Tensor, Tensor, Tensor, Tensor running_mean_out, Tensor running_var_out)",
               .shape = batch_norm_functional_shape,
               OPGRAPH_CPU_AND_REFERENCE(batch_norm_cpu)});
  define_norm(builtins,
              {.schema = "aten::instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                         "Tensor? running_var, bool use_input_stats, float momentum, float eps, "
                         "bool cudnn_enabled) -> Tensor",
               .shape = instance_norm_shape,
               OPGRAPH_CPU_AND_REFERENCE(instance_norm_cpu)});
}

}  // namespace opgraph::kernels
