#include "kernels/cpu/engines/weight_panels.h"

#include <array>
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

}  // namespace

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
