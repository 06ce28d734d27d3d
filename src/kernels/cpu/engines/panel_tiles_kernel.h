// The register tiles of add_panel_rows (panel_tiles.h), written once for
// every instruction set that runs them. panel_tiles_avx512.cpp and
// panel_tiles_avx2.cpp each include this file inside a namespace of their
// own, after defining:
// - OPGRAPH_PANEL_TARGET, their set's gnu::target attribute, which every
//   function here carries so that the intrinsics inline into it;
// - struct Vec: the vector of float32 columns (Floats, kLanes of them), its
//   operations, `columns<Width>(row, v)` widening the v-th vector of a
//   panel row of each Element to float32, and the tile shape its registers
//   hold (kTileRows x kTileVectors sums, kRowVectors for a row whole).
// Each set thus gets its own copies, which the other sets never call. Every
// column's sums are the same multiply-adds in the same order on every set,
// so that a product's bits do not depend on the CPU's vector width.
//
// No include guard: included once per instruction set.

// The rows of a panel a tile runs through before the next tile reads them
// again: 32 rows of a float32 panel are 16 KiB, which stay in L1 for the
// panel's other tiles, while the sums go to memory and back once per block.
constexpr int64_t kBlockRows = 32;

// How far ahead of its loads a block's tiles ask for the weight's cache
// lines, and into L2: into L1, as the one-row product asks, 16 rows'
// products took 15% longer; 8 KiB ahead, 24% longer, and 128 KiB, 8%
// (Intel Xeon, AVX-512).
constexpr int64_t kPrefetchBytes = 32768, kLineBytes = 64;

// The cache lines of the weight a tile asks for while it runs: `lines`
// lines from `from`, spread evenly over its rows of the panel.
struct Prefetch {
  const char* from = nullptr;
  int64_t lines = 0;
};

// sums[r][c] += a[r * a_stride + q] * rows[q * Width + c] for q < k, over Rows
// rows and the Vectors vectors of columns from the v0-th. Quantized rows'
// sums start from zero and are added times their columns' scales
// (`scales`, the block's group's, from the panel's first column), then,
// where the weight has zero points, its `offsets` times the sum of a's
// values: sum_q a[q] * (level[q] * scale + offset).
template <int Rows, int Vectors, int Width, typename Element>
OPGRAPH_PANEL_TARGET void tile(const float* a, int64_t a_stride, const Element* rows, int64_t k, int v0, Prefetch ahead,
                               const float* scales, const float* offsets, float* sums) {
  constexpr bool scaled = std::is_same_v<Element, int8_t> || std::is_same_v<Element, Int4Pair>;
  constexpr int64_t row_elements = Width / kColumnsPerElement<Element>;
  constexpr int lanes = Vec::kLanes;
  typename Vec::Floats acc[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) acc[r][v] = scaled ? Vec::zero() : Vec::load(sums + r * Width + lanes * (v0 + v));
  }
  int64_t owed = 0;  // lines times rows: a line is asked for each k
  for (int64_t q = 0; q < k; ++q) {
    for (owed += ahead.lines; owed >= k; owed -= k, ahead.from += kLineBytes) {
      _mm_prefetch(ahead.from, _MM_HINT_T1);
    }
    const Element* row = rows + q * row_elements;
    typename Vec::Floats w[Vectors];
    for (int v = 0; v < Vectors; ++v) w[v] = Vec::template columns<Width>(row, v0 + v);
    for (int r = 0; r < Rows; ++r) {
      const typename Vec::Floats x = Vec::broadcast(a[r * a_stride + q]);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = Vec::fmadd(x, w[v], acc[r][v]);
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float total = 0;
    if (std::is_same_v<Element, Int4Pair> || offsets != nullptr) {
      for (int64_t q = 0; q < k; ++q) total += a[r * a_stride + q];
    }
    if constexpr (std::is_same_v<Element, Int4Pair>) {
      // sum_q a[q] * (stored[q] - 8) = sum_q a[q] * stored[q] - 8 * sum_q a[q]
      const typename Vec::Floats offset = Vec::broadcast(8 * total);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = Vec::sub(acc[r][v], offset);
    }
    for (int v = 0; v < Vectors; ++v) {
      float* to = sums + r * Width + lanes * (v0 + v);
      if constexpr (scaled) {
        acc[r][v] = Vec::fmadd(acc[r][v], Vec::load(scales + lanes * (v0 + v)), Vec::load(to));
        if (offsets != nullptr) {
          acc[r][v] = Vec::fmadd(Vec::load(offsets + lanes * (v0 + v)), Vec::broadcast(total), acc[r][v]);
        }
      }
      Vec::store(to, acc[r][v]);
    }
  }
}

