// aten::scaled_dot_product_attention: softmax(q @ k^T * scale + mask) @ v;
// and opgraph::attention_bshd, the same on q, k, v and output laid out as
// [batch, sequence, heads, features], where a model's linear layers write
// them before its .transpose(1, 2) (graph/attention_layout.cpp).
//
// The fast kernel is fused: each task takes one (batch, head) and a block of
// kRowBlock query rows, and holds only that block's scores (kRowBlock x S),
// never the whole L x S matrix, from the product through the mask and the
// softmax to the product with v. Both products run on small register tiles
// (see attention_block) that vectorize without reordering any sum. A row
// whose every score is masked comes out as zeros, as PyTorch's does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numbers>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/cpu/util/vec_math.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// Query rows per task: enough rows to reuse each row of k and v from cache,
// few enough that the block of scores stays in L2 for long sequences.
constexpr int64_t kRowBlock = 32;

// The problem as the kernels see it. Batch dims (all but the last two) are
// broadcast across query, key, value and mask; each operand's matrices start
// at its own offsets[b] for the flat batch index b, and their rows lie
// *_row elements apart (the features of a row are contiguous).
struct Attention {
  Shape batch;
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  std::vector<int64_t> q_offsets, k_offsets, v_offsets, out_offsets, mask_offsets;
  int64_t q_row = 0, k_row = 0, v_row = 0, out_row = 0;
  int64_t mask_row_stride = 0, mask_col_stride = 0;  // 0 along a dim the mask is broadcast over
  bool has_mask = false, bool_mask = false, causal = false;
  // Where k's and v's matrices lie: in the inputs, or in copies (pack_keys),
  // whose v rows hold whole vectors, zeros past Ev.
  const void* k_data = nullptr;
  const void* v_data = nullptr;
  bool v_rows_padded = false;
  double scale = 1.0;
};

Shape batch_of(const TensorMeta& t) { return Shape(t.shape.begin(), t.shape.end() - std::min<int64_t>(2, t.dim())); }

// The batch shape the operands broadcast to. With grouped-query attention,
// key and value may have fewer heads (dim -3) than the query, each serving a
// group of query heads; they count as the query's head count here.
Shape broadcast_batch(std::span<const TensorMeta* const> operands, std::span<const char* const> names, bool gqa) {
  size_t rank = 0;
  for (const TensorMeta* t : operands) rank = std::max(rank, batch_of(*t).size());
  Shape batch(rank, 1);
  const int64_t query_heads = rank > 0 && !batch_of(*operands[0]).empty() ? batch_of(*operands[0]).back() : 1;
  for (size_t k = 0; k < operands.size(); ++k) {
    const Shape own = batch_of(*operands[k]);
    for (size_t i = 1; i <= own.size(); ++i) {
      int64_t extent = own[own.size() - i];
      if (gqa && i == 1 && k > 0 && extent != query_heads) {
        OPGRAPH_CHECK(extent > 0 && query_heads % extent == 0, names[k], ": with enable_gqa, the query's ", query_heads,
                      " heads (dim -3) must be a multiple of its heads, got ", operands[k]->str());
        extent = query_heads;
      }
      int64_t& out = batch[rank - i];
      OPGRAPH_CHECK(out == 1 || extent == 1 || out == extent, names[k], ": batch dims of ", operands[k]->str(),
                    " do not broadcast with the query's and the others' (dim ", -int64_t(i) - 2, ": ", extent, " vs ",
                    out, ")");
      out = out == 1 ? extent : out;
    }
  }
  return batch;
}

TensorMeta attention_shape(const TensorMeta& query, const TensorMeta& key, const TensorMeta& value,
                           const TensorMeta* mask, double dropout_p, bool is_causal, std::optional<double>,
                           bool enable_gqa) {
  check_floating(query, "query");
  for (auto [t, name] : {std::pair{&query, "query"}, {&key, "key"}, {&value, "value"}}) {
    OPGRAPH_CHECK(t->dim() >= 2, name, ": expected rank 2 or more (..., sequence, features), got ", t->str());
    OPGRAPH_CHECK(t->dtype == query.dtype, name, ": expected ", dtype_name(query.dtype), " like query, got ", t->str());
  }
  OPGRAPH_CHECK(key.shape.back() == query.shape.back(), "key: expected ", query.shape.back(),
                " features (dim -1) like query ", query.str(), ", got ", key.str());
  OPGRAPH_CHECK(value.shape.end()[-2] == key.shape.end()[-2], "value: expected ", key.shape.end()[-2],
                " positions (dim -2) like key ", key.str(), ", got ", value.str());
  OPGRAPH_CHECK(dropout_p == 0.0, "dropout_p: expected 0.0 (inference), got ", dropout_p);
  const char* names[] = {"query", "key", "value"};
  const TensorMeta* operands[] = {&query, &key, &value};
  Shape shape = broadcast_batch(operands, names, enable_gqa);
  const int64_t L = query.shape.end()[-2], S = key.shape.end()[-2];
  if (mask != nullptr) {
    OPGRAPH_CHECK(!is_causal, "attn_mask: expected None when is_causal is True, got ", mask->str());
    OPGRAPH_CHECK(mask->dtype == DType::Bool || mask->dtype == query.dtype, "attn_mask: expected bool or ",
                  dtype_name(query.dtype), ", got ", mask->str());
    Shape full = shape;
    full.push_back(L);
    full.push_back(S);
    bool broadcasts = mask->dim() <= static_cast<int64_t>(full.size());
    for (size_t i = 1; broadcasts && i <= mask->shape.size(); ++i) {
      const int64_t extent = mask->shape[mask->shape.size() - i];
      broadcasts = extent == 1 || extent == full[full.size() - i];
    }
    OPGRAPH_CHECK(broadcasts, "attn_mask: expected a shape that broadcasts to the scores' ", shape_str(full), ", got ",
                  mask->str());
  }
  shape.push_back(L);
  shape.push_back(value.shape.back());
  return {query.dtype, std::move(shape)};
}

