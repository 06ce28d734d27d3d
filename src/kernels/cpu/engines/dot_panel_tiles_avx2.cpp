// add_dot_panel_rows' tiles (dot_panel_tiles_kernel.h) on AVX2, for CPUs
// without AVX512-VNNI: vpmaddubsw multiplies a vector's 32 unsigned weight
// bytes by a row's signed levels into pairs of 16-bit sums, and vpmaddwd
// adds the pairs into 8 columns' 32-bit sums, as llama.cpp's AVX2 dot
// products of Q4_0 and Q8_0 by Q8_0 do.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/engines/dot_panel_tiles.h"
#include "kernels/cpu/engines/float_vectors.h"
#include "kernels/cpu/engines/panel_tiles.h"

#define OPGRAPH_DOT_TARGET OPGRAPH_AVX2_TARGET

namespace opgraph::kernels::avx2 {
namespace {

struct Vec : Avx2Floats {
  using Ints = __m256i;
  // vpmaddubsw saturates its 16-bit pairs: an int8 level plus 128 (up to
  // 255) times a level of 127, twice, would pass 32767. `dot` therefore
  // multiplies the levels themselves (the stored byte less 128), by their
  // magnitudes and the activations' signs; int4's nibbles (up to 15) keep
  // their 8.
  template <typename Element>
  static constexpr int32_t kLevelOffset = std::is_same_v<Element, DotInt8> ? 0 : 8;
  // 16 registers: a row's four vectors of 32-bit sums with their weights'
  // two vectors each, or more rows on fewer vectors.
  template <int Rows>
  static constexpr int kTileVectors = Rows == 1   ? 4
                                      : Rows == 2 ? 2
                                                  : 1;

  using Avx2Floats::broadcast;
  OPGRAPH_DOT_TARGET static Ints broadcast(int32_t x) { return _mm256_set1_epi32(x); }
  OPGRAPH_DOT_TARGET static Floats to_floats(Ints v) { return _mm256_cvtepi32_ps(v); }

  struct Levels {
    Ints magnitudes, signed_levels;
  };
  struct Nibbles {
    Ints low, high;  // rows q..q+3 of w's eight, and rows q+4..q+7
  };
  OPGRAPH_DOT_TARGET static Levels weights(const uint8_t* at, DotInt8) {
    const __m256i levels =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)), _mm256_set1_epi8(-128));
    return {_mm256_abs_epi8(levels), levels};
  }
  OPGRAPH_DOT_TARGET static Nibbles weights(const uint8_t* at, DotInt4) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)), low_nibbles = _mm256_set1_epi8(15);
    return {_mm256_and_si256(bytes, low_nibbles), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low_nibbles)};
  }
  // Each lane's 16-bit pairs summed into it.
  OPGRAPH_DOT_TARGET static Ints add_pairs(Ints acc, Ints pairs) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  // |w| * (x with w's sign) = w * x, each pair at most 2 * 128 * 127.
  OPGRAPH_DOT_TARGET static Ints dot(Ints acc, Levels w, Ints levels) {
    return add_pairs(acc, _mm256_maddubs_epi16(w.magnitudes, _mm256_sign_epi8(levels, w.signed_levels)));
  }
  // Each pair at most 2 * 15 * 127, and the two nibbles' pairs' sum twice that.
  OPGRAPH_DOT_TARGET static Ints dot(Ints acc, Nibbles w, Ints low, Ints high) {
    return add_pairs(acc, _mm256_add_epi16(_mm256_maddubs_epi16(w.low, low), _mm256_maddubs_epi16(w.high, high)));
  }

  // A block of kDotBlock values as levels, their scale and their sum, as
  // avx512_vnni's quantize_block makes them: the same levels, so that the
  // two sets' products agree to the bit.
  OPGRAPH_DOT_TARGET static void quantize_block(const float* values, int8_t* levels, float& scale, int32_t& sum) {
    __m256 v[4];
    __m256 largest = _mm256_setzero_ps(), unordered = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(values + kLanes * i);
      largest = _mm256_max_ps(largest, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v[i]));
      unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v[i], v[i], _CMP_UNORD_Q));
    }
    __m128 most = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
    most = _mm_max_ps(most, _mm_movehl_ps(most, most));
    most = _mm_max_ss(most, _mm_movehdup_ps(most));
    const float top = _mm_cvtss_f32(most);
    scale = _mm256_movemask_ps(unordered) != 0 ? std::numeric_limits<float>::quiet_NaN() : top / 127;
    const __m256 inverse = _mm256_set1_ps(top > 0 ? 127 / top : 0.0f);
    __m256i rounded[4];
    for (int i = 0; i < 4; ++i) rounded[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], inverse));
    // Saturated to 16 bits, then 8, within each 128-bit lane; the permute
    // puts the 32-bit groups back in order.
    const __m256i bytes =
        _mm256_packs_epi16(_mm256_packs_epi32(rounded[0], rounded[1]), _mm256_packs_epi32(rounded[2], rounded[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(levels),
                        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const __m256i total =
        _mm256_add_epi32(_mm256_add_epi32(rounded[0], rounded[1]), _mm256_add_epi32(rounded[2], rounded[3]));
    __m128i half = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0x4e));
    half = _mm_add_epi32(half, _mm_shuffle_epi32(half, 0xb1));
    sum = _mm_cvtsi128_si32(half);
  }
};

}  // namespace

#include "kernels/cpu/engines/dot_panel_tiles_kernel.h"

}  // namespace opgraph::kernels::avx2
