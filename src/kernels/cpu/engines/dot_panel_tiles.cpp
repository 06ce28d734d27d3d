// A register-tiled product of int8 activations on DotInt8 and DotInt4
// panels, written with AVX-512 intrinsics: vpdpbusd sums the products of a
// vector's 64 unsigned weight bytes and a row's four signed levels,
// broadcast, into 16 columns' 32-bit sums.
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

#include "kernels/cpu/engines/panel_tiles.h"
#include "opgraph/core/cpu_capability.h"

#define OPGRAPH_AVX512_VNNI [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma")]]

namespace opgraph::kernels {
namespace {

constexpr int kLanes = 16;  // 32-bit sums to a vector

// Rows of w whose blocks the tiles of a panel run through before the next
// chunk: 256 rows of a 128-column int8 panel are 32 KiB, which stay in L1
// for the panel's other tiles of rows.
constexpr int64_t kChunkRows = 256;

// The most rows of activations a tile takes.
constexpr int kTileRows = 4;

// How far ahead of its loads a tile asks for the weight's cache lines
// where the weight streams from memory.
constexpr int64_t kPrefetchBytes = 32768;

// What each stored level holds on top of the level.
template <typename Element>
constexpr int32_t kLevelOffset = std::is_same_v<Element, DotInt8> ? 128 : 8;

// Four levels of a row as one 32-bit word, broadcast to every lane.
OPGRAPH_AVX512_VNNI inline __m512i four_levels(const int8_t* levels) {
  int32_t word;
  std::memcpy(&word, levels, sizeof(word));
  return _mm512_set1_epi32(word);
}

// sums[r * Width + c] += the sums of w's rows [q, q + k) (from the panel's
// `rows`, at row q) times rows [r0, r0 + Rows) of a, for the Vectors vectors
// of columns from the v0-th. k is a multiple of kDotBlock; each block's
// integer sums start from minus the offset times the activation block's
// levels' sum, then are added times its scales: the activation's, and
// `panel_scales`' for the block's group (the panel's, Width to a group).
template <int Rows, int Vectors, int Width, bool Prefetch, typename Element>
OPGRAPH_AVX512_VNNI void dot_tile(const QuantizedActivations& a, int64_t r0, const Panels<Element>& panels,
                                  const uint8_t* rows, int64_t q, int64_t k, int v0, const float* panel_scales,
                                  float* sums) {
  constexpr int64_t row_bytes = Width / kColumnsPerElement<Element>;  // bytes of one row of w
  const int64_t blocks = a.k / kDotBlock;
  __m512 total[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) total[r][v] = _mm512_setzero_ps();
  }
  const __m512i low_nibbles = _mm512_set1_epi8(15);
  for (int64_t b = 0; b < k; b += kDotBlock) {
    const int64_t at = q + b, block = at / kDotBlock;
    const uint8_t* bytes = rows + b * row_bytes;
    __m512i acc[Rows][Vectors];
    for (int r = 0; r < Rows; ++r) {
      const __m512i start = _mm512_set1_epi32(-kLevelOffset<Element> * a.sums[(r0 + r) * blocks + block]);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = start;
    }
    // Four rows of w at a time (DotInt8), or eight in a byte's two nibbles (DotInt4).
    constexpr int64_t step = std::is_same_v<Element, DotInt8> ? 4 : 8;
    for (int64_t s = 0; s < kDotBlock; s += step) {
      const uint8_t* line = bytes + s * row_bytes + 4 * kLanes * v0;
      __m512i w[Vectors];
      for (int v = 0; v < Vectors; ++v) {
        if constexpr (Prefetch)
          _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes + 64 * v, _MM_HINT_T1);
        w[v] = _mm512_loadu_si512(line + 4 * kLanes * v);
      }
      for (int r = 0; r < Rows; ++r) {
        const int8_t* x = a.levels.data() + (r0 + r) * a.k + at + s;
        if constexpr (std::is_same_v<Element, DotInt8>) {
          const __m512i xs = four_levels(x);
          for (int v = 0; v < Vectors; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], w[v], xs);
        } else {
          const __m512i low = four_levels(x), high = four_levels(x + 4);
          for (int v = 0; v < Vectors; ++v) {
            acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], _mm512_and_si512(w[v], low_nibbles), low);
            acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], _mm512_and_si512(_mm512_srli_epi16(w[v], 4), low_nibbles), high);
          }
        }
      }
    }
    const float* scales = panel_scales + at / panels.group * Width + kLanes * v0;
    for (int r = 0; r < Rows; ++r) {
      const __m512 scale = _mm512_set1_ps(a.scales[(r0 + r) * blocks + block]);
      for (int v = 0; v < Vectors; ++v) {
        const __m512 both = _mm512_mul_ps(_mm512_loadu_ps(scales + kLanes * v), scale);
        total[r][v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][v]), both, total[r][v]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      float* to = sums + r * Width + kLanes * (v0 + v);
      _mm512_storeu_ps(to, _mm512_add_ps(_mm512_loadu_ps(to), total[r][v]));
    }
  }
}

