// One row times a matrix (batch-1 inference, a recurrent step), or a few
// rows (a batch's decode step), only has to stream the matrix from memory
// once. oneDNN 2.6's matmul runs such a product as a GEMM at a few percent of
// that bandwidth for one row, and on its own copy of the weight for a few,
// so they get their own kernels.
#include "kernels/cpu/engines/few_rows_product.h"
#include "kernels/cpu/engines/dot_panel_tiles.h"
#include "kernels/cpu/engines/panel_tiles.h"
#include "kernels/cpu/engines/product_epilogue.h"
#include "kernels/cpu/util/bfloat16.h"
#include "kernels/cpu/util/prepared_weights.h"

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <type_traits>
#include <vector>

#include "opgraph/core/cpu_capability.h"

// opgraph builds for baseline x86-64: each kernel is also compiled for
// AVX-512 and for x86-64-v3 (AVX2 with FMA), and the loader picks the one the
// CPU runs. Clang cannot clone templates: a clang build (the fuzzer's) keeps
// the baseline copy only.
#if defined(__clang__)
#define OPGRAPH_ROW_KERNEL_CLONES
#else
#define OPGRAPH_ROW_KERNEL_CLONES [[gnu::target_clones("avx512f", "arch=x86-64-v3", "default")]]
#endif

namespace opgraph::kernels {
namespace {

// out[r] += a . w[r * row_stride, ...] for Rows rows of w at once, sharing the
// loads of a, in lane-wise partial sums that GCC vectorizes without
// reassociating floats. 32 lanes a row keep several vectors of sums in
// flight per row: with 16, each row's sums wait on the latency of the
// previous multiply-add, and the MLP's 784 x 512 and 512 x 512 products took
// 40% longer. Eight lanes at a time then cover most of the rest.
template <int Rows>
OPGRAPH_ROW_KERNEL_CLONES void dots(const float* a, const float* w, int64_t row_stride, int64_t n, float* out) {
  constexpr int kLanes = 32, kTailLanes = 8;
  float partial[Rows][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int r = 0; r < Rows; ++r) {
      for (int l = 0; l < kLanes; ++l) partial[r][l] += a[i + l] * w[r * row_stride + i + l];
    }
  }
  for (; i + kTailLanes <= n; i += kTailLanes) {
    for (int r = 0; r < Rows; ++r) {
      for (int l = 0; l < kTailLanes; ++l) partial[r][l] += a[i + l] * w[r * row_stride + i + l];
    }
  }
  for (int r = 0; r < Rows; ++r) {
    float sum = 0;
    for (int64_t tail = i; tail < n; ++tail) sum += a[tail] * w[r * row_stride + tail];
    for (float v : partial[r]) sum += v;
    out[r] += sum;
  }
}

// y[i] += sum_r a[r] * w[r * row_stride + i] over Rows rows of w per pass:
// with several rows, y's loads and stores no longer bound the loop and the
// prefetcher has several streams to fetch (a third of the time of one row
// per pass on a 4096 x 4096 matrix).
template <int Rows>
OPGRAPH_ROW_KERNEL_CLONES void axpys(const float* a, const float* w, int64_t row_stride, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0;
    for (int r = 0; r < Rows; ++r) sum += a[r] * w[r * row_stride + i];
    y[i] += sum;
  }
}

// How far ahead of its loads panel_sums asks for the weight's cache lines,
// where the weights stream from memory: a decode step's float32 products
// took 8% less time with it. Past a panel's end lies the next panel, or the
// next weight (streamed_buffer), or nothing: a prefetch never faults.
// Weights that stay in the caches from one call to the next (a recurrent
// step's) are not prefetched: there the prefetches only took load slots,
// and a 2-layer LSTM's step 10% longer.
constexpr int64_t kPrefetchBytes = 16384, kLineBytes = 64;
constexpr size_t kCachedWeightBytes = size_t{64} << 20;

// y[j] += sum_q a[q] * panel[q * Width + j], the sums in q's order: the
// one-row product where the CPU has neither AVX2 nor AVX-512 (panel_tiles.h
// runs it where the CPU has either).
template <int Width, bool Prefetch>
OPGRAPH_ROW_KERNEL_CLONES void panel_sums(const float* a, const float* panel, int64_t k, float* y) {
  constexpr int64_t ahead = kPrefetchBytes / sizeof(float), per_line = kLineBytes / sizeof(float);
  float sums[Width] = {};
  for (int64_t q = 0; q < k; ++q) {
    const float* row = panel + q * Width;
    if constexpr (Prefetch) {
      for (int64_t line = 0; line < Width; line += per_line) __builtin_prefetch(row + ahead + line);
    }
    for (int j = 0; j < Width; ++j) sums[j] += a[q] * row[j];
  }
  for (int j = 0; j < Width; ++j) y[j] += sums[j];
}

