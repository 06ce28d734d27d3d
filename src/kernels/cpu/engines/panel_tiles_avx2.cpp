// add_panel_rows' tiles (panel_tiles_kernel.h) on AVX2 with FMA: 8 float32
// columns to a vector, 6 x 2 vectors of sums in its 16 registers.
#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/engines/float_vectors.h"
#include "kernels/cpu/engines/panel_tiles.h"

#define OPGRAPH_PANEL_TARGET OPGRAPH_AVX2_TARGET

namespace opgraph::kernels::avx2 {
namespace {

struct Vec : Avx2Floats {
  static constexpr int kTileRows = 6, kTileVectors = 2, kRowVectors = 4;

  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const float* row, int v) {
    return _mm256_loadu_ps(row + kLanes * v);
  }

  // Where the v-th vector of 8 columns lies in a row that pairs each group
  // of pair_group(Width) columns in half as many elements (bfloat16 words,
  // int4 bytes): the element it starts at, and whether it is the elements'
  // high halves (the group's second half of columns) or their low.
  struct Half {
    int64_t element;
    bool high;
  };
  template <int Width>
  static constexpr Half half_of(int v) {
    constexpr int group_vectors = pair_group(Width) / kLanes, half_vectors = group_vectors / 2;
    const int in_group = v % group_vectors;
    return {pair_group(Width) / 2 * (v / group_vectors) + kLanes * (in_group % half_vectors), in_group >= half_vectors};
  }

  // bfloat16 rows (weight_panels.h): 8 words' low or high halves.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const BFloat16* row, int v) {
    const Half half = half_of<Width>(v);
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * half.element));
    return _mm256_castsi256_ps(half.high ? _mm256_and_si256(words, _mm256_set1_epi32(static_cast<int>(0xffff0000u)))
                                         : _mm256_slli_epi32(words, 16));
  }

  // int8 rows: 8 columns' bytes widened to float32.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const int8_t* row, int v) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + kLanes * v));
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
  }

  // int4 rows (weight_panels.h's Int4Pair): 8 bytes' low or high nibbles,
  // widened as stored, plus 8 (tile() takes the 8s off a block's sums).
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const Int4Pair* row, int v) {
    const Half half = half_of<Width>(v);
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + half.element));
    const __m256i widened = _mm256_cvtepu8_epi32(bytes);
    const __m256i nibbles =
        half.high ? _mm256_srli_epi32(widened, 4) : _mm256_and_si256(widened, _mm256_set1_epi32(15));
    return _mm256_cvtepi32_ps(nibbles);
  }
};

}  // namespace

#include "kernels/cpu/engines/panel_tiles_kernel.h"

}  // namespace opgraph::kernels::avx2