// One tile of `rows` rows (at most Vec::kTileRows, or 2 where Vectors is
// wider than Vec::kTileVectors).
template <int Vectors, int Width, typename Element>
OPGRAPH_PANEL_TARGET void tile_of(int64_t rows, const float* a, int64_t a_stride, const Element* block_rows,
                                  int64_t block, int v0, Prefetch share, const float* scales, const float* offsets,
                                  float* sums) {
  switch (rows) {
    case 1: return tile<1, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
    case 2: return tile<2, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
  }
  if constexpr (Vectors <= Vec::kTileVectors) {
    switch (rows) {
      case 3: return tile<3, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
      case 4: return tile<4, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
      case 5: return tile<5, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
      default: return tile<6, Vectors, Width>(a, a_stride, block_rows, block, v0, share, scales, offsets, sums);
    }
  }
}

// The tiles of a Width-column panel's rows [0, k) for `count` rows, block by
// block; each tile asks for its share of the block kPrefetchBytes ahead
// where `prefetch`, so that the requests go out at an even pace: asked all
// by a block's first tile, they waited on each other, and 16 rows' products
// streamed their weight at half the one-row product's rate.
template <int Step, int Width, typename Element>
OPGRAPH_PANEL_TARGET void panel_tiles(const float* a, int64_t a_stride, int64_t count, const Panels<Element>& panels,
                                      int64_t i, int64_t q0, int64_t k, bool prefetch, float* sums) {
  constexpr int vectors = Width / Vec::kLanes;
  const int64_t tiles = (count + Vec::kTileRows - 1) / Vec::kTileRows * (vectors / Step);
  constexpr int64_t row_elements = Width / kColumnsPerElement<Element>;
  const Element* panel = panels.panel(i) + q0 * row_elements;
  // Blocks end at multiples of kBlockRows of w's rows, so that none
  // straddles two groups of an int8 weight's scales.
  for (int64_t q = 0, block = 0; q < k; q += block) {
    block = std::min(kBlockRows - (q0 + q) % kBlockRows, k - q);
    const float* scales = panels.scales ? panels.panel_scales(i, (q0 + q) / panels.group) : nullptr;
    const float* offsets = panels.scales ? panels.panel_offsets(i, (q0 + q) / panels.group) : nullptr;
    const Element* rows = panel + q * row_elements;
    const int64_t lines = prefetch ? block * row_elements * int64_t{sizeof(Element)} / kLineBytes : 0;
    const char* ahead = reinterpret_cast<const char*>(rows) + kPrefetchBytes;
    int64_t t = 0;
    for (int64_t r = 0; r < count; r += Vec::kTileRows) {
      for (int v0 = 0; v0 < vectors; v0 += Step, ++t) {
        const Prefetch share{ahead + lines * t / tiles * kLineBytes, lines * (t + 1) / tiles - lines * t / tiles};
        const float* x = a + r * a_stride + q;
        float* s = sums + r * Width;
        tile_of<Step, Width>(std::min<int64_t>(Vec::kTileRows, count - r), x, a_stride, rows, block, v0, share, scales,
                             offsets, s);
      }
    }
  }
}

template <int Width, typename Element>
OPGRAPH_PANEL_TARGET void panel_rows(const float* a, int64_t a_stride, int64_t count, const Panels<Element>& panels,
                                     int64_t i, int64_t q0, int64_t k, bool prefetch, float* sums) {
  constexpr int vectors = Width / Vec::kLanes;
  // One or two rows of int4 take a panel's row in as few tiles as the
  // registers allow: on AVX-512 a decode step of Qwen2.5-0.5B took 15% less
  // time with the 128-column row whole than in tiles of 4 vectors (and one
  // in int8 a third more; float32's and bfloat16's were within 5%, either
  // way).
  if (std::is_same_v<Element, Int4Pair> && count <= 2) {
    constexpr int step = std::min(vectors, Vec::kRowVectors);
    return panel_tiles<step, Width>(a, a_stride, count, panels, i, q0, k, prefetch, sums);
  }
  panel_tiles<std::min(vectors, Vec::kTileVectors), Width>(a, a_stride, count, panels, i, q0, k, prefetch, sums);
}

// The entry point panel_tiles.h declares for this set: without the target
// attribute, which would make it another version of the function declared.
template <typename Element>
void add_panel_rows(const Panels<Element>& panels, const float* a, int64_t a_stride, int64_t rows, int64_t first,
                    int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y, int64_t y_stride) {
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
