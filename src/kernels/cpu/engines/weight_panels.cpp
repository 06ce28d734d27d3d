#include "kernels/cpu/engines/weight_panels.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "core/weight_levels.h"
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

// Stores level `level` of row q and column c of a panel `width` columns wide.
void store(int8_t* panel, int64_t q, int64_t c, int64_t width, int level) {
  panel[q * width + c] = static_cast<int8_t>(level);
}
void store(Int4Pair* panel, int64_t q, int64_t c, int64_t width, int level) {
  const int64_t group = pair_group(width), half = group / 2, within = c % group;
  uint8_t& byte = panel[(q * width + c / group * group) / 2 + within % half].bits;
  byte = static_cast<uint8_t>(byte | (level + 8) << (within < half ? 0 : 4));
}
void store(DotInt8* panel, int64_t q, int64_t c, int64_t width, int level) {
  panel[(q / 4 * width + c) * 4 + q % 4].bits = static_cast<uint8_t>(level + 128);
}
void store(DotInt4* panel, int64_t q, int64_t c, int64_t width, int level) {
  uint8_t& byte = panel[(q / 8 * width + c) * 4 + q % 4].bits;
  byte = static_cast<uint8_t>(byte | (level + 8) << (q % 8 < 4 ? 0 : 4));
}

// What sets a kind of quantized panels apart in the prepared weights' keys.
template <typename Element>
constexpr int64_t kPanelKind = kIsDotElement<Element> ? 1 : 0;

// The bytes of quantized panels of `shape`, their scales after them, then
// their offsets where the weight has zero points.
template <typename Element>
struct QuantizedLayout {
  int64_t padded, groups, panel_bytes;
  bool offsets;

  QuantizedLayout(const Panels<Element>& shape, bool zero_points)
      : padded(shape.column(shape.count() - 1) + shape.width(shape.count() - 1)),
        groups(shape.k / shape.group),
        panel_bytes(scales_offset(padded * shape.k / kColumnsPerElement<Element>)),
        offsets(zero_points) {}
  size_t scale_count() const { return static_cast<size_t>(groups * padded); }
  size_t bytes() const { return static_cast<size_t>(panel_bytes) + (offsets ? 2 : 1) * scale_count() * sizeof(float); }
};

// A group's scale and zero point.
struct GroupScale {
  float scale;
  int zero_point;
};

// Quantized panels of `shape`, their scales and, where `zero_points`, their
// offsets: group_levels(j, g, levels) returns the GroupScale of column j's
// rows [g * group, (g + 1) * group) and writes their levels.
template <typename Element, typename GroupLevels>
std::shared_ptr<const void> quantized_panels(const Panels<Element>& shape, bool zero_points,
                                             GroupLevels&& group_levels) {
  constexpr int64_t per = kColumnsPerElement<Element>;
  const QuantizedLayout<Element> layout(shape, zero_points);
  std::shared_ptr<void> packed = streamed_buffer(layout.bytes());
  auto* to = static_cast<Element*>(packed.get());
  auto* scales = reinterpret_cast<float*>(static_cast<char*>(packed.get()) + layout.panel_bytes);
  float* offsets = zero_points ? scales + layout.scale_count() : nullptr;
  std::vector<int> levels(static_cast<size_t>(shape.group));
  for (int64_t j = 0; j < shape.n; ++j) {
    const int64_t i = shape.first_from(j + 1) - 1, first = shape.column(i), width = shape.width(i);
    for (int64_t g = 0; g < layout.groups; ++g) {
      const int64_t at = first * layout.groups + g * width + j - first;
      const GroupScale of = group_levels(j, g, levels.data());
      scales[at] = of.scale;
      if (offsets) offsets[at] = -static_cast<float>(of.zero_point) * of.scale;
      for (int64_t q = 0; q < shape.group; ++q) {
        store(to + first * shape.k / per, g * shape.group + q, j - first, width, levels[q]);
      }
    }
  }
  return std::shared_ptr<const void>(std::move(packed));
}

// Panels of k x n with `group` rows to a scale, their data, scales and
// (where `zero_points`) offsets in `kept` (made by quantized_panels).
template <typename Element>
Panels<Element> quantized_view(int64_t k, int64_t n, int64_t group, bool zero_points,
                               const std::shared_ptr<const void>& kept) {
  Panels<Element> panels{nullptr, k, n, n / kPanel};
  panels.group = group;
  const QuantizedLayout<Element> layout(panels, zero_points);
  panels.data = static_cast<const Element*>(kept.get());
  panels.scales = reinterpret_cast<const float*>(static_cast<const char*>(kept.get()) + layout.panel_bytes);
  if (zero_points) panels.offsets = panels.scales + layout.scale_count();
  return panels;
}

