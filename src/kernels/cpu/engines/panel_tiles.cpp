// A register-tiled product on the weight's panels, written with AVX-512
// intrinsics: plain loops over tiles of a panel with several rows' sums,
// left to GCC to vectorize, decoded a batch of four sequences at two thirds
// of the speed of oneDNN on its own copy of the weight.
#include "kernels/cpu/engines/panel_tiles.h"

// GCC 12's AVX-512 shifts start from _mm512_undefined_epi32(), whose
// self-initialization it then reports as maybe uninitialized once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <type_traits>

#include "opgraph/core/cpu_capability.h"

#define OPGRAPH_AVX512 [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]]

namespace opgraph::kernels {
namespace {

constexpr int kLanes = 16;  // float32 columns to a vector

// Rows and vectors of columns whose sums one tile holds in registers: 6 x 4
// sums, 4 vectors of the weight, and the broadcast row element, in
// AVX-512's 32 registers.
constexpr int kTileRows = 6, kTileVectors = 4;

// The rows of a panel a tile runs through before the next tile reads them
// again: 32 rows of a float32 panel are 16 KiB, which stay in L1 for the
// panel's other tiles, while the sums go to memory and back once per block.
constexpr int64_t kBlockRows = 32;

// How far ahead of its loads a block's tiles ask for the weight's cache
// lines, and into L2: into L1, as the one-row product asks, 16 rows'
// products took 15% longer; 8 KiB ahead, 24% longer, and 128 KiB, 8%.
constexpr int64_t kPrefetchBytes = 32768, kLineBytes = 64;

// The v-th vector of 16 columns of a panel row Width columns wide.
template <int Width>
OPGRAPH_AVX512 inline __m512 columns(const float* row, int v) {
  return _mm512_loadu_ps(row + kLanes * v);
}

// bfloat16 rows hold words of two columns (weight_panels.h): in a group of 32
// columns, the word's low halves are the group's first 16 columns and its
// high halves the next 16; a 16-column strip is 8 words, halves likewise.
template <int Width>
OPGRAPH_AVX512 inline __m512 columns(const BFloat16* row, int v) {
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

// The cache lines of the weight a tile asks for while it runs: `lines`
// lines from `from`, spread evenly over its rows of the panel.
struct Prefetch {
  const char* from = nullptr;
  int64_t lines = 0;
};

// int8 rows: 16 columns' bytes widened to float32.
template <int Width>
OPGRAPH_AVX512 inline __m512 columns(const int8_t* row, int v) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + kLanes * v));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
}

// int4 rows (weight_panels.h's Int4Pair): a group of 32 columns' 16 bytes,
// the low nibbles its first 16 columns and the high its next; a 16-column
// strip's 8 bytes likewise. Widened as stored, plus 8: tile() takes the 8s
// off a block's sums at once.
template <int Width>
OPGRAPH_AVX512 inline __m512 columns(const Int4Pair* row, int v) {
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

// sums[r][c] += a[r * a_stride + q] * rows[q * Width + c] for q < k, over Rows
// rows and the Vectors vectors of columns from the v0-th. Quantized rows'
// sums start from zero and are added times their columns' scales
// (`scales`, the block's group's, from the panel's first column).
template <int Rows, int Vectors, int Width, typename Element>
OPGRAPH_AVX512 void tile(const float* a, int64_t a_stride, const Element* rows, int64_t k, int v0, Prefetch ahead,
                         const float* scales, float* sums) {
  constexpr bool scaled = std::is_same_v<Element, int8_t> || std::is_same_v<Element, Int4Pair>;
  constexpr int64_t row_elements = Width / kColumnsPerElement<Element>;
  __m512 acc[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      acc[r][v] = scaled ? _mm512_setzero_ps() : _mm512_loadu_ps(sums + r * Width + kLanes * (v0 + v));
    }
  }
  int64_t owed = 0;  // lines times rows: a line is asked for each k
  for (int64_t q = 0; q < k; ++q) {
    for (owed += ahead.lines; owed >= k; owed -= k, ahead.from += kLineBytes) {
      _mm_prefetch(ahead.from, _MM_HINT_T1);
    }
    const Element* row = rows + q * row_elements;
    __m512 w[Vectors];
    for (int v = 0; v < Vectors; ++v) w[v] = columns<Width>(row, v0 + v);
    for (int r = 0; r < Rows; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * a_stride + q]);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = _mm512_fmadd_ps(x, w[v], acc[r][v]);
    }
  }
  if constexpr (std::is_same_v<Element, Int4Pair>) {
    // sum_q a[q] * (stored[q] - 8) = sum_q a[q] * stored[q] - 8 * sum_q a[q]
    for (int r = 0; r < Rows; ++r) {
      float total = 0;
      for (int64_t q = 0; q < k; ++q) total += a[r * a_stride + q];
      const __m512 offset = _mm512_set1_ps(8 * total);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = _mm512_sub_ps(acc[r][v], offset);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      float* to = sums + r * Width + kLanes * (v0 + v);
      if constexpr (scaled) {
        acc[r][v] = _mm512_fmadd_ps(acc[r][v], _mm512_loadu_ps(scales + kLanes * (v0 + v)), _mm512_loadu_ps(to));
      }
      _mm512_storeu_ps(to, acc[r][v]);
    }
  }
}

