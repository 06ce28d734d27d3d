// The pooling ops' geometry (shape/pool.h), read and checked from their
// attributes.
#include "kernels/shape/pool.h"

#include <variant>
#include <vector>

#include "kernels/shape/checked.h"

namespace opgraph::kernels::pool {
namespace {

int64_t pooled_size(const Axis& a, bool ceil_mode, const char* what) {
  const int64_t span = checked_add(checked_mul(a.dilation, a.kernel - 1, "dilation"), 1, "dilation");
  const int64_t padded = checked_add(a.in, checked_mul(2, a.padding, "padding"), "padding");
  OPGRAPH_CHECK(padded >= span, what, ": input size ", a.in, " (padded to ", padded, ") is smaller than the kernel (",
                span, ")");
  const int64_t room = checked_add(padded - span, ceil_mode ? a.stride - 1 : 0, "stride");
  int64_t out = room / a.stride + 1;
  // With ceil_mode, the last window must still start inside the input or its left padding.
  if (ceil_mode && (out - 1) * a.stride >= a.in + a.padding) --out;
  return out;
}

}  // namespace

// A per-axis argument: one value for every axis, or one for each of `dims`.
std::vector<int64_t> per_axis(std::span<const int64_t> values, const char* name, int dims,
                              std::vector<int64_t> fallback) {
  if (values.empty()) return fallback;
  OPGRAPH_CHECK(values.size() == 1 || values.size() == static_cast<size_t>(dims), name, ": expected 1 or ", dims,
                " values, got ", shape_str(values));
  return values.size() == 1 ? std::vector<int64_t>(dims, values[0])
                            : std::vector<int64_t>(values.begin(), values.end());
}

// A float input of rank dims + 1 or dims + 2 ((batch,) channels, spatial...).
void check_pooled_input(const TensorMeta& input, int dims) {
  OPGRAPH_CHECK(input.dtype == DType::Float32 || input.dtype == DType::Float64,
                "self: expected float32 or float64, got ", input.str());
  static constexpr const char* kLayouts[] = {"length", "height, width", "depth, height, width"};
  OPGRAPH_CHECK(input.dim() == dims + 1 || input.dim() == dims + 2, "self: expected rank ", dims + 1, " or ", dims + 2,
                " ((batch,) channels, ", kLayouts[dims - 1], "), got ", input.str());
}

namespace {

// Sizes the output from kernel_size, stride, padding and dilation (none: 1).
Pooling windows(const TensorMeta& input, std::span<const int64_t> kernel_size, std::span<const int64_t> stride_given,
                std::span<const int64_t> padding_given, std::span<const int64_t> dilation_given, bool ceil_mode,
                int dims) {
  check_pooled_input(input, dims);
  const auto kernel = per_axis(kernel_size, "kernel_size", dims, {});
  OPGRAPH_CHECK(kernel.size() == static_cast<size_t>(dims), "kernel_size: expected 1 or ", dims, " values, got none");
  const auto stride = per_axis(stride_given, "stride", dims, kernel);
  const auto padding = per_axis(padding_given, "padding", dims, std::vector<int64_t>(dims));
  const std::vector<int64_t> ones(dims, 1);
  const auto dilation = dilation_given.empty() ? ones : per_axis(dilation_given, "dilation", dims, ones);
  Pooling p;
  p.dims = dims;
  for (int d = 0; d < dims; ++d) {
    Axis& a = *p.axes()[3 - dims + d];
    a = {input.shape[input.dim() - dims + d], 0, kernel[d], stride[d], padding[d], dilation[d]};
    OPGRAPH_CHECK(a.kernel >= 1 && a.stride >= 1 && a.dilation >= 1 && a.padding >= 0,
                  "kernel_size, stride and dilation must be positive and padding not negative; got kernel ",
                  shape_str(kernel), ", stride ", shape_str(stride), ", padding ", shape_str(padding));
    OPGRAPH_CHECK(checked_mul(a.padding, 2, "padding") <= a.kernel, "padding: ", shape_str(padding),
                  " must be at most half of kernel_size ", shape_str(kernel));
    a.out = pooled_size(a, ceil_mode, "self");
  }
  return p;
}

}  // namespace

Pooling max_pooling(const TensorMeta& input, const MaxPoolArgs& args, int dims) {
  return windows(input, args.kernel_size, args.stride, args.padding, args.dilation, args.ceil_mode, dims);
}

Pooling average_pooling(const TensorMeta& input, const AvgPoolArgs& args, int dims) {
  Pooling p = windows(input, args.kernel_size, args.stride, args.padding, {}, args.ceil_mode, dims);
  p.count_include_pad = args.count_include_pad;
  if (args.divisor_override) {
    OPGRAPH_CHECK(*args.divisor_override != 0, "divisor_override: must not be zero");
    p.divisor_override = args.divisor_override;
  }
  return p;
}

}  // namespace opgraph::kernels::pool
