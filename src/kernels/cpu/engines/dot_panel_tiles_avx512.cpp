// add_dot_panel_rows' tiles (dot_panel_tiles_kernel.h) on AVX512-VNNI:
// vpdpbusd sums the products of a vector's 64 unsigned weight bytes and a
// row's four signed levels, broadcast, into 16 columns' 32-bit sums.
#include "kernels/cpu/engines/dot_panel_tiles.h"

// GCC 12's AVX-512 shifts and reductions start from _mm512_undefined_*(),
// whose self-initialization it then reports as uninitialized once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/cpu/engines/float_vectors.h"
#include "kernels/cpu/engines/panel_tiles.h"

#define OPGRAPH_DOT_TARGET [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]]

namespace opgraph::kernels::avx512_vnni {
namespace {

struct Vec : Avx512Floats {
  using Ints = __m512i;
  // The panels store int8 levels plus 128, unsigned as vpdpbusd takes them,
  // and int4 levels plus 8.
  template <typename Element>
  static constexpr int32_t kLevelOffset = std::is_same_v<Element, DotInt8> ? 128 : 8;
  template <int Rows>
  static constexpr int kTileVectors = Rows == 1   ? 8
                                      : Rows == 2 ? 4
                                                  : 2;

  using Avx512Floats::broadcast;
  OPGRAPH_DOT_TARGET static Ints broadcast(int32_t x) { return _mm512_set1_epi32(x); }
  OPGRAPH_DOT_TARGET static Floats to_floats(Ints v) { return _mm512_cvtepi32_ps(v); }

  struct Nibbles {
    Ints low, high;  // rows q..q+3 of w's eight, and rows q+4..q+7
  };
  OPGRAPH_DOT_TARGET static Ints weights(const uint8_t* at, DotInt8) { return _mm512_loadu_si512(at); }
  OPGRAPH_DOT_TARGET static Nibbles weights(const uint8_t* at, DotInt4) {
    const __m512i bytes = _mm512_loadu_si512(at), low_nibbles = _mm512_set1_epi8(15);
    return {_mm512_and_si512(bytes, low_nibbles), _mm512_and_si512(_mm512_srli_epi16(bytes, 4), low_nibbles)};
  }
  OPGRAPH_DOT_TARGET static Ints dot(Ints acc, Ints w, Ints levels) { return _mm512_dpbusd_epi32(acc, w, levels); }
  OPGRAPH_DOT_TARGET static Ints dot(Ints acc, Nibbles w, Ints low, Ints high) {
    return _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc, w.low, low), w.high, high);
  }

  // A block of kDotBlock values as levels, their scale and their sum. A NaN
  // makes the scale NaN (and an infinity, infinite), so that the block's
  // products are not finite, as float32's would not be.
  OPGRAPH_DOT_TARGET static void quantize_block(const float* values, int8_t* levels, float& scale, int32_t& sum) {
    const __m512 first = _mm512_loadu_ps(values), second = _mm512_loadu_ps(values + kLanes);
    const float largest = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(first), _mm512_abs_ps(second)));
    const bool nan =
        (_mm512_cmp_ps_mask(first, first, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(second, second, _CMP_UNORD_Q));
    scale = nan ? std::numeric_limits<float>::quiet_NaN() : largest / 127;
    const __m512 inverse = _mm512_set1_ps(largest > 0 ? 127 / largest : 0.0f);
    // Rounded to nearest, ties to even (the default rounding mode).
    const __m512i low = _mm512_cvtps_epi32(_mm512_mul_ps(first, inverse));
    const __m512i high = _mm512_cvtps_epi32(_mm512_mul_ps(second, inverse));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(levels), _mm512_cvtsepi32_epi8(low));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(levels + kLanes), _mm512_cvtsepi32_epi8(high));
    sum = _mm512_reduce_add_epi32(_mm512_add_epi32(low, high));
  }
};

}  // namespace

#include "kernels/cpu/engines/dot_panel_tiles_kernel.h"

}  // namespace opgraph::kernels::avx512_vnni

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
