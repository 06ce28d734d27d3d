#include "kernels/cpu/engines/weight_panels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>

#include "kernels/cpu/util/prepared_weights.h"

namespace opgraph::kernels {
namespace {

// Where column c of a bfloat16 panel row of `width` columns lies.
int64_t paired_index(int64_t c, int64_t width) {
  const int64_t group = pair_group(width), half = group / 2;
  const int64_t start = c / group * group, within = c % group;
  return start + 2 * (within % half) + within / half;
}

// Where the scales of int8 panels of `bytes` start: at a cache line.
int64_t scales_offset(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// int8 panels and their scales: each column's groups of rows quantized
// symmetrically to [-127, 127], rounding to nearest even as torch.round does,
// the scales after the panels.
std::shared_ptr<const void> quantized_panels(const Panels<int8_t>& shape, const float* w, int64_t row_stride,
                                             int64_t column_stride) {
  const int64_t k = shape.k, last = shape.count() - 1, padded = shape.column(last) + shape.width(last);
  const int64_t groups = k / shape.group, panel_bytes = scales_offset(padded * k);
  std::shared_ptr<void> packed =
      streamed_buffer(static_cast<size_t>(panel_bytes) + static_cast<size_t>(groups * padded) * sizeof(float));
  auto* to = static_cast<int8_t*>(packed.get());
  auto* scales = reinterpret_cast<float*>(to + panel_bytes);
  for (int64_t j = 0; j < shape.n; ++j) {
    const int64_t i = shape.first_from(j + 1) - 1, first = shape.column(i), width = shape.width(i);
    for (int64_t g = 0; g < groups; ++g) {
      float largest = 0;
      for (int64_t q = g * shape.group; q < (g + 1) * shape.group; ++q) {
        largest = std::max(largest, std::abs(w[q * row_stride + j * column_stride]));
      }
      const float scale = largest / 127, inverse = largest > 0 ? 127 / largest : 0;
      scales[g * padded + j] = scale;
      for (int64_t q = g * shape.group; q < (g + 1) * shape.group; ++q) {
        const float value = std::nearbyint(w[q * row_stride + j * column_stride] * inverse);
        to[first * k + q * width + j - first] = static_cast<int8_t>(std::clamp(value, -127.0f, 127.0f));
      }
    }
  }
  return std::shared_ptr<const void>(std::move(packed));
}

}  // namespace

template <>
Panels<int8_t> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                             int64_t column_stride) {
  const WeightQuantization quantization = weight_quantization(context);
  const int64_t group = quantization.group_size == 0 ? k : quantization.group_size;
  OPGRAPH_CHECK(k % group == 0, "weights int8: the group size ", group, " does not divide the input dimension ", k,
                " of a weight with ", n, " outputs");
  Panels<int8_t> panels{nullptr, k, n, n / kPanel};
  const int64_t last = panels.count() - 1, padded = panels.column(last) + panels.width(last);
  panels.group = group;
  panels.scale_stride = padded;
  // The key's length (7) sets it apart from the other kinds of packed weight.
  const PreparedWeights::Key key{-k, -n, row_stride, column_stride, 8, group, reinterpret_cast<intptr_t>(w)};
  const std::span<const std::byte> source =
      spanned_bytes(w, std::array{k, n}, std::array{row_stride, column_stride}, sizeof(float));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(
      key, source, [&] { return quantized_panels(panels, w, row_stride, column_stride); });
  panels.data = static_cast<const int8_t*>(kept.get());
  panels.scales = reinterpret_cast<const float*>(panels.data + scales_offset(padded * k));
  return panels;
}

template <typename Element>
Panels<Element> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                              int64_t column_stride) {
  const int64_t full = n / kPanel;
  // The key's length (6) sets it apart from the other kinds of packed weight.
  const PreparedWeights::Key key{
      -k, -n, row_stride, column_stride, static_cast<int64_t>(DTypeOf<Element>::value), reinterpret_cast<intptr_t>(w)};
  const std::span<const std::byte> source =
      spanned_bytes(w, std::array{k, n}, std::array{row_stride, column_stride}, sizeof(float));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, source, [&] {
    const Panels<Element> shape{nullptr, k, n, full};
    const int64_t last = shape.count() - 1, padded = shape.column(last) + shape.width(last);
    std::shared_ptr<void> packed = streamed_buffer(static_cast<size_t>(padded * k) * sizeof(Element));
    auto* to = static_cast<Element*>(packed.get());
    for (int64_t i = 0; i < shape.count(); ++i) {
      const int64_t first = shape.column(i), width = shape.width(i);
      for (int64_t q = 0; q < k; ++q) {
        for (int64_t j = first; j < shape.column(i + 1); ++j) {
          const int64_t at = std::is_same_v<Element, BFloat16> ? paired_index(j - first, width) : j - first;
          to[first * k + q * width + at] = Element(w[q * row_stride + j * column_stride]);
        }
      }
    }
    return std::shared_ptr<const void>(std::move(packed));
  });
  return {static_cast<const Element*>(kept.get()), k, n, full};
}

template Panels<float> packed_panels(const KernelContext&, const float*, int64_t, int64_t, int64_t, int64_t);
template Panels<BFloat16> packed_panels(const KernelContext&, const float*, int64_t, int64_t, int64_t, int64_t);

}  // namespace opgraph::kernels
