// layer_norm over trailing dims, and batch_norm in inference mode.
#include <cmath>
#include <tuple>
#include <utility>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/rows.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// An optional per-feature tensor (weight, bias, running stats): absent, or
// `shape` in the input's dtype.
void check_optional(const TensorMeta* meta, const char* argument, const Shape& shape, const TensorMeta& input) {
  if (meta == nullptr) return;
  const TensorMeta expected{input.dtype, shape};
  OPGRAPH_CHECK(*meta == expected, argument, ": expected ", expected.str(), " to match input ", input.str(),
                ", got ", meta->str());
}

template <typename T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<const T>() : nullptr;
}

// ---- layer_norm -------------------------------------------------------------

std::vector<TensorMeta> native_layer_norm_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta& input = *inputs[0];
  check_floating(input, "input");
  const auto& normalized = attrs.get<std::vector<int64_t>>("normalized_shape");
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized.size());
  OPGRAPH_CHECK(!normalized.empty() && axis >= 0 && Shape(input.shape.begin() + axis, input.shape.end()) == normalized,
                "normalized_shape: expected a non-empty shape that ends the input's shape ", shape_str(input.shape),
                ", got ", shape_str(normalized));
  check_optional(inputs[1], "weight", normalized, input);
  check_optional(inputs[2], "bias", normalized, input);
  TensorMeta stats{input.dtype, Shape(input.shape.begin(), input.shape.begin() + axis)};
  stats.shape.resize(input.shape.size(), 1);
  return {input, stats, stats};
}

std::vector<TensorMeta> layer_norm_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  return {native_layer_norm_shape(inputs, attrs)[0]};
}

struct LayerNormArgs {
  int64_t rows, cols;
  double eps;
};

LayerNormArgs layer_norm_args(std::span<const Tensor> inputs, const Attrs& attrs) {
  const int64_t cols = product(attrs.get<std::vector<int64_t>>("normalized_shape"));
  return {cols == 0 ? 0 : inputs[0].numel() / cols, cols, attrs.get<double>("eps")};
}

// Writes y for one row and returns its (mean, rstd). Two passes over x keep
// the variance accurate when the mean is large.
template <typename T>
std::pair<T, T> layer_norm_row(const T* x, const T* w, const T* b, double eps, T* y, int64_t n) {
  const T mean = static_cast<T>(row_sum(x, n) / static_cast<double>(n));
  const double var = reduce_lanes(
      n, 0.0, [=](int64_t i) { return static_cast<double>((x[i] - mean) * (x[i] - mean)); },
      [](double a, double c) { return a + c; }) / static_cast<double>(n);
  const T rstd = static_cast<T>(1.0 / std::sqrt(var + eps));
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
  if (w != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] *= w[i];
  }
  if (b != nullptr) {
    for (int64_t i = 0; i < n; ++i) y[i] += b[i];
  }
  return {mean, rstd};
}

// Serves layer_norm (one output) and native_layer_norm (three).
void layer_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) {
  const LayerNormArgs args = layer_norm_args(inputs, attrs);
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = inputs[0].data_ptr<const T>();
    const T* w = data_or_null<T>(inputs[1]);
    const T* b = data_or_null<T>(inputs[2]);
    T* y = outputs[0].data_ptr<T>();
    T* mean = outputs.size() > 1 ? outputs[1].data_ptr<T>() : nullptr;
    T* rstd = outputs.size() > 1 ? outputs[2].data_ptr<T>() : nullptr;
    parallel_rows(context, args.rows, args.cols, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) {
          const auto stats = layer_norm_row(x + r * args.cols, w, b, args.eps, y + r * args.cols, args.cols);
          if (mean != nullptr) std::tie(mean[r], rstd[r]) = stats;
        }
      });
    });
  });
}