// opgraph::attention_bshd: q [B, L, H, E], k [B, S, Hk, E], v [B, S, Hk, Ev]
// and the output [B, L, H, Ev]; the mask as aten's, over [B, H, L, S]. The
// checks are aten's, on the operands read as [batch, heads, sequence, features].
TensorMeta heads_second_attention_shape(const TensorMeta& query, const TensorMeta& key, const TensorMeta& value,
                                        const TensorMeta* mask, double dropout_p, bool is_causal,
                                        std::optional<double> scale, bool enable_gqa) {
  const char* names[] = {"query", "key", "value"};
  const TensorMeta* inputs[] = {&query, &key, &value};
  std::vector<TensorMeta> operands;
  for (size_t k = 0; k < 3; ++k) {
    OPGRAPH_CHECK(inputs[k]->dim() == 4, names[k], ": expected rank 4 (batch, sequence, heads, features), got ",
                  inputs[k]->str());
    operands.push_back(*inputs[k]);
    std::swap(operands.back().shape[1], operands.back().shape[2]);
  }
  try {
    TensorMeta out =
        attention_shape(operands[0], operands[1], operands[2], mask, dropout_p, is_causal, scale, enable_gqa);
    std::swap(out.shape[1], out.shape[2]);
    return out;
  } catch (const Error& e) {
    throw Error(detail::concat(e.what(), " (operands read as [batch, heads, sequence, features])"));
  }
}

// An operand as the kernels read it: a stack of matrices, its shape
// [batch..., rows, features] and the stride of each of those dims.
struct MatrixStack {
  Shape shape;
  std::vector<int64_t> strides;

  int64_t row_stride() const { return shape.size() < 2 ? 0 : strides.end()[-2]; }
};

MatrixStack contiguous_stack(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return {shape, std::move(strides)};
}

// [batch, sequence, heads, features] read as [batch, heads, sequence, features].
MatrixStack heads_second_stack(const Shape& shape) {
  MatrixStack stack = contiguous_stack(shape);
  std::swap(stack.shape[1], stack.shape[2]);
  std::swap(stack.strides[1], stack.strides[2]);
  return stack;
}

// Where each batch's matrix of `t` starts, for every flat index over `batch`;
// `group` > 1 maps query head h to the operand's head h / group.
std::vector<int64_t> batch_offsets(const MatrixStack& t, const Shape& batch, int64_t group) {
  const size_t rank = batch.size();
  const int64_t own_rank = static_cast<int64_t>(t.shape.size());
  // The operand's strides along the broadcast batch dims, 0 where it has extent 1.
  std::vector<int64_t> strides(rank, 0), extents(rank, 1);
  for (int64_t i = 1; i <= own_rank - 2; ++i) {
    const int64_t extent = t.shape[own_rank - 2 - i];
    extents[rank - i] = extent;
    if (extent != 1) strides[rank - i] = t.strides[own_rank - 2 - i];
  }
  std::vector<int64_t> offsets(static_cast<size_t>(shape_numel(batch)));
  for (size_t b = 0; b < offsets.size(); ++b) {
    int64_t rest = static_cast<int64_t>(b), offset = 0;
    for (size_t d = rank; d-- > 0;) {
      int64_t index = rest % batch[d];
      rest /= batch[d];
      if (d + 1 == rank && group > 1 && extents[d] != 1) index /= group;
      offset += index * strides[d];
    }
    offsets[b] = offset;
  }
  return offsets;
}

// `heads_second`: q, k, v and the output are [batch, sequence, heads, features].
// A call's tensors; `mask` undefined for None.
struct Operands {
  const Tensor& query;
  const Tensor& key;
  const Tensor& value;
  const Tensor& mask;
};

// A call's attributes the kernels read.
struct Options {
  bool is_causal;
  std::optional<double> scale;
  bool enable_gqa;
};

