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

// Where the scales of quantized panels of `bytes` start: at a cache line.
int64_t scales_offset(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// The scale of a group of weights and the integer level of each: int8
// symmetric in [-127, 127]; int4 as llama.cpp's Q4_0 scales a block, the
// weight of largest magnitude at -8 and the others in [-8, 7]. Rounded to
// nearest even, as torch.round rounds.
struct Levels {
  float scale, inverse, lowest, highest;

  static Levels of(int bits, float largest, float signed_largest) {
    if (bits == 8) return {largest / 127, largest > 0 ? 127 / largest : 0, -127, 127};
    const float scale = signed_largest / -8;
    return {scale, scale != 0 ? 1 / scale : 0, -8, 7};
  }
  int level(float value) const {
    return static_cast<int>(std::clamp(std::nearbyint(value * inverse), lowest, highest));
  }
};

// Stores level `level` of column c (of a panel `width` wide) in row `row` of
// the panel's elements.
void store(int8_t* row, int64_t c, int64_t, int level) { row[c] = static_cast<int8_t>(level); }
void store(Int4Pair* row, int64_t c, int64_t width, int level) {
  const int64_t group = pair_group(width), half = group / 2, within = c % group;
  uint8_t& byte = row[c / group * half + within % half].bits;
  byte = static_cast<uint8_t>(byte | (level + 8) << (within < half ? 0 : 4));
}

// Quantized panels and their scales, the scales after the panels.
template <typename Element>
std::shared_ptr<const void> quantized_panels(const Panels<Element>& shape, int bits, const float* w, int64_t row_stride,
                                             int64_t column_stride) {
  constexpr int64_t per = kColumnsPerElement<Element>;
  const int64_t k = shape.k, last = shape.count() - 1, padded = shape.column(last) + shape.width(last);
  const int64_t groups = k / shape.group, panel_bytes = scales_offset(padded * k / per);
  std::shared_ptr<void> packed =
      streamed_buffer(static_cast<size_t>(panel_bytes) + static_cast<size_t>(groups * padded) * sizeof(float));
  auto* to = static_cast<Element*>(packed.get());
  auto* scales = reinterpret_cast<float*>(static_cast<char*>(packed.get()) + panel_bytes);
  for (int64_t j = 0; j < shape.n; ++j) {
    const int64_t i = shape.first_from(j + 1) - 1, first = shape.column(i), width = shape.width(i);
    for (int64_t g = 0; g < groups; ++g) {
      float largest = 0, signed_largest = 0;
      for (int64_t q = g * shape.group; q < (g + 1) * shape.group; ++q) {
        const float value = w[q * row_stride + j * column_stride];
        if (std::abs(value) > largest) largest = std::abs(value), signed_largest = value;
      }
      const Levels levels = Levels::of(bits, largest, signed_largest);
      scales[g * padded + j] = levels.scale;
      for (int64_t q = g * shape.group; q < (g + 1) * shape.group; ++q) {
        store(to + (first * k + q * width) / per, j - first, width,
              levels.level(w[q * row_stride + j * column_stride]));
      }
    }
  }
  return std::shared_ptr<const void>(std::move(packed));
}

template <typename Element>
Panels<Element> quantized(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                          int64_t column_stride) {
  const WeightQuantization quantization = weight_quantization(context);
  const int64_t group = quantization.group_size == 0 ? k : quantization.group_size;
  OPGRAPH_CHECK(k % group == 0, "weights int", quantization.bits, ": the group size ", group,
                " does not divide the input dimension ", k, " of a weight with ", n, " outputs");
  Panels<Element> panels{nullptr, k, n, n / kPanel};
  const int64_t last = panels.count() - 1, padded = panels.column(last) + panels.width(last);
  panels.group = group;
  panels.scale_stride = padded;
  // The key's length (7) sets it apart from the other kinds of packed weight.
  const PreparedWeights::Key key{
      -k, -n, row_stride, column_stride, quantization.bits, group, reinterpret_cast<intptr_t>(w)};
  const std::span<const std::byte> source =
      spanned_bytes(w, std::array{k, n}, std::array{row_stride, column_stride}, sizeof(float));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(
      key, source, [&] { return quantized_panels(panels, quantization.bits, w, row_stride, column_stride); });
  panels.data = static_cast<const Element*>(kept.get());
  panels.scales = reinterpret_cast<const float*>(static_cast<const char*>(kept.get()) +
                                                 scales_offset(padded * k / kColumnsPerElement<Element>));
  return panels;
}

}  // namespace

template <>
Panels<int8_t> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                             int64_t column_stride) {
  return quantized<int8_t>(context, w, k, n, row_stride, column_stride);
}

template <>
Panels<Int4Pair> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                               int64_t column_stride) {
  return quantized<Int4Pair>(context, w, k, n, row_stride, column_stride);
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
