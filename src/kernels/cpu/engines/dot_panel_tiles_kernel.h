// The register tiles of add_dot_panel_rows (dot_panel_tiles.h), written once
// for every instruction set that runs them. dot_panel_tiles_avx512.cpp and
// dot_panel_tiles_avx2.cpp each include this file inside a namespace of
// their own, after defining:
// - OPGRAPH_DOT_TARGET, their set's gnu::target attribute, which every
//   function here carries so that the intrinsics inline into it;
// - struct Vec: vectors of kLanes 32-bit sums (Ints) and of float32 (Floats)
//   and their operations; `weights(bytes, Element{})`, a vector of a panel's
//   bytes made ready for `dot`, which adds to each lane the products of its
//   four (DotInt8) or eight (DotInt4) rows of w by a row's levels; the
//   offset each stored level holds that `dot` leaves in the sums
//   (kLevelOffset<Element>); the vectors a tile of Rows rows takes
//   (kTileVectors<Rows>); and quantize_block.
// The integer sums are exact, and the float32 steps after them the same on
// every set: a product's bits do not depend on the CPU's vector width.
//
// No include guard: included once per instruction set.

// Rows of w whose blocks the tiles of a panel run through before the next
// chunk: 256 rows of a 128-column int8 panel are 32 KiB, which stay in L1
// for the panel's other tiles of rows.
constexpr int64_t kChunkRows = 256;

// The most rows of activations a tile takes.
constexpr int kTileRows = 4;

// How far ahead of its loads a tile asks for the weight's cache lines
// where the weight streams from memory.
constexpr int64_t kPrefetchBytes = 32768, kLineBytes = 64;

// Four levels of a row as one 32-bit word, for Vec::broadcast.
inline int32_t four_levels(const int8_t* levels) {
  int32_t word;
  std::memcpy(&word, levels, sizeof(word));
  return word;
}

// sums[r * Width + c] += the sums of w's rows [q, q + k) (from the panel's
// `rows`, at row q) times rows [r0, r0 + Rows) of a, for the Vectors vectors
// of columns from the v0-th. k is a multiple of kDotBlock; each block's
// integer sums start from minus the offset times the activation block's
// levels' sum, then are added times its scales: the activation's, and
// `panel_scales`' for the block's group (the panel's, Width to a group);
// where the weight has zero points, `panel_offsets`' (laid out as the
// scales) are added times the activation block's sum, its scale times its
// levels' sum.
template <int Rows, int Vectors, int Width, bool Prefetch, typename Element>
OPGRAPH_DOT_TARGET void dot_tile(const QuantizedActivations& a, int64_t r0, const Panels<Element>& panels,
                                 const uint8_t* rows, int64_t q, int64_t k, int v0, const float* panel_scales,
                                 const float* panel_offsets, float* sums) {
  constexpr int lanes = Vec::kLanes;
  constexpr int64_t row_bytes = Width / kColumnsPerElement<Element>;  // bytes of one row of w
  const int64_t blocks = a.k / kDotBlock, group_blocks = panels.group / kDotBlock;
  // The block's group's scales (and offsets), and the blocks left in the
  // group: kept as the blocks go, since a division at each block's end
  // held up its scaling.
  const int64_t first_group = q / panels.group;
  const float* scales = panel_scales + first_group * Width + lanes * v0;
  const float* offsets = panel_offsets ? panel_offsets + first_group * Width + lanes * v0 : nullptr;
  int64_t group_left = group_blocks - q / kDotBlock % group_blocks;
  typename Vec::Floats total[Rows][Vectors];
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) total[r][v] = Vec::zero();
  }
  for (int64_t b = 0; b < k; b += kDotBlock) {
    const int64_t block = (q + b) / kDotBlock;
    const uint8_t* bytes = rows + b * row_bytes;
    typename Vec::Ints acc[Rows][Vectors];
    for (int r = 0; r < Rows; ++r) {
      const auto start = Vec::broadcast(-Vec::template kLevelOffset<Element> * a.sums[(r0 + r) * blocks + block]);
      for (int v = 0; v < Vectors; ++v) acc[r][v] = start;
    }
    // Four rows of w at a time (DotInt8), or eight in a byte's two nibbles (DotInt4).
    constexpr int64_t step = std::is_same_v<Element, DotInt8> ? 4 : 8;
    for (int64_t s = 0; s < kDotBlock; s += step) {
      const uint8_t* line = bytes + s * row_bytes + 4 * lanes * v0;
      decltype(Vec::weights(line, Element{})) w[Vectors];
      for (int v = 0; v < Vectors; ++v) {
        if constexpr (Prefetch) {
          if (4 * lanes * v % kLineBytes == 0) {
            _mm_prefetch(reinterpret_cast<const char*>(line) + kPrefetchBytes + 4 * lanes * v, _MM_HINT_T1);
          }
        }
        w[v] = Vec::weights(line + 4 * lanes * v, Element{});
      }
      for (int r = 0; r < Rows; ++r) {
        const int8_t* x = a.levels.data() + (r0 + r) * a.k + q + b + s;
        if constexpr (std::is_same_v<Element, DotInt8>) {
          const auto xs = Vec::broadcast(four_levels(x));
          for (int v = 0; v < Vectors; ++v) acc[r][v] = Vec::dot(acc[r][v], w[v], xs);
        } else {
          const auto low = Vec::broadcast(four_levels(x)), high = Vec::broadcast(four_levels(x + 4));
          for (int v = 0; v < Vectors; ++v) acc[r][v] = Vec::dot(acc[r][v], w[v], low, high);
        }
      }
    }
    for (int r = 0; r < Rows; ++r) {
      const float activation_scale = a.scales[(r0 + r) * blocks + block];
      const auto scale = Vec::broadcast(activation_scale);
      for (int v = 0; v < Vectors; ++v) {
        const auto both = Vec::mul(Vec::load(scales + lanes * v), scale);
        total[r][v] = Vec::fmadd(Vec::to_floats(acc[r][v]), both, total[r][v]);
      }
      if (offsets != nullptr) {
        const auto sum = Vec::broadcast(activation_scale * static_cast<float>(a.sums[(r0 + r) * blocks + block]));
        for (int v = 0; v < Vectors; ++v) total[r][v] = Vec::fmadd(Vec::load(offsets + lanes * v), sum, total[r][v]);
      }
    }
    if (--group_left == 0) {
      scales += Width;
      if (offsets != nullptr) offsets += Width;
      group_left = group_blocks;
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int v = 0; v < Vectors; ++v) {
      float* to = sums + r * Width + lanes * (v0 + v);
      Vec::store(to, Vec::add(Vec::load(to), total[r][v]));
    }
  }
}