Attention plan(const Operands& inputs, const Tensor& out, const Options& options, bool heads_second) {
  const auto stack = [&](const Tensor& t) {
    return heads_second ? heads_second_stack(t.shape()) : contiguous_stack(t.shape());
  };
  const MatrixStack query = stack(inputs.query), key = stack(inputs.key), value = stack(inputs.value),
                    output = stack(out);
  const Tensor& mask = inputs.mask;
  Attention a;
  a.batch = Shape(output.shape.begin(), output.shape.end() - 2);
  a.L = query.shape.end()[-2];
  a.S = key.shape.end()[-2];
  a.E = query.shape.back();
  a.Ev = value.shape.back();
  const int64_t heads = a.batch.empty() ? 1 : a.batch.back();
  const auto group = [&](const MatrixStack& t) {
    const bool gqa = options.enable_gqa && t.shape.size() >= 3 && t.shape.end()[-3] != heads;
    return gqa ? heads / t.shape.end()[-3] : 1;
  };
  a.q_offsets = batch_offsets(query, a.batch, 1);
  a.k_offsets = batch_offsets(key, a.batch, group(key));
  a.v_offsets = batch_offsets(value, a.batch, group(value));
  a.out_offsets = batch_offsets(output, a.batch, 1);
  a.k_data = inputs.key.data();
  a.v_data = inputs.value.data();
  a.q_row = query.row_stride();
  a.k_row = key.row_stride();
  a.v_row = value.row_stride();
  a.out_row = output.row_stride();
  a.has_mask = mask.defined();
  if (a.has_mask) {
    a.bool_mask = mask.dtype() == DType::Bool;
    // The mask as [batch..., L, S] with leading 1s, so that batch_offsets reads it.
    Shape padded(a.batch.size() + 2 - static_cast<size_t>(mask.dim()), 1);
    padded.insert(padded.end(), mask.shape().begin(), mask.shape().end());
    a.mask_offsets = batch_offsets(contiguous_stack(padded), a.batch, 1);
    const int64_t rows = padded.end()[-2], cols = padded.back();
    a.mask_col_stride = cols == 1 ? 0 : 1;
    a.mask_row_stride = rows == 1 ? 0 : cols;
  }
  a.causal = options.is_causal;
  a.scale = options.scale ? *options.scale : 1.0 / std::sqrt(double(a.E));
  return a;
}

// The additive mask value of score j of query row i: 0 or -inf for a
// boolean mask (True attends), the value itself for a float one.
template <typename T>
T mask_value(const Attention& a, const Tensor& mask, int64_t b, int64_t i, int64_t j) {
  const int64_t at = a.mask_offsets[b] + i * a.mask_row_stride + j * a.mask_col_stride;
  if (a.bool_mask) return mask.data_ptr<const bool>()[at] ? T(0) : -std::numeric_limits<T>::infinity();
  return mask.data_ptr<const T>()[at];
}

// A block's scores are kept transposed, scores[j * kRowBlock + r] for key j
// and query row r, so that both products read k and v where they lie and
// vectors run along the block's query rows:
// - scores = k q^T: a tile's rows are keys, broadcast from k's rows, and its
//   vectors the block's query rows, from q^T (the block's rows transposed
//   once, kRowBlock x E, where transposing k took S x E per head);
// - out = scores^T v: a tile's rows are query rows, broadcast from the
//   scores, and its vectors v's columns, read in place;
// - the softmax over each query row's keys is a column of the scores: its
//   max and sum are elementwise over key rows, with no horizontal sums.
//
// The tiles are TileRows rows by TileVectors vectors of kTileCols columns:
// each broadcast feeds TileVectors multiply-adds, each vector loaded
// TileRows, and the accumulators stay in registers across the sum. On
// AVX-512, 8 rows by 2 vectors keep 16 independent sums in flight in its 32
// registers with one broadcast per two multiply-adds (8 by 1 left Whisper's
// attention well short of the FMA peak). A kTileCols vector is two of AVX2's
// 16 registers: 4 rows by 1 vector hold 8 of them, and more spill.
constexpr int64_t kTileCols = 16;
constexpr int64_t kWideTileRows = 8, kWideTileVectors = 2;
constexpr int64_t kTileRows = 4, kTileVectors = 1;
static_assert(kRowBlock % (kWideTileVectors * kTileCols) == 0 && kTileCols % kWideTileRows == 0);

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The rows of v (and of the scores) that the product with v takes at a
// time: 16 KiB of v, which stays in L1 (48 KiB on recent x86 cores) with the
// chunk's scores and the block's running sums.
constexpr int64_t kKeyChunkBytes = 16 << 10;

// One row of a tile, as a GCC vector: its multiply-adds compile to whole
// vector instructions for the CPU's width (one AVX-512 FMA for float), where
// plain loops over a small array get vectorized across rows instead.
template <typename T>
struct TileVector;
template <>
struct TileVector<float> {
  typedef float type __attribute__((vector_size(kTileCols * sizeof(float))));
};
template <>
struct TileVector<double> {
  typedef double type __attribute__((vector_size(kTileCols * sizeof(double))));
};
template <typename T>
using TileRow = typename TileVector<T>::type;

// A tile's sums where the CPU's vectors are narrower than a TileRow: in
// Pieces vectors of kTileCols / Pieces lanes each. GCC keeps a vector wider
// than the CPU's registers on the stack: on AVX2, a TileRow of sums went
// through memory and general registers at every multiply-add, and BERT-base's
// attention took 7.3 ms a layer on AMD Zen 3 (1 thread). Halves of 8 floats
// are AVX2's registers.
template <typename T, int64_t Pieces>
struct TilePiece {
  typedef T type __attribute__((vector_size(kTileCols / Pieces * sizeof(T))));
};

// The pieces a TileRow of T takes on AVX2 (32-byte registers).
template <typename T>
constexpr int64_t kAvx2Pieces = kTileCols * int64_t{sizeof(T)} / 32;

// A tile_product's start where its sums start from zero. (Vectors go by
// reference: a 64-byte vector passed or returned by value has an ABI of its
// own where AVX-512 is enabled.)
template <typename T>
struct Zeros {
  void operator()(int64_t, int64_t, TileRow<T>& sums) const { sums = TileRow<T>{}; }
};

