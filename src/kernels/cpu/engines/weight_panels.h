// A Session's weight packed for products of a few rows (decode steps, a
// recurrent step): panels of columns, each a contiguous [k, width] block, so
// that a panel's sums stay in registers while its block streams in one
// sequential run. few_rows_product.cpp and panel_tiles.cpp read it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "kernels/cpu/util/bfloat16.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Full panels of kPanel columns, then strips of kStrip for the columns left,
// the last strip padded with zero columns. Read in place, eight rows of w at
// a time, an LSTM-256 step's 256 x 1024 product took 8.9 us; packed, 7.0 us
// (6.0 us where the steps alternate directions, see Product::w_backward).
// In a Session of Precision::BFloat16 the panels hold bfloat16 (Element),
// widened to float32 in registers: half the bytes to stream, a multiplied
// as it is and the sums in float32.
constexpr int64_t kPanel = 128, kStrip = 16;

// Two signed 4-bit weights in a byte (WeightQuantization of 4 bits), each
// stored plus 8. A panel row holds each group of kPairGroup columns (Width's,
// if fewer) in half as many bytes, column c of the group in a byte's low
// nibble and column c + group / 2 in its high nibble, as bfloat16 pairs its
// words: a vector of bytes widens to two vectors of columns by a mask and a
// shift.
struct Int4Pair {
  uint8_t bits;
};

// Integer panels laid out for the CPU's integer dot products (AVX512-VNNI's
// vpdpbusd, which sums four byte products into each 32-bit lane; AVX2's
// vpmaddubsw and vpmaddwd, two and two), where a Session quantizes its
// activations too (WeightQuantization's int8_activations). A panel's rows of w go by fours: the 64 bytes of a
// vector hold 16 columns' four consecutive rows, column after column.
// DotInt8 stores level + 128 (unsigned), DotInt4 level + 8 in a nibble: a
// byte's low nibble is row q of the eight rows of w from q0 = q - q % 8 (q %
// 8 < 4), its high nibble row q + 4, so that a mask and a shift give the two
// vectors of four rows each. The offsets come off once a block, times the
// sum of the activation's levels.
struct DotInt8 {
  uint8_t bits;
};
struct DotInt4 {
  uint8_t bits;
};

template <typename Element>
constexpr bool kIsDotElement = std::is_same_v<Element, DotInt8> || std::is_same_v<Element, DotInt4>;

// Columns to an element of a panel row.
template <typename Element>
constexpr int64_t kColumnsPerElement = std::is_same_v<Element, Int4Pair> || std::is_same_v<Element, DotInt4> ? 2 : 1;

template <typename Element>
struct Panels {
  const Element* data;
  int64_t k, n, full;  // full: the count of kPanel-wide panels
  // int8 and int4 panels (WeightQuantization): the scale of column j of
  // panel i for rows [g * group, (g + 1) * group). A panel's scales lie
  // together, group after group, so that they stream in one run beside the
  // panel: read a line per block from rows of all the columns' scales, an
  // int4 product stack streamed at two thirds of the rate.
  const float* scales = nullptr;
  int64_t group = 0;
  // Weights with zero points: what each weight of a group adds beyond its
  // level times its scale (minus the zero point times the scale), laid out
  // as the scales; nullptr where the weight is symmetric.
  const float* offsets = nullptr;
  // Panel i's scales for rows [g * group, (g + 1) * group), from its first column.
  const float* panel_scales(int64_t i, int64_t g) const { return scales + column(i) * (k / group) + g * width(i); }
  // Panel i's offsets, where the weight has them, as panel_scales lays them out.
  const float* panel_offsets(int64_t i, int64_t g) const {
    return offsets ? offsets + column(i) * (k / group) + g * width(i) : nullptr;
  }

  int64_t count() const { return full + (n - full * kPanel + kStrip - 1) / kStrip; }
  // The first column of panel i (the column past the last for i = count()).
  int64_t column(int64_t i) const { return std::min(n, i <= full ? i * kPanel : full * kPanel + (i - full) * kStrip); }
  // The first panel that starts at column c or after it (count() past the last).
  int64_t first_from(int64_t c) const {
    if (c <= full * kPanel) return (c + kPanel - 1) / kPanel;
    return std::min(count(), full + (c - full * kPanel + kStrip - 1) / kStrip);
  }
  // Panel i's columns in the packed copy, padding included.
  int64_t width(int64_t i) const { return i < full ? kPanel : kStrip; }
  const Element* panel(int64_t i) const { return data + column(i) * k / kColumnsPerElement<Element>; }
};

// A bfloat16 panel's row holds each group of kPairGroup columns (Width's,
// if fewer) as 32-bit words of two: column c of the group in a word's low
// half, column c + group / 2 in its high half. Widening a word's halves to
// float32 is then a shift and a mask of whole words; widening bfloat16
// element by element took more instructions than the memory took time, and
// a decode's products ran at two thirds of the bandwidth.
constexpr int64_t kPairGroup = 32;

constexpr int64_t pair_group(int64_t width) { return std::min(width, kPairGroup); }

// The [k, n] matrix w (element strides row_stride, column_stride) packed into
// panels of Element, made once per weight and kept in the Session's prepared
// weights. int8_t, Int4Pair, DotInt8 and DotInt4 panels are quantized as the
// Session's WeightQuantization says; its group size must divide k (and the
// Dot panels' k be a multiple of 32).
template <typename Element>
Panels<Element> packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                              int64_t column_stride);

// A weight quantized ahead of time, as a quantized linear layer stores it
// (opgraph::quantized_linear): row j of `levels` holds output j's k integer
// levels, int8 (bits 8) or two to a byte (bits 4, as core/weight_levels.h's
// int4_pair packs them), and scales[j * (k / group) + g] is the scale of
// inputs [g * group, (g + 1) * group), zero_points[j * (k / group) + g]
// (nullptr: all 0) their zero point. group is k, or a multiple of 32 that
// divides k.
struct QuantizedRows {
  const void* levels;
  const float* scales;
  const int8_t* zero_points;
  int bits;
  int64_t k, n, group;
};

// w's levels and scales packed into int8_t or DotInt8 (bits 8), Int4Pair or
// DotInt4 (bits 4) panels, as they are: kept in the Session's prepared weights, or made for
// the call alone where no Session prepared it (`kept` then holds them).
template <typename Element>
Panels<Element> packed_panels(const KernelContext& context, const QuantizedRows& w, std::shared_ptr<const void>& kept);

}  // namespace opgraph::kernels
