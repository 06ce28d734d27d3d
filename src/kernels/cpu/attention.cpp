// aten::scaled_dot_product_attention: softmax(q @ k^T * scale + mask) @ v.
//
// The fast kernel is fused: each task takes one (batch, head) and a block of
// kRowBlock query rows, and holds only that block's scores (kRowBlock x S),
// never the whole L x S matrix, from the product through the mask and the
// softmax to the product with v. Both products run on small register tiles
// whose vectors lie along the key positions (the scores) and along v's
// columns (the output), so they vectorize without reordering any sum. A row
// whose every score is masked comes out as zeros, as PyTorch's does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_dispatch.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rows.h"
#include "kernels/cpu/shape_checks.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// Query rows per task: enough rows to reuse each column of k^T from cache,
// few enough that the block of scores stays in L2 for long sequences.
constexpr int64_t kRowBlock = 32;

// The problem as the kernels see it. Batch dims (all but the last two) are
// broadcast across query, key, value and mask; each operand's matrices start
// at its own offsets[b] for the flat batch index b.
struct Attention {
  Shape batch;
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  std::vector<int64_t> q_offsets, k_offsets, v_offsets, mask_offsets;
  int64_t mask_row_stride = 0, mask_col_stride = 0;  // 0 along a dim the mask is broadcast over
  bool has_mask = false, bool_mask = false, causal = false;
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

std::vector<TensorMeta> attention_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta &query = *inputs[0], &key = *inputs[1], &value = *inputs[2];
  const TensorMeta* mask = inputs[3];
  check_floating(query, "query");
  for (auto [t, name] : {std::pair{&query, "query"}, {&key, "key"}, {&value, "value"}}) {
    OPGRAPH_CHECK(t->dim() >= 2, name, ": expected rank 2 or more (..., sequence, features), got ", t->str());
    OPGRAPH_CHECK(t->dtype == query.dtype, name, ": expected ", dtype_name(query.dtype), " like query, got ", t->str());
  }
  OPGRAPH_CHECK(key.shape.back() == query.shape.back(), "key: expected ", query.shape.back(),
                " features (dim -1) like query ", query.str(), ", got ", key.str());
  OPGRAPH_CHECK(value.shape.end()[-2] == key.shape.end()[-2], "value: expected ", key.shape.end()[-2],
                " positions (dim -2) like key ", key.str(), ", got ", value.str());
  OPGRAPH_CHECK(attrs.get<double>("dropout_p") == 0.0, "dropout_p: expected 0.0 (inference), got ",
                attrs.get<double>("dropout_p"));
  const bool gqa = attrs.get<bool>("enable_gqa");
  const char* names[] = {"query", "key", "value"};
  Shape shape = broadcast_batch(inputs.first(3), names, gqa);
  const int64_t L = query.shape.end()[-2], S = key.shape.end()[-2];
  if (mask != nullptr) {
    OPGRAPH_CHECK(!attrs.get<bool>("is_causal"), "attn_mask: expected None when is_causal is True, got ", mask->str());
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
  return {{query.dtype, std::move(shape)}};
}

// Where each batch's matrix of `t` starts, for every flat index over `batch`;
// `group` > 1 maps query head h to the operand's head h / group.
std::vector<int64_t> batch_offsets(const Shape& t_shape, const Shape& batch, int64_t group) {
  const size_t rank = batch.size();
  const int64_t own_rank = static_cast<int64_t>(t_shape.size());
  int64_t matrix = 1;
  for (int64_t d = std::max<int64_t>(own_rank - 2, 0); d < own_rank; ++d) matrix *= t_shape[d];
  // The operand's strides along the broadcast batch dims, 0 where it has extent 1.
  std::vector<int64_t> strides(rank, 0), extents(rank, 1);
  int64_t stride = matrix;
  for (int64_t i = 1; i <= own_rank - 2; ++i) {
    const int64_t extent = t_shape[own_rank - 2 - i];
    extents[rank - i] = extent;
    if (extent != 1) strides[rank - i] = stride;
    stride *= extent;
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

Attention plan(std::span<const Tensor> inputs, const Tensor& out, const Attrs& attrs) {
  const Tensor &query = inputs[0], &key = inputs[1], &value = inputs[2], &mask = inputs[3];
  Attention a;
  a.batch = Shape(out.shape().begin(), out.shape().end() - 2);
  a.L = query.shape().end()[-2];
  a.S = key.shape().end()[-2];
  a.E = query.shape().back();
  a.Ev = value.shape().back();
  const int64_t heads = a.batch.empty() ? 1 : a.batch.back();
  const auto group = [&](const Tensor& t) {
    const bool gqa = attrs.get<bool>("enable_gqa") && t.dim() >= 3 && t.shape().end()[-3] != heads;
    return gqa ? heads / t.shape().end()[-3] : 1;
  };
  a.q_offsets = batch_offsets(query.shape(), a.batch, 1);
  a.k_offsets = batch_offsets(key.shape(), a.batch, group(key));
  a.v_offsets = batch_offsets(value.shape(), a.batch, group(value));
  a.has_mask = mask.defined();
  if (a.has_mask) {
    a.bool_mask = mask.dtype() == DType::Bool;
    // The mask as [batch..., L, S] with leading 1s, so that batch_offsets reads it.
    Shape padded(a.batch.size() + 2 - static_cast<size_t>(mask.dim()), 1);
    padded.insert(padded.end(), mask.shape().begin(), mask.shape().end());
    a.mask_offsets = batch_offsets(padded, a.batch, 1);
    const int64_t rows = padded.end()[-2], cols = padded.back();
    a.mask_col_stride = cols == 1 ? 0 : 1;
    a.mask_row_stride = rows == 1 ? 0 : cols;
  }
  a.causal = attrs.get<bool>("is_causal");
  const AttrValue& scale = attrs.get("scale");
  a.scale = std::holds_alternative<double>(scale) ? std::get<double>(scale) : 1.0 / std::sqrt(double(a.E));
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

// The two products run on register tiles of TileRows rows by kTileCols
// columns: each vector of k^T (or v) loaded feeds TileRows multiply-adds,
// and the accumulators stay in registers across the sum. Eight rows keep the
// eight independent sums in flight that two FMA units of four cycles'
// latency need, in AVX-512's 32 registers (twice the speed of four rows on
// ViT-B's and BERT's attention); AVX2's 16 registers hold four rows of
// two vectors each, and eight spill.
constexpr int64_t kWideTileRows = 8, kTileRows = 4;
constexpr int64_t kTileCols = 16;

int64_t round_up(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// The row stride of a scratch matrix of `cols` columns: whole tiles, and an odd
// number of cache lines so that the rows a transposition writes in turn do
// not all fall into the same cache set (a 4 KiB stride thrashes L1).
int64_t padded_stride(int64_t cols) {
  const int64_t stride = round_up(std::max<int64_t>(cols, 1), kTileCols);
  return stride / kTileCols % 2 == 0 ? stride + kTileCols : stride;
}

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

// c[r] = sum over k < depth of a[r * lda + k] * b[k * ldb + (0, kTileCols)], for TileRows rows.
template <typename T, int64_t TileRows>
void tile_product(const T* a, int64_t lda, const T* b, int64_t ldb, int64_t depth, TileRow<T> (&c)[TileRows]) {
  for (TileRow<T>& row : c) row = TileRow<T>{};
  for (int64_t k = 0; k < depth; ++k) {
    TileRow<T> bk;
    std::memcpy(&bk, b + k * ldb, sizeof bk);
    for (int64_t r = 0; r < TileRows; ++r) c[r] += a[r * lda + k] * bk;
  }
}

// sum over e < n of a[e] * b[e], for n a multiple of kTileCols.
template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  TileRow<T> sum{};
  for (int64_t e = 0; e < n; e += kTileCols) {
    TileRow<T> x, y;
    std::memcpy(&x, a + e, sizeof x);
    std::memcpy(&y, b + e, sizeof y);
    sum += x * y;
  }
  T total = 0;
  for (int64_t c = 0; c < kTileCols; ++c) total += sum[c];
  return total;
}

// Scratch for one task, reused across the tasks of a thread.
template <typename T>
struct Scratch {
  Scratch(const Attention& a)
      : ldk(padded_stride(a.S)),
        ldv(padded_stride(a.Ev)),
        query(static_cast<size_t>(kRowBlock * a.E)),
        key_t(static_cast<size_t>(a.E * ldk)),
        scores(static_cast<size_t>(kRowBlock * ldk)),
        value(a.Ev % kTileCols == 0 ? 0 : static_cast<size_t>(a.S * ldv)),
        inverse_sums(kRowBlock) {}
  int64_t ldk, ldv;
  // key_t holds keys [0, keys_transposed) of the k matrix at `keys`,
  // transposed: the next block of queries on the same keys (the same batch,
  // or another head of a group in grouped-query attention) reuses them.
  // Transposing k for each block of 32 queries took half of Whisper's
  // attention over 1500 positions.
  const void* keys = nullptr;
  int64_t keys_transposed = 0;
  std::vector<T> query, key_t, scores, value, inverse_sums;
};

// Adds the mask to one row of scores over keys [0, S).
template <typename T>
void apply_mask(const Attention& a, const Tensor& mask, int64_t b, int64_t i, T* s, int64_t S) {
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();
  const int64_t row = a.mask_offsets[b] + i * a.mask_row_stride;
  if (a.bool_mask) {
    const bool* m = mask.data_ptr<const bool>() + row;
    if (a.mask_col_stride == 0) {
      if (!m[0]) std::fill(s, s + S, kMinusInf);
    } else {
      for (int64_t j = 0; j < S; ++j) s[j] = m[j] ? s[j] : kMinusInf;
    }
  } else {
    const T* m = mask.data_ptr<const T>() + row;
    const int64_t step = a.mask_col_stride;
    for (int64_t j = 0; j < S; ++j) s[j] += m[j * step];
  }
}

// Query rows [i0, i1) of batch b: scores, mask, softmax and the product
// with v for one block.
template <typename T, int64_t TileRows>
void attention_block(const Attention& a, std::span<const Tensor> inputs, T* out, int64_t b, int64_t i0, int64_t i1,
                     Scratch<T>& scratch) {
  const T* q = inputs[0].data_ptr<const T>() + a.q_offsets[b];
  const T* k = inputs[1].data_ptr<const T>() + a.k_offsets[b];
  const T* v = inputs[2].data_ptr<const T>() + a.v_offsets[b];
  const int64_t E = a.E, Ev = a.Ev, ldk = scratch.ldk, rows = i1 - i0;
  const int64_t tile_rows = round_up(rows, TileRows);
  // A causal block sees keys up to its last row only: the rest are masked.
  const int64_t S = a.causal ? std::min(a.S, i1) : a.S;
  constexpr T kMinusInf = -std::numeric_limits<T>::infinity();

  // The block's query rows, scaled, and zero rows up to whole tiles.
  T* query = scratch.query.data();
  for (int64_t r = 0; r < tile_rows; ++r) {
    for (int64_t e = 0; e < E; ++e) query[r * E + e] = r < rows ? q[(i0 + r) * E + e] * static_cast<T>(a.scale) : 0;
  }
  T* scores = scratch.scores.data();
  TileRow<T> tile[TileRows];
  if (rows < kTileRows && E % kTileCols == 0) {
    // A row or two (decoding one token): transposing k would cost more than
    // the product. Each score is a dot product along k's contiguous rows.
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < S; ++j) scores[r * ldk + j] = dot(query + r * E, k + j * E, E);
    }
  } else {
    // k^T, so that score tiles read contiguous rows of it.
    T* key_t = scratch.key_t.data();
    if (scratch.keys != k) {
      scratch.keys = k;
      scratch.keys_transposed = 0;
    }
    for (int64_t j = scratch.keys_transposed; j < S; ++j) {
      for (int64_t e = 0; e < E; ++e) key_t[e * ldk + j] = k[j * E + e];
    }
    for (int64_t e = 0; e < E; ++e) std::fill(key_t + e * ldk + S, key_t + e * ldk + round_up(S, kTileCols), T(0));
    scratch.keys_transposed = S;  // the zeros may have overwritten keys past S
    for (int64_t r0 = 0; r0 < tile_rows; r0 += TileRows) {
      for (int64_t j0 = 0; j0 < S; j0 += kTileCols) {
        tile_product(query + r0 * E, E, key_t + j0, ldk, E, tile);
        for (int64_t r = 0; r < TileRows; ++r) std::memcpy(scores + (r0 + r) * ldk + j0, &tile[r], sizeof tile[r]);
      }
    }
  }

  // Softmax over each row, left unnormalized: the product with v is scaled
  // by the inverse sum instead, once per output element.
  for (int64_t r = 0; r < tile_rows; ++r) {
    T* s = scores + r * ldk;
    const int64_t i = i0 + r;
    if (r < rows && a.has_mask) apply_mask(a, inputs[3], b, i, s, S);
    if (r < rows && a.causal) std::fill(s + std::min(i + 1, S), s + S, kMinusInf);
    const T max = r < rows ? row_max(s, S) : kMinusInf;
    if (max == kMinusInf) {  // every position masked (or a padding row): zeros
      std::fill(s, s + S, T(0));
      scratch.inverse_sums[r] = 0;
      continue;
    }
    for (int64_t j = 0; j < S; ++j) s[j] = fast_exp(s[j] - max);
    scratch.inverse_sums[r] = static_cast<T>(1.0 / row_sum(s, S));
  }

  // v with its rows padded to whole tiles, unless they already are.
  const T* value = v;
  int64_t ldv = Ev;
  if (!scratch.value.empty()) {
    ldv = scratch.ldv;
    for (int64_t j = 0; j < S; ++j) {
      std::copy_n(v + j * Ev, Ev, scratch.value.data() + j * ldv);
      std::fill(scratch.value.data() + j * ldv + Ev, scratch.value.data() + j * ldv + round_up(Ev, kTileCols), T(0));
    }
    value = scratch.value.data();
  }
  for (int64_t r0 = 0; r0 < tile_rows; r0 += TileRows) {
    for (int64_t c0 = 0; c0 < Ev; c0 += kTileCols) {
      tile_product(scores + r0 * ldk, ldk, value + c0, ldv, S, tile);
      for (int64_t r = 0; r < std::min(TileRows, rows - r0); ++r) {
        T* o = out + (b * a.L + i0 + r0 + r) * Ev + c0;
        const T inverse = scratch.inverse_sums[r0 + r];
        for (int64_t c = 0; c < std::min(kTileCols, Ev - c0); ++c) o[c] = tile[r][c] * inverse;
      }
    }
  }
}

void attention_cpu(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   const Attrs& attrs) {
  const Attention a = plan(inputs, outputs[0], attrs);
  const int64_t batches = shape_numel(a.batch), blocks = (a.L + kRowBlock - 1) / kRowBlock;
  if (batches * a.L == 0) return;
  dispatch_floating(outputs[0].dtype(), "query", [&](auto zero) {
    using T = decltype(zero);
    T* out = outputs[0].data_ptr<T>();
    const auto run = [&](int64_t begin, int64_t end) {
      Scratch<T> scratch(a);
      dispatch_cpu([&] {
        const bool wide = cpu_capability() == CpuCapability::Avx512;
        for (int64_t task = begin; task < end; ++task) {
          const int64_t b = task / blocks, i0 = task % blocks * kRowBlock, i1 = std::min(i0 + kRowBlock, a.L);
          if (wide) {
            attention_block<T, kWideTileRows>(a, inputs, out, b, i0, i1, scratch);
          } else {
            attention_block<T, kTileRows>(a, inputs, out, b, i0, i1, scratch);
          }
        }
      });
    };
    // A task's work: a block's rows times S times (E + Ev) multiply-adds.
    parallel_rows(context, batches * blocks, std::min(kRowBlock, a.L) * a.S * (a.E + a.Ev), run);
  });
}

// Plain loops in double over the whole L x S score matrix of each batch.
void attention_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                         const Attrs& attrs) {
  const Attention a = plan(inputs, outputs[0], attrs);
  dispatch_floating(outputs[0].dtype(), "query", [&](auto zero) {
    using T = decltype(zero);
    const T* q = inputs[0].data_ptr<const T>();
    const T* k = inputs[1].data_ptr<const T>();
    const T* v = inputs[2].data_ptr<const T>();
    T* out = outputs[0].data_ptr<T>();
    std::vector<double> p(static_cast<size_t>(a.S));
    for (int64_t b = 0; b < shape_numel(a.batch); ++b) {
      for (int64_t i = 0; i < a.L; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < a.S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < a.E; ++e)
            dot += double(q[a.q_offsets[b] + i * a.E + e]) * k[a.k_offsets[b] + j * a.E + e];
          p[j] = dot * a.scale;
          if (a.has_mask) p[j] += static_cast<double>(mask_value<T>(a, inputs[3], b, i, j));
          if (a.causal && j > i) p[j] = -std::numeric_limits<double>::infinity();
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < a.S; ++j)
          sum += p[j] = max == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp(p[j] - max);
        for (int64_t c = 0; c < a.Ev; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < a.S; ++j) acc += p[j] * v[a.v_offsets[b] + j * a.Ev + c];
          out[(b * a.L + i) * a.Ev + c] = static_cast<T>(sum > 0 ? acc / sum : 0.0);
        }
      }
    }
  });
}

}  // namespace

void register_attention_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
                    "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, float? scale=None, "
                    "bool enable_gqa=False) -> Tensor",
          .shape = attention_shape,
          .cpu = attention_cpu,
          .reference = attention_reference});
}

}  // namespace opgraph::kernels