// Calls store(r, v, c) with each c = the sum over k < depth of
// a[r * a_row + k * a_depth] * b[k * ldb + v * kTileCols + (0, kTileCols)],
// for r < TileRows, v < TileVectors, added in order of k to the value that
// start(r, v, c) sets c to first, each TileRow in Pieces vectors. The sums
// go to `store` from registers: a tile handed back in memory was stored to
// the stack and copied from there.
template <typename T, int64_t TileRows, int64_t TileVectors, int64_t Pieces, typename Start, typename Store>
void tile_product(const T* a, int64_t a_row, int64_t a_depth, const T* b, int64_t ldb, int64_t depth, Start&& start,
                  Store&& store) {
  using Piece = typename TilePiece<T, Pieces>::type;
  constexpr int64_t lanes = kTileCols / Pieces;
  Piece c[TileRows][TileVectors][Pieces];
  for (int64_t r = 0; r < TileRows; ++r) {
    for (int64_t v = 0; v < TileVectors; ++v) {
      if constexpr (Pieces == 1) {
        start(r, v, c[r][v][0]);
      } else {
        TileRow<T> sums;
        start(r, v, sums);
        // Piece by piece: with one copy spanning the pieces, GCC kept c on
        // the stack, and every multiply-add read and wrote its sum there.
        for (int64_t p = 0; p < Pieces; ++p) {
          std::memcpy(&c[r][v][p], reinterpret_cast<const char*>(&sums) + p * sizeof(Piece), sizeof(Piece));
        }
      }
    }
  }
  for (int64_t k = 0; k < depth; ++k) {
    // Each piece loaded alone: copied whole, a row of b went to the stack
    // in 16-byte stores that the pieces' loads then waited on.
    Piece bk[TileVectors][Pieces];
    for (int64_t v = 0; v < TileVectors; ++v) {
      for (int64_t p = 0; p < Pieces; ++p)
        std::memcpy(&bk[v][p], b + k * ldb + v * kTileCols + p * lanes, sizeof(Piece));
    }
    for (int64_t r = 0; r < TileRows; ++r) {
      const T ak = a[r * a_row + k * a_depth];
      for (int64_t v = 0; v < TileVectors; ++v) {
        for (int64_t p = 0; p < Pieces; ++p) c[r][v][p] += ak * bk[v][p];
      }
    }
  }
  static_assert(sizeof(Piece) * Pieces == sizeof(TileRow<T>) && lanes * Pieces == kTileCols);
#pragma GCC unroll 16
  for (int64_t r = 0; r < TileRows; ++r) {
#pragma GCC unroll 4
    for (int64_t v = 0; v < TileVectors; ++v) {
      if constexpr (Pieces == 1) {
        store(r, v, c[r][v][0]);
      } else {
        TileRow<T> sums;
        for (int64_t p = 0; p < Pieces; ++p) {
          std::memcpy(reinterpret_cast<char*>(&sums) + p * sizeof(Piece), &c[r][v][p], sizeof(Piece));
        }
        store(r, v, sums);
      }
    }
  }
}

// Calls step.template operator()<Count>(at) for steps over [0, n) of Count
// units of `Unit`: Count = Wide while a whole wide step fits, then Count = 1
// for the rest (a block's last keys or rows, or a last single vector).
template <int64_t Wide, int64_t Unit = 1, typename Step>
void in_steps(int64_t n, Step&& step) {
  int64_t at = 0;
  for (; at + Wide * Unit <= n; at += Wide * Unit) step.template operator()<Wide>(at);
  for (; at < n; at += Unit) step.template operator()<1>(at);
}

// sum over e < n of a[e] * b[e], for n a multiple of kTileCols, in Pieces
// vectors a TileRow.
template <typename T, int64_t Pieces>
T dot(const T* a, const T* b, int64_t n) {
  using Piece = typename TilePiece<T, Pieces>::type;
  constexpr int64_t lanes = kTileCols / Pieces;
  Piece sum[Pieces] = {};
  for (int64_t e = 0; e < n; e += kTileCols) {
    for (int64_t p = 0; p < Pieces; ++p) {
      Piece x, y;
      std::memcpy(&x, a + e + p * lanes, sizeof x);
      std::memcpy(&y, b + e + p * lanes, sizeof y);
      sum[p] += x * y;
    }
  }
  T total = 0;
  for (int64_t c = 0; c < kTileCols; ++c) total += sum[c / lanes][c % lanes];
  return total;
}

// Lane p of the two-vector interleave that swaps the off-diagonal blocks of
// Chunk x Chunk elements between rows a and b = a + Chunk of a square tile:
// `half` 0 gives row a's new value (its even chunks, each followed by b's),
// 1 row b's (the odd chunks).
constexpr int interleaved_lane(int chunk, int half, size_t p) {
  const int at = static_cast<int>(p) / chunk, within = static_cast<int>(p) % chunk;
  return (at / 2 * 2 + half) * chunk + within + (at % 2 != 0 ? static_cast<int>(kTileCols) : 0);
}

// (The vectors by reference: a 64-byte vector passed by value has an ABI of
// its own where AVX-512 is enabled.)
template <int Chunk, int Half, size_t... P>
void interleave(const TileRow<float>& a, const TileRow<float>& b, TileRow<float>& out, std::index_sequence<P...>) {
  out = __builtin_shufflevector(a, b, interleaved_lane(Chunk, Half, P)...);
}