template <int Width, bool Prefetch>
OPGRAPH_ROW_KERNEL_CLONES void panel_sums(const float* a, const BFloat16* panel, int64_t k, float* y) {
  constexpr int64_t group = pair_group(Width), half = group / 2;
  constexpr int64_t ahead = kPrefetchBytes / sizeof(uint32_t), per_line = kLineBytes / sizeof(uint32_t);
  static_assert(Width % group == 0 && sizeof(BFloat16) == 2);
  // The words as words (a type that may alias the bfloat16 it is read from):
  // copied into an array first, the sums went through memory too.
  using Word [[gnu::may_alias]] = uint32_t;
  float sums[Width] = {};
  for (int64_t q = 0; q < k; ++q) {
    const Word* row = reinterpret_cast<const Word*>(panel + q * Width);
    if constexpr (Prefetch) {
      for (int64_t line = 0; line < Width / 2; line += per_line) __builtin_prefetch(row + ahead + line);
    }
    for (int64_t g = 0; g < Width; g += group) {
      for (int64_t j = 0; j < half; ++j) {
        const uint32_t pair = row[g / 2 + j];
        sums[g + j] += a[q] * std::bit_cast<float>(pair << 16);
        sums[g + half + j] += a[q] * std::bit_cast<float>(pair & 0xffff0000u);
      }
    }
  }
  for (int j = 0; j < Width; ++j) y[j] += sums[j];
}

// dst[j] += the sums over rows [q0, q1) of w for panels [first, last), in
// the order the product asks for.
template <bool Prefetch, typename Element>
void add_panel_sums(const Panels<Element>& panels, const float* a, int64_t first, int64_t last, int64_t q0, int64_t q1,
                    bool backward, float* dst) {
  for (int64_t step = 0; step < last - first; ++step) {
    const int64_t i = backward ? last - 1 - step : first + step;
    const int64_t j = panels.column(i);
    const Element* rows = panels.panel(i) + q0 * panels.width(i);
    if (i < panels.full) {
      panel_sums<kPanel, Prefetch>(a + q0, rows, q1 - q0, dst + j);
      continue;
    }
    float strip[kStrip] = {};  // the last strip's padding columns land here too
    panel_sums<kStrip, Prefetch>(a + q0, rows, q1 - q0, strip);
    for (int64_t c = j; c < panels.column(i + 1); ++c) dst[c] += strip[c - j];
  }
}

// Rows [r0, r1) of p's product.
Product rows_of(Product p, int64_t r0, int64_t r1) {
  const auto slice = [&](Operand& o) {
    const size_t rank = o.shape.size();
    o.data = static_cast<float*>(o.data) + r0 * rows_apart(o);
    if (o.shape[rank - 2] != 1) o.shape[rank - 2] = r1 - r0;
  };
  slice(p.a);
  slice(p.dst);
  if (p.bias) slice(*p.bias);
  if (p.multiplier) slice(*p.multiplier);
  return p;
}

// Below this many columns per thread, a product whose weights stream from
// memory has its threads split its rows instead of its columns: a decode
// step's 576-column products split by columns gave one of two threads 384
// columns and the other 192 (whole panels), and its 192-column ones ran on
// one thread. (A recurrent step's weights, which stay in the caches, keep
// the split by columns: split by rows, a GRU's step took a quarter longer.)
constexpr int64_t kColumnsPerThread = 4 * kPanel;

// The fewest multiply-adds worth a thread of their own.
constexpr int64_t kChunkWork = int64_t{1} << 16;