void layer_norm_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const Attrs& attrs) {
  const LayerNormArgs args = layer_norm_args(inputs, attrs);
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
      const double rstd = 1.0 / std::sqrt(var + args.eps);
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

// ---- batch_norm (inference) ---------------------------------------------------
// Inputs in both schemas: input, weight?, bias?, running_mean, running_var.

TensorMeta batch_norm_input(std::span<const TensorMeta* const> inputs) {
  const TensorMeta& input = *inputs[0];
  check_floating(input, "input");
  OPGRAPH_CHECK(input.dim() >= 2, "input: expected rank 2 or more (N, C, ...), got ", input.str());
  const Shape channels{input.shape[1]};
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (size_t i = 1; i < 5; ++i) check_optional(inputs[i], names[i - 1], channels, input);
  return input;
}

std::vector<TensorMeta> batch_norm_no_training_shape(std::span<const TensorMeta* const> inputs, const Attrs&) {
  const TensorMeta input = batch_norm_input(inputs);
  // ATen saves no statistics in inference: both come back empty.
  const TensorMeta empty{input.dtype, {0}};
  return {input, empty, empty};
}

std::vector<TensorMeta> batch_norm_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  OPGRAPH_CHECK(!attrs.get<bool>("training"),
                "training: expected False, got True (training-mode batch_norm, which normalizes with the batch's "
                "statistics, is not supported by this op)");
  OPGRAPH_CHECK(inputs[3] != nullptr && inputs[4] != nullptr,
                "running_mean, running_var: expected tensors in inference mode (training=False), got None");
  return {batch_norm_input(inputs)};
}

// y = x * scale[c] + shift[c], with the per-channel affine map folded once.
void batch_norm_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                    const Attrs& attrs) {
  const DimLayout layout = layout_around(inputs[0].shape(), 1);
  const double eps = attrs.get<double>("eps");
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* w = data_or_null<T>(inputs[1]);
    const T* b = data_or_null<T>(inputs[2]);
    const T* running_mean = inputs[3].data_ptr<const T>();
    const T* running_var = inputs[4].data_ptr<const T>();
    std::vector<T> scale(static_cast<size_t>(layout.size)), shift(scale.size());
    for (int64_t c = 0; c < layout.size; ++c) {
      const double s = (w ? w[c] : 1.0) / std::sqrt(static_cast<double>(running_var[c]) + eps);
      scale[c] = static_cast<T>(s);
      shift[c] = static_cast<T>((b ? b[c] : 0.0) - running_mean[c] * s);
    }
    const T* x = inputs[0].data_ptr<const T>();
    T* y = outputs[0].data_ptr<T>();
    const int64_t n = layout.inner;
    parallel_rows(context, layout.outer * layout.size, n, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) {
          const T a = scale[r % layout.size], c = shift[r % layout.size];
          for (int64_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * a + c;
        }
      });
    });
  });
}

void batch_norm_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const Attrs& attrs) {
  const DimLayout layout = layout_around(inputs[0].shape(), 1);
  const double eps = attrs.get<double>("eps");
  dispatch_floating(inputs[0].dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T* x = inputs[0].data_ptr<const T>();
    const T* w = data_or_null<T>(inputs[1]);
    const T* b = data_or_null<T>(inputs[2]);
    const T* running_mean = inputs[3].data_ptr<const T>();
    const T* running_var = inputs[4].data_ptr<const T>();
    T* y = outputs[0].data_ptr<T>();
    for (int64_t o = 0; o < layout.outer; ++o) {
      for (int64_t c = 0; c < layout.size; ++c) {
        for (int64_t i = 0; i < layout.inner; ++i) {
          const int64_t at = (o * layout.size + c) * layout.inner + i;
          const double normalized = (x[at] - double(running_mean[c])) / std::sqrt(double(running_var[c]) + eps);
          y[at] = static_cast<T>(normalized * (w ? w[c] : 1.0) + (b ? b[c] : 0.0));
        }
      }
    }
  });
}

}  // namespace

void register_norm_ops(Registry& registry) {
  define(registry, {.schema = "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
                              "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
                    .shape = native_layer_norm_shape,
                    .cpu = layer_norm_cpu,
                    .reference = layer_norm_reference});
  define(registry, {.schema = "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
                              "Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
                    .shape = layer_norm_shape,
                    .cpu = layer_norm_cpu,
                    .reference = layer_norm_reference});
  define(registry, {.schema = "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, "
                              "Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps) "
                              "-> (Tensor, Tensor, Tensor)",
                    .shape = batch_norm_no_training_shape,
                    .cpu = batch_norm_cpu,
                    .reference = batch_norm_reference});
  define(registry, {.schema = "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
                              "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) "
                              "-> Tensor",
                    .shape = batch_norm_shape,
                    .cpu = batch_norm_cpu,
                    .reference = batch_norm_reference});
}

}  // namespace opgraph::kernels
