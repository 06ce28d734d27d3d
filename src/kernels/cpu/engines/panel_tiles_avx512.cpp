// add_panel_rows' tiles (panel_tiles_kernel.h) on AVX-512: 16 float32
// columns to a vector, 6 x 4 vectors of sums in its 32 registers. A batch of
// four sequences decoded at two thirds of the speed of oneDNN on its own copy
// of the weight.
#include "kernels/cpu/engines/panel_tiles.h"

// GCC 12's AVX-512 shifts start from _mm512_undefined_epi32(), whose
// self-initialization it then reports as maybe uninitialized once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <type_traits>

#include "kernels/cpu/engines/float_vectors.h"

#define OPGRAPH_PANEL_TARGET OPGRAPH_AVX512_TARGET

namespace opgraph::kernels::avx512 {
namespace {

struct Vec : Avx512Floats {
  static constexpr int kTileRows = 6, kTileVectors = 4, kRowVectors = 8;

  // The v-th vector of 16 columns of a panel row Width columns wide.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const float* row, int v) {
    return _mm512_loadu_ps(row + kLanes * v);
  }

  // bfloat16 rows hold words of two columns (weight_panels.h): in a group of
  // 32 columns, the word's low halves are the group's first 16 columns and
  // its high halves the next 16; a 16-column strip is 8 words, halves
  // likewise.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const BFloat16* row, int v) {
    const __m512i high_half = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    if constexpr (Width >= 2 * kLanes) {
      const __m512i words = _mm512_loadu_si512(row + 2 * kLanes * (v / 2));
      return _mm512_castsi512_ps(v % 2 == 0 ? _mm512_slli_epi32(words, 16) : _mm512_and_si512(words, high_half));
    } else {
      const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
      const __m512i twice = _mm512_inserti64x4(_mm512_castsi256_si512(words), words, 1);
      return _mm512_castsi512_ps(
          _mm512_mask_blend_epi32(0xff00, _mm512_slli_epi32(twice, 16), _mm512_and_si512(twice, high_half)));
    }
  }

  // int8 rows: 16 columns' bytes widened to float32.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const int8_t* row, int v) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kLanes * v));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
  }

  // int4 rows (weight_panels.h's Int4Pair): a group of 32 columns' 16 bytes,
  // the low nibbles its first 16 columns and the high its next; a 16-column
  // strip's 8 bytes likewise. Widened as stored, plus 8: tile() takes the 8s
  // off a block's sums at once.
  template <int Width>
  OPGRAPH_PANEL_TARGET static Floats columns(const Int4Pair* row, int v) {
    const __m512i low_nibble = _mm512_set1_epi32(15);
    __m512i nibbles;
    if constexpr (Width >= 2 * kLanes) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kLanes * (v / 2)));
      const __m512i widened = _mm512_cvtepu8_epi32(bytes);
      nibbles = v % 2 == 0 ? _mm512_and_si512(widened, low_nibble) : _mm512_srli_epi32(widened, 4);
    } else {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row));
      const __m512i widened = _mm512_cvtepu8_epi32(_mm_unpacklo_epi64(bytes, bytes));
      nibbles = _mm512_mask_blend_epi32(0xff00, _mm512_and_si512(widened, low_nibble), _mm512_srli_epi32(widened, 4));
    }
    return _mm512_cvtepi32_ps(nibbles);
  }
};

}  // namespace

#include "kernels/cpu/engines/panel_tiles_kernel.h"

}  // namespace opgraph::kernels::avx512

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