template <int Chunk>
void swap_blocks(TileRow<float> (&tile)[kTileCols]) {
  constexpr auto lanes = std::make_index_sequence<kTileCols>();
  for (int64_t i = 0; i < kTileCols; ++i) {
    if ((i & Chunk) != 0) continue;
    const TileRow<float> a = tile[i], b = tile[i + Chunk];
    interleave<Chunk, 0>(a, b, tile[i], lanes);
    interleave<Chunk, 1>(a, b, tile[i + Chunk], lanes);
  }
}

// out[e * kRowBlock + r] = q[r * q_row + e] * scale for r < rows, and 0 for
// rows <= r < width (a multiple of kTileCols): a block's query rows, scaled
// and transposed. Float features come in whole vectors and are transposed
// kTileCols x kTileCols in registers, four rounds of two-vector shuffles;
// storing one element at a time took a visible share of Whisper's attention.
template <typename T>
void transpose_scaled(const T* q, int64_t q_row, int64_t rows, int64_t width, int64_t E, T scale, T* __restrict out) {
  if constexpr (std::is_same_v<T, float>) {
    if (E % kTileCols == 0) {
      for (int64_t r0 = 0; r0 < width; r0 += kTileCols) {
        for (int64_t e0 = 0; e0 < E; e0 += kTileCols) {
          TileRow<float> tile[kTileCols];
          for (int64_t r = 0; r < kTileCols; ++r) {
            tile[r] = TileRow<float>{};
            if (r0 + r < rows) std::memcpy(&tile[r], q + (r0 + r) * q_row + e0, sizeof tile[r]);
            tile[r] *= scale;
          }
          swap_blocks<1>(tile);
          swap_blocks<2>(tile);
          swap_blocks<4>(tile);
          swap_blocks<8>(tile);
          for (int64_t e = 0; e < kTileCols; ++e)
            std::memcpy(out + (e0 + e) * kRowBlock + r0, &tile[e], sizeof tile[e]);
        }
      }
      return;
    }
  }
  for (int64_t r = 0; r < width; ++r) {
    for (int64_t e = 0; e < E; ++e) out[e * kRowBlock + r] = r < rows ? q[r * q_row + e] * scale : T(0);
  }
}

// Scratch for one task, reused across the tasks of a thread.
template <typename T>
struct Scratch {
  explicit Scratch(const Attention& a)
      : query_t(static_cast<size_t>(a.E * kRowBlock)),
        scores(static_cast<size_t>(a.S * kRowBlock)),
        value(a.Ev % kTileCols == 0 || a.v_rows_padded ? 0 : static_cast<size_t>(a.S * round_up(a.Ev, kTileCols))),
        row(static_cast<size_t>(a.S)),
        sums(static_cast<size_t>(kRowBlock * round_up(a.Ev, kTileCols))) {}
  std::vector<T> query_t, scores, value, row, sums;
  T inverse_sums[kRowBlock];
};

// The kernel keeps scores in base 2 (scale * log2 e * q k^T, a float mask
// times log2 e) and takes their softmax with 2^x, which costs fewer
// multiply-adds than e^x (vec_math.h); the weights are the same.
constexpr double kLog2e = std::numbers::log2e;

// Adds the mask to query row i's scores over keys [0, S), score j at
// s[j * stride], in base 2.
template <typename T>
void apply_mask(const Attention& a, const Tensor& mask, int64_t b, int64_t i, T* s, int64_t stride, int64_t S) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  const int64_t row = a.mask_offsets[b] + i * a.mask_row_stride, step = a.mask_col_stride;
  if (a.bool_mask) {
    const bool* m = mask.data_ptr<const bool>() + row;
    // A row of the mask is mostly True (padding and causal masks): memchr
    // finds its first False (a zero byte) at vector speed, and the scores
    // before it stay as they are.
    const void* first_false = step == 1 ? std::memchr(m, 0, static_cast<size_t>(S)) : m;
    const int64_t from = first_false == nullptr ? S : static_cast<const bool*>(first_false) - m;
    for (int64_t j = from; j < S; ++j) {
      if (!m[j * step]) s[j * stride] = kMinusInf;
    }
  } else {
    const T* m = mask.data_ptr<const T>() + row;
    for (int64_t j = 0; j < S; ++j) s[j * stride] += m[j * step] * static_cast<T>(kLog2e);
  }
}

// Masks query row i's scores (score j at s[j * stride]) by the mask and by causality.
template <typename T>
void mask_row(const Attention& a, const Operands& inputs, int64_t b, int64_t i, T* s, int64_t stride, int64_t S) {
  if (a.has_mask) apply_mask(a, inputs.mask, b, i, s, stride, S);
  if (a.causal) {
    for (int64_t j = i + 1; j < S; ++j) s[j * stride] = -std::numeric_limits<T>::infinity();
  }
}

// Keys [0, n) that some row of query rows [i0, i1) of batch b attends: a
// causal block's end at its last row, a boolean mask's after the last True
// of its rows. The block's products and softmax skip the keys past them,
// whose weights are zero: a causal mask given as a tensor (as exported
// Hugging Face models give it) then costs what is_causal does.
int64_t block_keys(const Attention& a, const Tensor& mask, int64_t b, int64_t i0, int64_t i1) {
  if (a.causal) return std::min(a.S, i1);
  if (!a.bool_mask || a.mask_col_stride == 0) return a.S;
  int64_t keys = 0;
  for (int64_t i = i0; i < i1 && keys < a.S; ++i) {
    const bool* m = mask.data_ptr<const bool>() + a.mask_offsets[b] + i * a.mask_row_stride;
    int64_t end = a.S;
    while (end > keys && !m[end - 1]) --end;
    keys = std::max(keys, end);
  }
  return keys;
}

