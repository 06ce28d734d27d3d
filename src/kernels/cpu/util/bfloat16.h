// bfloat16 as the CPU kernels hold it: the upper half of a float32, widened
// exactly and narrowed to nearest, ties to even, as PyTorch's c10::BFloat16
// and oneDNN round. Kernels compute in float and round once, on the store.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "opgraph/core/dtype.h"

namespace opgraph::kernels {

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  // Explicit, so that mixing BFloat16 with float or double in an expression
  // widens the BFloat16 instead of being ambiguous.
  explicit BFloat16(float value) : bits(round_to_upper_half(value)) {}
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

 private:
  static uint16_t round_to_upper_half(float value) {
    const uint32_t word = std::bit_cast<uint32_t>(value);
    if (std::isnan(value)) return static_cast<uint16_t>((word >> 16) | 0x40);  // stays a NaN (quiet)
    const uint32_t tie_to_even = 0x7fff + ((word >> 16) & 1);
    return static_cast<uint16_t>((word + tie_to_even) >> 16);
  }
};

}  // namespace opgraph::kernels

namespace opgraph {
template <>
struct DTypeOf<kernels::BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
}  // namespace opgraph