// The tiles of Rows rows over a chunk of a Width-column panel: one row takes
// as much of the panel's row as its registers hold, more rows fewer vectors
// each, so that their 32-bit and float32 sums stay in registers.
template <int Rows, int Width, typename Element>
OPGRAPH_DOT_TARGET void dot_tiles(const QuantizedActivations& a, int64_t r0, const Panels<Element>& panels,
                                  const uint8_t* rows, int64_t q, int64_t k, bool prefetch, const float* scales,
                                  const float* offsets, float* sums) {
  constexpr int vectors = Width / Vec::kLanes, step = std::min(vectors, Vec::template kTileVectors<Rows>);
  for (int v0 = 0; v0 < vectors; v0 += step) {
    if (prefetch && r0 == 0) {
      dot_tile<Rows, step, Width, true>(a, r0, panels, rows, q, k, v0, scales, offsets, sums);
    } else {
      dot_tile<Rows, step, Width, false>(a, r0, panels, rows, q, k, v0, scales, offsets, sums);
    }
  }
}

// The sums of `count` rows of a for panel i's rows [q0, q1) of w.
template <int Width, typename Element>
OPGRAPH_DOT_TARGET void dot_panel_rows(const QuantizedActivations& a, int64_t count, const Panels<Element>& panels,
                                       int64_t i, int64_t q0, int64_t q1, bool prefetch, float* sums) {
  constexpr int64_t row_bytes = Width / kColumnsPerElement<Element>;
  const auto* panel = reinterpret_cast<const uint8_t*>(panels.panel(i));
  const float* scales = panels.panel_scales(i, 0);
  const float* offsets = panels.panel_offsets(i, 0);
  for (int64_t q = q0; q < q1; q += kChunkRows) {
    const int64_t k = std::min(kChunkRows, q1 - q);
    const uint8_t* rows = panel + q * row_bytes;
    for (int64_t r = 0; r < count; r += kTileRows) {
      float* s = sums + r * Width;
      switch (std::min<int64_t>(kTileRows, count - r)) {
        case 1: dot_tiles<1, Width>(a, r, panels, rows, q, k, prefetch, scales, offsets, s); break;
        case 2: dot_tiles<2, Width>(a, r, panels, rows, q, k, prefetch, scales, offsets, s); break;
        case 3: dot_tiles<3, Width>(a, r, panels, rows, q, k, prefetch, scales, offsets, s); break;
        default: dot_tiles<4, Width>(a, r, panels, rows, q, k, prefetch, scales, offsets, s); break;
      }
    }
  }
}

// The entry points dot_panel_tiles.h declares for this set: without the
// target attribute, which would make them other versions of the functions
// declared.
QuantizedActivations quantized_activations(const float* a, int64_t a_stride, int64_t rows, int64_t k) {
  const int64_t blocks = k / kDotBlock;
  QuantizedActivations q{std::vector<int8_t>(static_cast<size_t>(rows * k)),
                         std::vector<float>(static_cast<size_t>(rows * blocks)),
                         std::vector<int32_t>(static_cast<size_t>(rows * blocks)), k};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      Vec::quantize_block(a + r * a_stride + b * kDotBlock, q.levels.data() + r * k + b * kDotBlock,
                          q.scales[r * blocks + b], q.sums[r * blocks + b]);
    }
  }
  return q;
}

template <typename Element>
void add_dot_panel_rows(const Panels<Element>& panels, const QuantizedActivations& a, int64_t rows, int64_t first,
                        int64_t last, int64_t q0, int64_t q1, bool backward, bool prefetch, float* y,
                        int64_t y_stride) {
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