// Softmax over keys [0, S) of score columns [0, width), in base 2, left unnormalized:
// the product with v is scaled by the inverse sums instead, once per output
// element. A column whose every score is masked gets weights and an inverse
// sum of 0, so its output row is zeros.
template <typename T>
void softmax_columns(T* scores, int64_t S, int64_t width, T* inverse_sums) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  // A vector's columns at a time: loops of a constant kTileCols vectorize whole.
  for (int64_t c0 = 0; c0 < width; c0 += kTileCols) {
    T* column = scores + c0;
    // std::max's loop stays scalar (its NaN order is not a vector max's);
    // the select on whole vectors is one instruction. Four running maxima,
    // over every fourth key each, so that each select need not wait for the
    // one before (with one, the max took much of the softmax's time).
    constexpr int64_t kRunning = 4;
    TileRow<T> running[kRunning];
    for (TileRow<T>& r : running) r = TileRow<T>{} + kMinusInf;
    const auto take = [&](int64_t key, TileRow<T>& r) {
      TileRow<T> x;
      std::memcpy(&x, column + key * kRowBlock, sizeof x);
      r = r < x ? x : r;
    };
    int64_t key = 0;
    for (; key + kRunning <= S; key += kRunning) {
      for (int64_t i = 0; i < kRunning; ++i) take(key + i, running[i]);
    }
    for (; key < S; ++key) take(key, running[0]);
    for (int64_t i = 1; i < kRunning; ++i) running[0] = running[0] < running[i] ? running[i] : running[0];
    T max[kTileCols], sum[kTileCols];
    std::fill_n(sum, kTileCols, T(0));
    for (int64_t c = 0; c < kTileCols; ++c) max[c] = running[0][c] == kMinusInf ? T(0) : running[0][c];
    for (int64_t j = 0; j < S; ++j) {
      for (int64_t c = 0; c < kTileCols; ++c) {
        const T p = fast_exp2(column[j * kRowBlock + c] - max[c]);
        column[j * kRowBlock + c] = p;
        sum[c] += p;
      }
    }
    for (int64_t c = 0; c < kTileCols; ++c) inverse_sums[c0 + c] = sum[c] > 0 ? T(1) / sum[c] : T(0);
  }
}