template <typename Element>
Panels<Element> quantized(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                          int64_t column_stride) {
  const WeightQuantization quantization = weight_quantization(context);
  const int64_t group = quantization.group_size == 0 ? k : quantization.group_size;
  OPGRAPH_CHECK(k % group == 0, "weights int", quantization.bits, ": the group size ", group,
                " does not divide the input dimension ", k, " of a weight with ", n, " outputs");
  Panels<Element> shape{nullptr, k, n, n / kPanel};
  shape.group = group;
  const bool zero_points = !quantization.symmetric;
  // The key's length (7) sets it apart from the other kinds of packed weight.
  const PreparedWeights::Key key{-k,
                                 -n,
                                 row_stride,
                                 column_stride,
                                 quantization.bits + 100 * kPanelKind<Element> + 1000 * zero_points,
                                 group,
                                 reinterpret_cast<intptr_t>(w)};
  const std::span<const std::byte> source =
      spanned_bytes(w, std::array{k, n}, std::array{row_stride, column_stride}, sizeof(float));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, source, [&] {
    return quantized_panels(shape, zero_points, [&](int64_t j, int64_t g, int* levels) {
      const float* column = w + j * column_stride + g * group * row_stride;
      const WeightLevels of =
          WeightLevels::of_group(quantization.bits, quantization.symmetric, column, group, row_stride);
      for (int64_t q = 0; q < group; ++q) levels[q] = of.level(column[q * row_stride]);
      return GroupScale{of.scale, of.zero_point};
    });
  });
  return quantized_view<Element>(k, n, group, zero_points, kept);
}

// Level q of row j of w's levels.
int stored_level(const QuantizedRows& w, int64_t j, int64_t q) {
  if (w.bits == 8) return static_cast<const int8_t*>(w.levels)[j * w.k + q];
  return int4_level(static_cast<const uint8_t*>(w.levels) + j * w.k / 2, q);
}

}  // namespace

template <typename Element>
Panels<Element> packed_panels(const KernelContext& context, const QuantizedRows& w, std::shared_ptr<const void>& kept) {
  static_assert(std::is_same_v<Element, int8_t> || std::is_same_v<Element, Int4Pair> || kIsDotElement<Element>);
  Panels<Element> shape{nullptr, w.k, w.n, w.n / kPanel};
  shape.group = w.group;
  const int64_t groups = w.k / w.group;
  const bool zero_points = w.zero_points != nullptr;
  const auto make = [&] {
    return quantized_panels(shape, zero_points, [&](int64_t j, int64_t g, int* levels) {
      for (int64_t q = 0; q < w.group; ++q) levels[q] = stored_level(w, j, g * w.group + q);
      return GroupScale{w.scales[j * groups + g], zero_points ? w.zero_points[j * groups + g] : 0};
    });
  };
  PreparedWeights* prepared = prepared_weights(context);
  if (prepared == nullptr) {
    kept = make();
  } else {
    // The key's length (8) sets it apart from the other kinds of packed weight.
    const PreparedWeights::Key key{-w.k,
                                   -w.n,
                                   w.bits,
                                   w.group,
                                   kPanelKind<Element>,
                                   reinterpret_cast<intptr_t>(w.zero_points),
                                   0,
                                   reinterpret_cast<intptr_t>(w.levels)};
    const auto* levels = static_cast<const std::byte*>(w.levels);
    kept = prepared->derived(key, std::span(levels, static_cast<size_t>(w.n * w.k * w.bits / 8)), make);
  }
  return quantized_view<Element>(w.k, w.n, w.group, zero_points, kept);
}

template Panels<int8_t> packed_panels(const KernelContext&, const QuantizedRows&, std::shared_ptr<const void>&);
template Panels<Int4Pair> packed_panels(const KernelContext&, const QuantizedRows&, std::shared_ptr<const void>&);
template Panels<DotInt8> packed_panels(const KernelContext&, const QuantizedRows&, std::shared_ptr<const void>&);
template Panels<DotInt4> packed_panels(const KernelContext&, const QuantizedRows&, std::shared_ptr<const void>&);

#define OPGRAPH_QUANTIZED_PANELS(Element)                                                           \
  template <>                                                                                       \
  Panels<Element> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, \
                                int64_t row_stride, int64_t column_stride) {                        \
    return quantized<Element>(context, w, k, n, row_stride, column_stride);                         \
  }
OPGRAPH_QUANTIZED_PANELS(int8_t)
OPGRAPH_QUANTIZED_PANELS(Int4Pair)
OPGRAPH_QUANTIZED_PANELS(DotInt8)
OPGRAPH_QUANTIZED_PANELS(DotInt4)
#undef OPGRAPH_QUANTIZED_PANELS

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