// The tiles of Rows rows over a chunk of a Width-column panel: one row takes
// the panel's row whole, more rows fewer vectors each, so that their 32-bit
// and float32 sums stay in registers.
template <int Rows, int Width, typename Element>
OPGRAPH_AVX512_VNNI void dot_tiles(const QuantizedActivations& a, int64_t r0, const Panels<Element>& panels,
                                   const uint8_t* rows, int64_t q, int64_t k, bool prefetch, const float* scales,
                                   float* sums) {
  constexpr int vectors = Width / kLanes, step = std::min(vectors, Rows == 1 ? 8 : Rows == 2 ? 4 : 2);
  for (int v0 = 0; v0 < vectors; v0 += step) {
    if (prefetch && r0 == 0) {
      dot_tile<Rows, step, Width, true>(a, r0, panels, rows, q, k, v0, scales, sums);
    } else {
      dot_tile<Rows, step, Width, false>(a, r0, panels, rows, q, k, v0, scales, sums);
    }
  }
}

// The sums of `count` rows of a for panel i's rows [q0, q1) of w.
template <int Width, typename Element>
OPGRAPH_AVX512_VNNI void dot_panel_rows(const QuantizedActivations& a, int64_t count, const Panels<Element>& panels,
                                        int64_t i, int64_t q0, int64_t q1, bool prefetch, float* sums) {
  constexpr int64_t row_bytes = Width / kColumnsPerElement<Element>;
  const auto* panel = reinterpret_cast<const uint8_t*>(panels.panel(i));
  const float* scales = panels.panel_scales(i, 0);
  for (int64_t q = q0; q < q1; q += kChunkRows) {
    const int64_t k = std::min(kChunkRows, q1 - q);
    const uint8_t* rows = panel + q * row_bytes;
    for (int64_t r = 0; r < count; r += kTileRows) {
      float* s = sums + r * Width;
      switch (std::min<int64_t>(kTileRows, count - r)) {
        case 1: dot_tiles<1, Width>(a, r, panels, rows, q, k, prefetch, scales, s); break;
        case 2: dot_tiles<2, Width>(a, r, panels, rows, q, k, prefetch, scales, s); break;
        case 3: dot_tiles<3, Width>(a, r, panels, rows, q, k, prefetch, scales, s); break;
        default: dot_tiles<4, Width>(a, r, panels, rows, q, k, prefetch, scales, s); break;
      }
    }
  }
}

// Row `row`'s block of kDotBlock values as levels, their scale and their
// sum. A NaN makes the scale NaN (and an infinity, infinite), so that the
// block's products are not finite, as float32's would not be.
OPGRAPH_AVX512_VNNI void quantize_block(const float* values, int8_t* levels, float& scale, int32_t& sum) {
  const __m512 first = _mm512_loadu_ps(values), second = _mm512_loadu_ps(values + kLanes);
  const float largest = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(first), _mm512_abs_ps(second)));
  const bool nan = (_mm512_cmp_ps_mask(first, first, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(second, second, _CMP_UNORD_Q));
  scale = nan ? std::numeric_limits<float>::quiet_NaN() : largest / 127;
  const __m512 inverse = _mm512_set1_ps(largest > 0 ? 127 / largest : 0.0f);
  // Rounded to nearest, ties to even (the default rounding mode).
  const __m512i low = _mm512_cvtps_epi32(_mm512_mul_ps(first, inverse));
  const __m512i high = _mm512_cvtps_epi32(_mm512_mul_ps(second, inverse));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(levels), _mm512_cvtsepi32_epi8(low));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(levels + kLanes), _mm512_cvtsepi32_epi8(high));
  sum = _mm512_reduce_add_epi32(_mm512_add_epi32(low, high));
}

}  // namespace

bool runs_dot_panel_rows() { return cpu_has_vnni(); }

QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k) {
  const int64_t blocks = k / kDotBlock;
  QuantizedActivations q{std::vector<int8_t>(static_cast<size_t>(rows * k)),
                         std::vector<float>(static_cast<size_t>(rows * blocks)),
                         std::vector<int32_t>(static_cast<size_t>(rows * blocks)), k};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      quantize_block(a + r * a_stride + b * kDotBlock, q.levels.data() + r * k + b * kDotBlock,
                     q.scales[r * blocks + b], q.sums[r * blocks + b]);
    }
  }
  return q;
}

template <typename Element>
OPGRAPH_AVX512_VNNI void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows,
                                            int64_t first, int64_t last, int64_t q0, int64_t q1, bool backward,
                                            bool prefetch, float* y, int64_t y_stride) {
  add_sums_by_panel(panels, rows, first, last, backward, y, y_stride, [&](int64_t i, float* sums) {
    if (i < panels.full) {
      dot_panel_rows<kPanel>(a, rows, panels, i, q0, q1, prefetch, sums);
    } else {
      dot_panel_rows<kStrip>(a, rows, panels, i, q0, q1, prefetch, sums);
    }
  });
}

template void add_dot_panel_rows(const Panels<DotInt8>&, const QuantizedActivations&, int64_t, int64_t, int64_t,
                                 int64_t, int64_t, bool, bool, float*, int64_t);
template void add_dot_panel_rows(const Panels<DotInt4>&, const QuantizedActivations&, int64_t, int64_t, int64_t,
                                 int64_t, int64_t, bool, bool, float*, int64_t);

}  // namespace opgraph::kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