// Query rows [i0, i1) of batch b: scores, mask, softmax and the product
// with v for one block, its tiles' sums in Pieces vectors a TileRow.
template <typename T, int64_t TileRows, int64_t TileVectors, int64_t Pieces>
void attention_block(const Attention& a, const Operands& inputs, T* out, int64_t b, int64_t i0, int64_t i1,
                     Scratch<T>& scratch) {
  const T* q = inputs.query.data_ptr<const T>() + a.q_offsets[b];
  const T* k = static_cast<const T*>(a.k_data) + a.k_offsets[b];
  const T* v = static_cast<const T*>(a.v_data) + a.v_offsets[b];
  const int64_t E = a.E, Ev = a.Ev, rows = i1 - i0;
  const int64_t S = block_keys(a, inputs.mask, b, i0, i1);
  // Score columns in use: the block's rows, up to whole vectors.
  const int64_t width = round_up(rows, kTileCols);
  const T scale = static_cast<T>(a.scale * kLog2e);
  T* scores = scratch.scores.data();

  if (rows < kTileRows && E % kTileCols == 0) {
    // A row or two (decoding one token): a tile, or a softmax over whole
    // vectors of columns, would be mostly padding. Each score is a dot
    // product along q's and k's contiguous rows, and each row's softmax runs
    // along its own scores.
    T* row = scratch.row.data();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < S; ++j) row[j] = dot<T, Pieces>(q + (i0 + r) * a.q_row, k + j * a.k_row, E) * scale;
      mask_row(a, inputs, b, i0 + r, row, 1, S);
      const T max = row_max(row, S);
      const T shift = max == -std::numeric_limits<T>::infinity() ? T(0) : max;
      for (int64_t j = 0; j < S; ++j) row[j] = fast_exp2(row[j] - shift);
      const double sum = row_sum(row, S);
      scratch.inverse_sums[r] = sum > 0 ? static_cast<T>(1.0 / sum) : T(0);
      for (int64_t j = 0; j < S; ++j) scores[j * kRowBlock + r] = row[j];
    }
  } else {
    T* query_t = scratch.query_t.data();
    transpose_scaled(q + i0 * a.q_row, a.q_row, rows, width, E, scale, query_t);
    // Tiles of score rows [j0, j0 + Rows), columns [c0, c0 + Vectors * kTileCols).
    in_steps<TileVectors, kTileCols>(width, [&]<int64_t Vectors>(int64_t c0) {
      in_steps<TileRows>(S, [&]<int64_t Rows>(int64_t j0) {
        tile_product<T, Rows, Vectors, Pieces>(k + j0 * a.k_row, a.k_row, 1, query_t + c0, kRowBlock, E, Zeros<T>{},
                                               [&](int64_t r, int64_t vector, const TileRow<T>& sums) {
                                                 T* row = scores + (j0 + r) * kRowBlock + c0 + vector * kTileCols;
                                                 std::memcpy(row, &sums, sizeof sums);
                                               });
      });
    });
    for (int64_t r = 0; r < rows; ++r) mask_row(a, inputs, b, i0 + r, scores + r, kRowBlock, S);
    softmax_columns(scores, S, width, scratch.inverse_sums);
  }

  // v with its rows padded to whole vectors, unless they already are.
  const int64_t columns = round_up(Ev, kTileCols);
  const T* value = v;
  int64_t ldv = a.v_row;
  if (!scratch.value.empty()) {
    ldv = columns;
    for (int64_t j = 0; j < S; ++j) {
      std::copy_n(v + j * a.v_row, Ev, scratch.value.data() + j * ldv);
      std::fill(scratch.value.data() + j * ldv + Ev, scratch.value.data() + (j + 1) * ldv, T(0));
    }
    value = scratch.value.data();
  }
  // The product with v, a chunk of keys at a time: every tile of the block
  // reads the chunk's rows of v and of the scores while they are in L1, and
  // sums on from the chunks before it (scratch.sums), in the order of one
  // walk over all the keys. Walking all S keys per tile read v from L2 once
  // per tile, eight times a block on AVX-512: with Whisper's 1500 keys the
  // attention spent a visible share of its time waiting on one load of v.
  const int64_t chunk = std::max<int64_t>(kWideTileRows, kKeyChunkBytes / (columns * int64_t{sizeof(T)}));
  int64_t j0 = 0;
  do {  // once at least, so that a block with no keys to attend writes its zeros
    const int64_t depth = std::min(chunk, S - j0);
    const bool first = j0 == 0, last = j0 + depth == S;
    // Tiles of output rows [r0, r0 + Rows), columns [c0, c0 + Vectors * kTileCols).
    in_steps<TileRows>(rows, [&]<int64_t Rows>(int64_t r0) {
      in_steps<TileVectors, kTileCols>(columns, [&]<int64_t Vectors>(int64_t c0) {
        T* running = scratch.sums.data() + r0 * columns + c0;
        const auto start = [&](int64_t r, int64_t vector, TileRow<T>& sums) {
          if (first) {
            sums = TileRow<T>{};
          } else {
            std::memcpy(&sums, running + r * columns + vector * kTileCols, sizeof sums);
          }
        };
        tile_product<T, Rows, Vectors, Pieces>(
            scores + j0 * kRowBlock + r0, 1, kRowBlock, value + j0 * ldv + c0, ldv, depth, start,
            [&](int64_t r, int64_t vector, const TileRow<T>& sums) {
              if (!last) {
                std::memcpy(running + r * columns + vector * kTileCols, &sums, sizeof sums);
                return;
              }
              const TileRow<T> scaled = sums * scratch.inverse_sums[r0 + r];
              const int64_t from = c0 + vector * kTileCols, count = std::min(kTileCols, Ev - from);
              T* o = out + a.out_offsets[b] + (i0 + r0 + r) * a.out_row + from;
              std::memcpy(o, &scaled, sizeof(T) * static_cast<size_t>(std::max<int64_t>(count, 0)));
            });
      });
    });
    j0 += depth;
  } while (j0 < S);
}

// Copies the `rows` rows of `width` elements of each distinct matrix of an
// operand (matrices at `offsets`, rows `row` apart) into `to`, one matrix
// after another, rows `padded` apart with zeros past `width`, and points
// `offsets` and `row` at the copy.
template <typename T>
void copy_rows(const KernelContext& context, const T* from, std::vector<int64_t>& offsets, int64_t& row, int64_t rows,
               int64_t width, int64_t padded, std::unique_ptr<T[]>& to) {
  std::vector<int64_t> distinct = offsets;  // query heads that share a key head share its copy
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  to = std::make_unique_for_overwrite<T[]>(static_cast<size_t>(static_cast<int64_t>(distinct.size()) * rows * padded));
  const auto copy = [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t j = 0; j < rows; ++j) {
        T* copied = to.get() + (m * rows + j) * padded;
        std::copy_n(from + distinct[m] + j * row, width, copied);
        std::fill(copied + width, copied + padded, T(0));
      }
    }
  };
  parallel_rows(context, static_cast<int64_t>(distinct.size()), rows * width, copy);
  for (int64_t& offset : offsets) {
    offset = (std::lower_bound(distinct.begin(), distinct.end(), offset) - distinct.begin()) * rows * padded;
  }
  row = padded;
}

// Where a batch's keys spread over more memory than this (their rows times
// the stride between them) and several blocks of query rows read them all,
// pack_keys copies them first.
constexpr int64_t kPackedKeysSpanBytes = 1 << 20;

