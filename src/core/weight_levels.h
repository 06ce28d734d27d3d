// How a group of weights becomes integer levels, a scale and a zero point,
// w = scale * (q - zero_point): what a Session quantizing at load packs into
// its panels, and what `opgraph quantize` writes into a file, alike.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace opgraph {

// Symmetric (zero point 0): int8 in [-127, 127]; int4 as llama.cpp's Q4_0
// scales a block, the weight of largest magnitude at -8 and the others in
// [-8, 7]. Not symmetric: q in [-128, 127] or [-8, 7], spanning the group's
// smallest weight to its largest, zero included, as torchao's
// choose_qparams_affine (MappingType.ASYMMETRIC) spans them. Rounded to
// nearest even, as torch.round rounds.
struct WeightLevels {
  float scale, inverse, lowest, highest;
  int zero_point = 0;

  // For a group whose largest magnitude is `largest`, that of the weight
  // `signed_largest`.
  static WeightLevels of(int bits, float largest, float signed_largest) {
    if (bits == 8) return {largest / 127, largest > 0 ? 127 / largest : 0, -127, 127};
    const float scale = signed_largest / -8;
    return {scale, scale != 0 ? 1 / scale : 0, -8, 7};
  }
  // Not symmetric: for a group spanning [smallest, largest].
  static WeightLevels of_range(int bits, float smallest, float largest) {
    const float lowest = bits == 8 ? -128 : -8, highest = bits == 8 ? 127 : 7;
    const float low = std::min(smallest, 0.0f), scale = (std::max(largest, 0.0f) - low) / (highest - lowest);
    if (!(scale > 0)) return {0, 0, lowest, highest};
    const float zero_point = std::clamp(lowest - std::nearbyint(low / scale), lowest, highest);
    return {scale, 1 / scale, lowest, highest, static_cast<int>(zero_point)};
  }
  // For the `count` weights at `values`, `stride` elements apart.
  template <typename T>
  static WeightLevels of_group(int bits, bool symmetric, const T* values, long count, long stride) {
    float largest = 0, signed_largest = 0, smallest = 0, greatest = 0;
    for (long q = 0; q < count; ++q) {
      const float value = values[q * stride];
      if (std::abs(value) > largest) largest = std::abs(value), signed_largest = value;
      smallest = std::min(smallest, value), greatest = std::max(greatest, value);
    }
    return symmetric ? of(bits, largest, signed_largest) : of_range(bits, smallest, greatest);
  }
  int level(float value) const {
    return static_cast<int>(
        std::clamp(std::nearbyint(value * inverse) + static_cast<float>(zero_point), lowest, highest));
  }
};

// Two int4 levels (in [-8, 7]) in a byte, as opgraph::quantized_linear
// stores a row's inputs 2i and 2i + 1: the first in the low nibble, each
// plus 8.
inline uint8_t int4_pair(int first, int second) { return static_cast<uint8_t>((first + 8) | (second + 8) << 4); }

// Input q's level of a row that int4_pair packed.
inline int int4_level(const uint8_t* row, int64_t q) {
  const uint8_t byte = row[q / 2];
  return (q % 2 == 0 ? byte & 0xf : byte >> 4) - 8;
}

}  // namespace opgraph
