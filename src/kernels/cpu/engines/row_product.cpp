// One row times a matrix (batch-1 inference, a recurrent step) only has to
// stream the matrix from memory once. oneDNN 2.6's matmul runs such a
// product as a GEMM at a few percent of that bandwidth, so it gets its own
// kernels.
#include "kernels/cpu/engines/row_product.h"
#include "kernels/cpu/util/prepared_weights.h"

#include <algorithm>
#include <memory>

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

// A Session's weight for one-row products, packed once into panels of
// columns: full panels of kPanel columns, then strips of kStrip for the
// columns left, the last strip padded with zero columns. Each panel is a
// contiguous [k, width] block, so a panel's sums stay in registers while its
// block streams in one sequential run. Read in place, eight rows of w at a
// time, an LSTM-256 step's 256 x 1024 product took 8.9 us; packed, 7.0 us
// (6.0 us where the steps alternate directions, see Product::w_backward).
constexpr int64_t kPanel = 128, kStrip = 16;

struct Panels {
  const float* data;
  int64_t k, n, full;  // full: the count of kPanel-wide panels

  int64_t count() const { return full + (n - full * kPanel + kStrip - 1) / kStrip; }
  // The first column of panel i (the column past the last for i = count()).
  int64_t column(int64_t i) const { return std::min(n, i <= full ? i * kPanel : full * kPanel + (i - full) * kStrip); }
  // Panel i's columns in the packed copy, padding included.
  int64_t width(int64_t i) const { return i < full ? kPanel : kStrip; }
  const float* panel(int64_t i) const { return data + column(i) * k; }
};

// y[j] += sum_q a[q] * panel[q * Width + j], the sums in q's order.
template <int Width>
OPGRAPH_ROW_KERNEL_CLONES void panel_sums(const float* a, const float* panel, int64_t k, float* y) {
  float sums[Width] = {};
  for (int64_t q = 0; q < k; ++q) {
    for (int j = 0; j < Width; ++j) sums[j] += a[q] * panel[q * Width + j];
  }
  for (int j = 0; j < Width; ++j) y[j] += sums[j];
}

Panels packed_panels(const KernelContext& context, const float* w, int64_t k, int64_t n, int64_t row_stride,
                     int64_t column_stride) {
  const int64_t full = n / kPanel;
  // The key's length (6) sets it apart from the other kinds of packed weight.
  const PreparedWeights::Key key{-k, -n, row_stride, column_stride, kPanel, reinterpret_cast<intptr_t>(w)};
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, [&] {
    const Panels shape{nullptr, k, n, full};
    const int64_t last = shape.count() - 1, padded = shape.column(last) + shape.width(last);
    auto packed = std::make_shared<Tensor>(Tensor::zeros({padded * k}, DType::Float32));
    float* to = packed->data_ptr<float>();
    for (int64_t i = 0; i < shape.count(); ++i) {
      const int64_t first = shape.column(i), width = shape.width(i);
      for (int64_t q = 0; q < k; ++q) {
        for (int64_t j = first; j < shape.column(i + 1); ++j) {
          to[first * k + q * width + j - first] = w[q * row_stride + j * column_stride];
        }
      }
    }
    return std::shared_ptr<const void>(packed, packed->data());
  });
  return {static_cast<const float*>(kept.get()), k, n, full};
}

// dst[j] += the product's sums for panels [first, last), in the order the
// product asks for.
void add_panel_sums(const Panels& panels, const float* a, int64_t first, int64_t last, bool backward, float* dst) {
  for (int64_t step = 0; step < last - first; ++step) {
    const int64_t i = backward ? last - 1 - step : first + step;
    const int64_t j = panels.column(i);
    if (i < panels.full) {
      panel_sums<kPanel>(a, panels.panel(i), panels.k, dst + j);
      continue;
    }
    float strip[kStrip] = {};  // the last strip's padding columns land here too
    panel_sums<kStrip>(a, panels.panel(i), panels.k, strip);
    for (int64_t c = j; c < panels.column(i + 1); ++c) dst[c] += strip[c - j];
  }
}

}  // namespace

// dst[j] = f(bias[j] (+ dst[j]) + sum_q a[q] * w[q, j]) (* multiplier[j]) for one
// row a, when a and dst are contiguous and w is a Session's weight (packed
// into panels), or has contiguous rows (w[q, :]) or columns (w[:, j]).
bool row_times_matrix(const KernelContext& context, const Product& p) {
  const size_t rank = p.dst.shape.size();
  if (shape_numel(p.dst.shape) != p.dst.shape.back() || p.a.strides.back() != 1 || p.dst.strides.back() != 1) {
    return false;
  }
  const int64_t k = p.a.shape.back(), n = p.dst.shape.back();
  const int64_t row_stride = p.w.strides[rank - 2], column_stride = p.w.strides[rank - 1];
  const bool packed = p.constant_w && prepared_weights(context) != nullptr;
  const bool columns = column_stride == 1 || n == 1, rows = row_stride == 1 || k == 1;
  if (!packed && !columns && !rows) return false;
  const auto* a = static_cast<const float*>(p.a.data);
  const auto* w = static_cast<const float*>(p.w.data);
  auto* dst = static_cast<float*>(p.dst.data);
  const float* bias = p.bias ? static_cast<const float*>(p.bias->data) : nullptr;
  const int64_t bias_stride = p.bias && p.bias->shape.back() != 1 ? p.bias->strides.back() : 0;
  // Loops apart for each case, so that a contiguous bias is added in vectors
  // (a recurrent step's 768 gates took 3% of a GRU's time one at a time).
  const auto start = [&](int64_t j0, int64_t j1) {
    if (!p.accumulate) std::fill(dst + j0, dst + j1, 0.0f);
    if (bias == nullptr) return;
    if (bias_stride == 1) {
      for (int64_t j = j0; j < j1; ++j) dst[j] += bias[j];
    } else {
      for (int64_t j = j0; j < j1; ++j) dst[j] += bias[j * bias_stride];
    }
  };
  const auto finish = [&](int64_t j0, int64_t j1) {
    if (p.activation != Activation::None) {
      for (int64_t j = j0; j < j1; ++j) dst[j] = static_cast<float>(activation_reference(p.activation, dst[j]));
    }
    if (!p.multiplier) return;
    const auto* gate = static_cast<const float*>(p.multiplier->data);
    for (int64_t j = j0; j < j1; ++j) dst[j] *= gate[j * p.multiplier->strides.back()];
  };
  // Chunks of about 64K multiply-adds or more, each streaming its part of w.
  const int64_t chunk_columns = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(k, 1));
  if (packed) {
    const Panels panels = packed_panels(context, w, k, n, row_stride, column_stride);
    context.pool->parallel_for(0, panels.count(), (chunk_columns + kPanel - 1) / kPanel, [&](int64_t i0, int64_t i1) {
      const int64_t j0 = panels.column(i0), j1 = panels.column(i1);
      start(j0, j1);
      add_panel_sums(panels, a, i0, i1, p.w_backward, dst);
      finish(j0, j1);
    });
    return true;
  }
  const auto chunk = [&](int64_t j0, int64_t j1) {
    start(j0, j1);
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
    finish(j0, j1);
  };
  context.pool->parallel_for(0, n, chunk_columns, chunk);
  return true;
}

}  // namespace opgraph::kernels