// One tile of `rows` rows (at most kTileRows, or 2 where Vectors is wider
// than kTileVectors).
template <int Vectors, int Width, typename Element>
OPGRAPH_AVX512 void tile_of(int64_t rows, const float* a, int64_t a_stride, const Element* block_rows, int64_t block,
                            int v0, Prefetch share, const float* scales, float* sums) {
  switch (rows) {
    case 1: return tile<1, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
    case 2: return tile<2, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
  }
  if constexpr (Vectors <= kTileVectors) {
    switch (rows) {
      case 3: return tile<3, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
      case 4: return tile<4, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
      case 5: return tile<5, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
      default: return tile<6, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, sums);
    }
  }
}

// The tiles of a Width-column panel's rows [0, k) for `count` rows, block by
// block; each tile asks for its share of the block kPrefetchBytes ahead
// where `prefetch`, so that the requests go out at an even pace: asked all
// by a block's first tile, they waited on each other, and 16 rows' products
// streamed their weight at half the one-row product's rate.
template <int Step, int Width, typename Element>
OPGRAPH_AVX512 void panel_tiles(const float* a, int64_t a_stride, int64_t count, const Panels<Element>& panels,
                                int64_t i, int64_t q0, int64_t k, bool prefetch, float* sums) {
  constexpr int vectors = Width / kLanes;
  const int64_t tiles = (count + kTileRows - 1) / kTileRows * (vectors / Step);
  constexpr int64_t row_elements = Width / kColumnsPerElement<Element>;
  const Element* panel = panels.panel(i) + q0 * row_elements;
  // Blocks end at multiples of kBlockRows of w's rows, so that none
  // straddles two groups of an int8 weight's scales.
  for (int64_t q = 0, block = 0; q < k; q += block) {
    block = std::min(kBlockRows - (q0 + q) % kBlockRows, k - q);
    const float* scales = panels.scales ? panels.panel_scales(i, (q0 + q) / panels.group) : nullptr;
    const Element* rows = panel + q * row_elements;
    const int64_t lines = prefetch ? block * row_elements * int64_t{sizeof(Element)} / kLineBytes : 0;
    const char* ahead = reinterpret_cast<const char*>(rows) + kPrefetchBytes;
    int64_t t = 0;
    for (int64_t r = 0; r < count; r += kTileRows) {
      for (int v0 = 0; v0 < vectors; v0 += Step, ++t) {
        const Prefetch share{ahead + lines * t / tiles * kLineBytes, lines * (t + 1) / tiles - lines * t / tiles};
        const float* x = a + r * a_stride + q;
        float* s = sums + r * Width;
        tile_of<Step, Width>(std::min<int64_t>(kTileRows, count - r), x, a_stride, rows, block, v0, share, scales, s);
      }
    }
  }
}

template <int Width, typename Element>
OPGRAPH_AVX512 void panel_rows(const float* a, int64_t a_stride, int64_t count, const Panels<Element>& panels,
                               int64_t i, int64_t q0, int64_t k, bool prefetch, float* sums) {
  // One or two rows of int4 take a 128-column panel's row whole: a decode
  // step of Qwen2.5-0.5B took 15% less time so than in tiles of 4 vectors
  // (and one in int8 a third more; float32's and bfloat16's were within 5%,
  // either way).
  if (std::is_same_v<Element, Int4Pair> && count <= 2) {
    return panel_tiles<Width / kLanes, Width>(a, a_stride, count, panels, i, q0, k, prefetch, sums);
  }
  panel_tiles<std::min<int>(Width / kLanes, kTileVectors), Width>(a, a_stride, count, panels, i, q0, k, prefetch, sums);
}

}  // namespace

bool runs_panel_rows() { return cpu_capability() == CpuCapability::Avx512; }

template <typename Element>
OPGRAPH_AVX512 void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows,
                                   int64_t first, int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch,
                                   float* y, int64_t y_stride) {
  add_sums_by_panel(panels, rows, first, last, backward, y, y_stride, [&](int64_t i, float* sums) {
    if (i < panels.full) {
      panel_rows<kPanel>(a + q0, a_stride, rows, panels, i, q0, q1 - q0, prefetch, sums);
    } else {
      panel_rows<kStrip>(a + q0, a_stride, rows, panels, i, q0, q1 - q0, prefetch, sums);
    }
  });
}

template void add_panel_rows(const Panels<float>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<BFloat16>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<int8_t>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             bool, bool, float*, int64_t);
template void add_panel_rows(const Panels<Int4Pair>&, const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, bool, bool, float*, int64_t);

}  // namespace opgraph::kernels

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