// k and v copied once per call into rows that follow one another, v's
// padded to whole vectors (which spares each block padding them), where
// each batch's keys lie far apart and several blocks of query rows read
// them. In the [batch, sequence, heads, features] layout of attention_bshd,
// Whisper's encoder's 1500 keys of 64 features lie 6 heads apart, 2.3 MB of
// rows for 384 KB of keys: its attention runs faster with the keys one after
// another. BERT-base's 128 keys, 12 heads apart, span 393 KB and stay in
// cache: copying them took more time than it saved. Returns a's plan on the
// copies (held in `k` and `v`), or a's own.
template <typename T>
Attention pack_keys(const KernelContext& context, const Attention& a, const Operands& inputs, std::unique_ptr<T[]>& k,
                    std::unique_ptr<T[]>& v) {
  const int64_t columns = round_up(a.Ev, kTileCols);
  const int64_t span = a.S * std::max(a.k_row, a.v_row) * int64_t{sizeof(T)};
  if (a.L <= kRowBlock || span < kPackedKeysSpanBytes || (a.k_row == a.E && a.v_row == columns)) return a;
  Attention packed = a;
  copy_rows(context, inputs.key.data_ptr<const T>(), packed.k_offsets, packed.k_row, a.S, a.E, a.E, k);
  copy_rows(context, inputs.value.data_ptr<const T>(), packed.v_offsets, packed.v_row, a.S, a.Ev, columns, v);
  packed.k_data = k.get();
  packed.v_data = v.get();
  packed.v_rows_padded = true;
  return packed;
}

template <bool HeadsSecond>
void attention_cpu(const KernelContext& context, const Operands& inputs, const Options& options, const Tensor& output) {
  const Attention planned = plan(inputs, output, options, HeadsSecond);
  const int64_t batches = shape_numel(planned.batch), blocks = (planned.L + kRowBlock - 1) / kRowBlock;
  if (batches * planned.L == 0) return;
  dispatch_floating(output.dtype(), "query", [&](auto zero) {
    using T = decltype(zero);
    T* out = output.data_ptr<T>();
    std::unique_ptr<T[]> k, v;
    const Attention a = pack_keys(context, planned, inputs, k, v);
    const auto run = [&](int64_t begin, int64_t end) {
      Scratch<T> scratch(a);
      dispatch_cpu([&] {
        const bool wide = cpu_capability() == CpuCapability::Avx512;
        for (int64_t task = begin; task < end; ++task) {
          const int64_t b = task / blocks, i0 = task % blocks * kRowBlock, i1 = std::min(i0 + kRowBlock, a.L);
          if (wide) {
            attention_block<T, kWideTileRows, kWideTileVectors, 1>(a, inputs, out, b, i0, i1, scratch);
          } else {
            attention_block<T, kTileRows, kTileVectors, kAvx2Pieces<T>>(a, inputs, out, b, i0, i1, scratch);
          }
        }
      });
    };
    // A task's work: a block's rows times S times (E + Ev) multiply-adds.
    parallel_rows(context, batches * blocks, std::min(kRowBlock, a.L) * a.S * (a.E + a.Ev), run);
  });
}

// Plain loops in double over the whole L x S score matrix of each batch.
template <bool HeadsSecond>
void attention_reference(const KernelContext&, const Operands& inputs, const Options& options, const Tensor& output) {
  const Attention a = plan(inputs, output, options, HeadsSecond);
  dispatch_floating(output.dtype(), "query", [&](auto zero) {
    using T = decltype(zero);
    const T* q = inputs.query.data_ptr<const T>();
    const T* k = inputs.key.data_ptr<const T>();
    const T* v = inputs.value.data_ptr<const T>();
    T* out = output.data_ptr<T>();
    std::vector<double> p(static_cast<size_t>(a.S));
    for (int64_t b = 0; b < shape_numel(a.batch); ++b) {
      for (int64_t i = 0; i < a.L; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < a.S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < a.E; ++e)
            dot += double(q[a.q_offsets[b] + i * a.q_row + e]) * k[a.k_offsets[b] + j * a.k_row + e];
          p[j] = dot * a.scale;
          if (a.has_mask) p[j] += static_cast<double>(mask_value<T>(a, inputs.mask, b, i, j));
          if (a.causal && j > i) p[j] = -std::numeric_limits<double>::infinity();
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < a.S; ++j)
          sum += p[j] = max == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(p[j] - max);
        for (int64_t c = 0; c < a.Ev; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < a.S; ++j) acc += p[j] * v[a.v_offsets[b] + j * a.v_row + c];
          out[a.out_offsets[b] + i * a.out_row + c] = static_cast<T>(sum > 0 ? acc / sum : 0.0);
        }
      }
    }
  });
}

// The typed kernel of both ops (their schemas are the same); dropout_p is
// the shape function's to check.
template <bool HeadsSecond, bool kReference>
void attention_kernel(const KernelContext& context, const Tensor& query, const Tensor& key, const Tensor& value,
                      const Tensor* mask, double, bool is_causal, std::optional<double> scale, bool enable_gqa,
                      const Tensor& out) {
  static const Tensor kNoMask;
  const Operands inputs{query, key, value, mask ? *mask : kNoMask};
  const Options options{is_causal, scale, enable_gqa};
  (kReference ? attention_reference<HeadsSecond> : attention_cpu<HeadsSecond>)(context, inputs, options, out);
}

}  // namespace

void register_attention_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
                    "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, "
                    "bool enable_gqa=False) -> Tensor",
          .shape = attention_shape,
          .cpu = attention_kernel<false, false>,
          .reference = attention_kernel<false, true>});
  define(builtins,
         {.schema = "opgraph::attention_bshd(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
                    "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
          .shape = heads_second_attention_shape,
          .cpu = attention_kernel<true, false>,
          .reference = attention_kernel<true, true>});
}

}  // namespace opgraph::kernels