// p's product, of at most kMaxPanelRows rows (one where the CPU does not run
// add_panel_rows), on w's panels.
template <typename Element>
void panels_product(const KernelContext& context, const Product& p, const Panels<Element>& panels) {
  const size_t rank = p.dst.shape.size();
  const int64_t m = p.dst.shape[rank - 2], k = panels.k, n = panels.n;
  const auto* a = static_cast<const float*>(p.a.data);
  auto* dst = static_cast<float*>(p.dst.data);
  const int64_t a_stride = p.a.strides[rank - 2], dst_stride = p.dst.strides[rank - 2];
  const bool from_memory = streamed_bytes() > kCachedWeightBytes;
  // Dot panels multiply a's rows quantized once for every thread.
  const QuantizedActivations levels =
      kIsDotElement<Element> ? quantized_activations(a, a_stride, m, k) : QuantizedActivations{};
  const auto sums = [&](int64_t i0, int64_t i1, int64_t q0, int64_t q1, float* to, int64_t to_stride) {
    if constexpr (kIsDotElement<Element>) {
      return add_dot_panel_rows(panels, levels, m, i0, i1, q0, q1, p.w_backward, from_memory, to, to_stride);
    }
    // On AVX2 and AVX-512 every row count runs on the tiles, one row
    // included: a decode step took up to 16% less time so than on
    // panel_sums (bfloat16 Qwen2.5-0.5B, AVX-512), and a row's bits do not
    // depend on the build's contraction of panel_sums' multiply-adds.
    if (runs_panel_rows()) {
      add_panel_rows(panels, a, a_stride, m, i0, i1, q0, q1, p.w_backward, from_memory, to, to_stride);
    } else if constexpr (std::is_same_v<Element, float> || std::is_same_v<Element, BFloat16>) {
      if (from_memory) {
        add_panel_sums<true>(panels, a, i0, i1, q0, q1, p.w_backward, to);
      } else {
        add_panel_sums<false>(panels, a, i0, i1, q0, q1, p.w_backward, to);
      }
    }
  };
  const int64_t threads = std::min<int64_t>(context.pool->num_threads(), k * n / kChunkWork);
  if (from_memory && threads > 1 && n < kColumnsPerThread * threads) {
    // Each thread sums its share of the rows of w for every column (whole
    // blocks of them on Dot panels); the shares are added in the threads'
    // order.
    const int64_t unit = kIsDotElement<Element> ? kDotBlock : 1, units = k / unit;
    std::vector<float> partial(static_cast<size_t>(threads * m * n), 0.0f);
    context.pool->parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t q0 = units * t / threads * unit, q1 = units * (t + 1) / threads * unit;
        sums(0, panels.count(), q0, q1, partial.data() + t * m * n, n);
      }
    });
    start_rows(p, m, 0, n);
    for (int64_t t = 0; t < threads; ++t) {
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) dst[r * dst_stride + j] += partial[(t * m + r) * n + j];
      }
    }
    finish_rows(p, m, 0, n);
    return;
  }
  // Split by columns, each chunk taking the panels that start in its
  // columns: split by panels, a 576-column product's two threads got four
  // full panels and four strips, 512 columns against 64.
  const int64_t chunk_columns = std::max<int64_t>(1, kChunkWork / std::max<int64_t>(k, 1));
  context.pool->parallel_for(0, n, chunk_columns, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = panels.first_from(c0), i1 = panels.first_from(c1);
    if (i0 == i1) return;
    const int64_t j0 = panels.column(i0), j1 = panels.column(i1);
    start_rows(p, m, j0, j1);
    sums(i0, i1, 0, k, dst, dst_stride);
    finish_rows(p, m, j0, j1);
  });
}

// p's product on the panels, `block` rows at a time (a prompt's rows): a
// quantized weight has no other layout, and ProductEngine::Panels asks for it.
template <typename Element>
void panels_product_in_blocks(const KernelContext& context, const Product& p, const Panels<Element>& panels,
                              int64_t block = kMaxPanelRows) {
  const int64_t m = p.dst.shape[p.dst.shape.size() - 2];
  for (int64_t r = 0; r < m; r += block) panels_product(context, rows_of(p, r, std::min(m, r + block)), panels);
}

}  // namespace

bool runs_on_dot_panels(const KernelContext& context, int64_t k) {
  return weight_quantization(context).int8_activations && runs_panel_rows() && k % kDotBlock == 0;
}

// dst[r, j] = f(bias[r, j] (+ dst[r, j]) + sum_q a[r, q] * w[q, j]) (* multiplier[r, j])
// for one row a, when a and dst are contiguous and w is a Session's weight
// (packed into panels), or has contiguous rows (w[q, :]) or columns
// (w[:, j]); or for a few rows on the panels, each row's sums as alone.
bool few_rows_times_matrix(const KernelContext& context, const Product& p, bool any_rows) {
  const size_t rank = p.dst.shape.size();
  const int64_t m = p.dst.shape[rank - 2], k = p.a.shape.back(), n = p.dst.shape.back();
  if (shape_numel(p.dst.shape) != m * n || p.a.strides.back() != 1 || p.dst.strides.back() != 1) return false;
  const int64_t row_stride = p.w.strides[rank - 2], column_stride = p.w.strides[rank - 1];
  const bool packed = p.constant_w && prepared_weights(context) != nullptr;
  const int bits = packed ? weight_quantization(context).bits : 0;
  const bool quantized = bits != 0, dot = quantized && runs_on_dot_panels(context, k);
  const bool bfloat16 = packed && !quantized && weight_precision(context) == Precision::BFloat16;
  if (quantized) {
    // The Session checked for AVX2 or AVX-512 at load; a lowered capability since is refused here.
    OPGRAPH_CHECK(runs_panel_rows(), "weights int", bits, ": needs AVX2 and FMA or AVX-512, and the CPU capability is ",
                  cpu_capability_name(cpu_capability()));
  }
  const int64_t most_rows = bfloat16 ? kMaxBFloat16PanelRows : kMaxPanelRows;
  const bool forced = packed && runs_panel_rows() && (any_rows || product_engine(context) == ProductEngine::Panels);
  if (m > 1 && !quantized && !forced && !(packed && m <= most_rows && runs_panel_rows())) return false;
  const bool columns = column_stride == 1 || n == 1, rows = row_stride == 1 || k == 1;
  if (!packed && !columns && !rows) return false;
  const auto* a = static_cast<const float*>(p.a.data);
  const auto* w = static_cast<const float*>(p.w.data);
  auto* dst = static_cast<float*>(p.dst.data);
  if (dot && bits == 8) {
    panels_product_in_blocks(context, p, packed_panels<DotInt8>(context, w, k, n, row_stride, column_stride));
  } else if (dot) {
    panels_product_in_blocks(context, p, packed_panels<DotInt4>(context, w, k, n, row_stride, column_stride));
  } else if (bits == 8) {
    panels_product_in_blocks(context, p, packed_panels<int8_t>(context, w, k, n, row_stride, column_stride));
  } else if (bits == 4) {
    panels_product_in_blocks(context, p, packed_panels<Int4Pair>(context, w, k, n, row_stride, column_stride));
  } else if (bfloat16) {
    panels_product_in_blocks(context, p, packed_panels<BFloat16>(context, w, k, n, row_stride, column_stride),
                             most_rows);
  } else if (packed) {
    panels_product_in_blocks(context, p, packed_panels<float>(context, w, k, n, row_stride, column_stride));
  }
  if (packed) return true;
  const auto chunk = [&](int64_t j0, int64_t j1) {
    start_rows(p, m, j0, j1);
    if (rows) {  // w[:, j] contiguous: dot products, four outputs at a time
      int64_t j = j0;
      // Eight rows at once where AVX-512's 32 registers hold their sums (6%
      // faster on the MLP's products), four where AVX2's 16 do.
      if (cpu_capability() == CpuCapability::Avx512) {
        for (; j + 8 <= j1; j += 8) dots<8>(a, w + j * column_stride, column_stride, k, dst + j);
      }
      for (; j + 4 <= j1; j += 4) dots<4>(a, w + j * column_stride, column_stride, k, dst + j);
      for (; j < j1; ++j) dots<1>(a, w + j * column_stride, column_stride, k, dst + j);
    } else {  // w[q, :] contiguous: dst += a[q] * w[q, :], eight rows at a time
      int64_t q = 0;
      for (; q + 8 <= k; q += 8) axpys<8>(a + q, w + q * row_stride + j0, row_stride, dst + j0, j1 - j0);
      for (; q < k; ++q) axpys<1>(a + q, w + q * row_stride + j0, row_stride, dst + j0, j1 - j0);
    }
    finish_rows(p, m, j0, j1);
  };
  context.pool->parallel_for(0, n, std::max<int64_t>(1, kChunkWork / std::max<int64_t>(k, 1)), chunk);
  return true;
}

bool quantized_rows_product(const KernelContext& context, const Product& p, const QuantizedRows& w) {
  const size_t rank = p.dst.shape.size();
  const int64_t m = p.dst.shape[rank - 2];
  if (!runs_panel_rows() || shape_numel(p.dst.shape) != m * w.n || p.a.strides.back() != 1 ||
      p.dst.strides.back() != 1) {
    return false;
  }
  std::shared_ptr<const void> kept;
  const bool dot = runs_on_dot_panels(context, w.k);
  if (dot && w.bits == 8) {
    panels_product_in_blocks(context, p, packed_panels<DotInt8>(context, w, kept));
  } else if (dot) {
    panels_product_in_blocks(context, p, packed_panels<DotInt4>(context, w, kept));
  } else if (w.bits == 8) {
    panels_product_in_blocks(context, p, packed_panels<int8_t>(context, w, kept));
  } else {
    panels_product_in_blocks(context, p, packed_panels<Int4Pair>(context, w, kept));
  }
  return true;
}

}  // namespace opgraph::kernels
