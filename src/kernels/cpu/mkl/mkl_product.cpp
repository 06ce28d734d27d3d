// A product with a Session's float32 weight runs on MKL's packed-matrix GEMM
// (cblas_sgemm_pack once, cblas_sgemm_compute per call), as PyTorch's
// mkl_linear does. Where the weights stream from memory, as they do in a
// model, MKL keeps its multiply-adds fed better than oneDNN 2.6's matmul:
// 24 distinct 768 x 3072 weights, 128 rows, one core: 161-180 GFLOP/s
// against 129-149; two cores: 321 against 276.
//
// MKL runs on its sequential layer and opgraph splits the work: the columns
// into one slice per thread, each slice packed on its own, so that each
// thread streams its part of the weight once; or, for tall products, the
// rows, each thread taking its band through every slice. One packed copy
// serves both: a prompt's chunks of different lengths share it. (MKL's own
// threading ran 768 x 768 products of up to 512 rows on one thread.) What
// oneDNN applies as post-ops (bias, activation, multiplier) is a pass over
// each thread's part right after its product, while it is in cache:
// oneDNN's binary and eltwise primitives take such strided parts with their
// reference kernels only.
#include "kernels/cpu/mkl/mkl_product.h"

#include <mkl.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/activation_formulas.h"
#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/prepared_weights.h"

namespace opgraph::kernels {
namespace {

// The rows MKL packs a weight for. MKL picks its packed format by them: one
// packed for 8 rows ran 128 at half speed, one packed for 128 or 1024 ran
// every product of 16 rows or more at full speed.
constexpr MKL_INT kPackRows = 1024;
// Products with this many rows a thread or more split their rows over the
// threads, which share one packed weight, rather than its columns: on two
// threads, Whisper-tiny's encoder's 1500-row products took 65-69 ms so, 73
// split by columns (BERT-base's 1024-row ones at batch 8: 516-549 against
// 530-561 ms).
constexpr int64_t kSplitRowsPerThread = 256;
// Slices start at multiples of 16 columns, whole 64-byte lines of dst.
constexpr int64_t kSliceColumns = 16;
// Sets the key of a packed weight apart from the other kinds among the
// node's prepared weights.
constexpr int64_t kPackedKey = -0x4d4b4c;

bool fits_mkl_int(int64_t value) { return value <= std::numeric_limits<MKL_INT>::max(); }

// How MKL reads a [rows, cols] operand in place: as stored row by row, or
// as the transpose of a matrix stored row by row; nullopt where neither dim
// is contiguous.
struct Layout {
  CBLAS_TRANSPOSE transpose;
  MKL_INT leading;  // elements between the starts of stored rows
};

std::optional<Layout> layout(const Operand& op) {
  const int64_t rows = op.shape[0], cols = op.shape[1];
  const int64_t row_stride = rows == 1 ? cols : op.strides[0], col_stride = cols == 1 ? rows : op.strides[1];
  std::optional<Layout> found;
  if ((op.strides[1] == 1 || cols == 1) && row_stride >= cols) {
    found = Layout{CblasNoTrans, static_cast<MKL_INT>(row_stride)};
  } else if ((op.strides[0] == 1 || rows == 1) && col_stride >= rows) {
    found = Layout{CblasTrans, static_cast<MKL_INT>(col_stride)};
  }
  if (found && !fits_mkl_int(std::max(row_stride, col_stride))) return std::nullopt;
  return found;
}

// The first column of each slice, then n: `count` slices of whole
// kSliceColumns groups, as even as they go.
std::vector<int64_t> slice_columns(int64_t n, int64_t count) {
  std::vector<int64_t> columns;
  for (int64_t s = 0; s < count; ++s) {
    columns.push_back(std::min(n, (n * s / count + kSliceColumns - 1) / kSliceColumns * kSliceColumns));
  }
  columns.push_back(n);
  return columns;
}

// A weight's slices in MKL's packed format, one buffer each.
struct PackedSlices {
  std::vector<int64_t> columns;
  std::vector<Tensor> packs;
};

const PackedSlices& packed_slices(const KernelContext& context, const Product& p, const Layout& w, int64_t slices) {
  const int64_t k = p.w.shape[0], n = p.w.shape[1];
  const PreparedWeights::Key key{
      kPackedKey, k, n, p.w.strides[0], p.w.strides[1], slices, reinterpret_cast<intptr_t>(p.w.data)};
  const std::span<const std::byte> source = spanned_bytes(p.w.data, p.w.shape, p.w.strides, sizeof(float));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, source, [&] {
    auto packed = std::make_shared<PackedSlices>();
    packed->columns = slice_columns(n, slices);
    // A slice starts `first` columns in: along the contiguous dim of a
    // transposed weight, across rows of a plain one.
    const int64_t column_step = w.transpose == CblasTrans ? p.w.strides[1] : 1;
    for (int64_t s = 0; s < slices; ++s) {
      const int64_t first = packed->columns[s], width = packed->columns[s + 1] - first;
      const size_t bytes = cblas_sgemm_pack_get_size(CblasBMatrix, kPackRows, width, k);
      Tensor pack = Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8);
      cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, w.transpose, kPackRows, width, k, 1.0f,
                       static_cast<const float*>(p.w.data) + first * column_step, w.leading,
                       static_cast<float*>(pack.data()));
      packed->packs.push_back(std::move(pack));
    }
    return std::shared_ptr<const void>(packed, packed.get());
  });
  return *static_cast<const PackedSlices*>(kept.get());
}

// The element (row, column) of `op`, broadcast where it has extent 1, and
// the step along its row.
const float* element(const Operand& op, int64_t row, int64_t column) {
  const int64_t offset = (op.shape[0] == 1 ? 0 : row * op.strides[0]) + (op.shape[1] == 1 ? 0 : column * op.strides[1]);
  return static_cast<const float*>(op.data) + offset;
}
int64_t row_step(const Operand& op) { return op.shape[1] == 1 ? 0 : op.strides[1]; }

// row[j] = combine(row[j], from[j * step]) for j in [0, n), with steps 1 and
// 0 in loops of their own, which vectorize.
template <typename Combine>
inline void combine_row(float* row, const float* from, int64_t step, int64_t n, Combine combine) {
  if (step == 1) {
    for (int64_t j = 0; j < n; ++j) row[j] = combine(row[j], from[j]);
  } else if (step == 0) {
    const float value = *from;
    for (int64_t j = 0; j < n; ++j) row[j] = combine(row[j], value);
  } else {
    for (int64_t j = 0; j < n; ++j) row[j] = combine(row[j], from[j * step]);
  }
}

// dst = f(dst + bias) * multiplier over rows [top, bottom), columns [first, last).
void finish_part(const Product& p, int64_t top, int64_t bottom, int64_t first, int64_t last) {
  if (!p.bias && p.activation == Activation::None && !p.multiplier) return;
  const int64_t width = last - first;
  dispatch_cpu([&] {
    for (int64_t i = top; i < bottom; ++i) {
      float* row = static_cast<float*>(p.dst.data) + i * p.dst.strides[0] + first;
      if (p.bias) combine_row(row, element(*p.bias, i, first), row_step(*p.bias), width, std::plus<float>());
      activate(p.activation, row, width);
      if (p.multiplier) {
        combine_row(row, element(*p.multiplier, i, first), row_step(*p.multiplier), width, std::multiplies<float>());
      }
    }
  });
}

}  // namespace

bool mkl_product(const KernelContext& given_context, const Product& p) {
  if (p.dst.shape.size() != 2 || !p.constant_w || prepared_weights(given_context) == nullptr ||
      weight_precision(given_context) != Precision::Float32) {
    return false;
  }
  const int64_t m = p.dst.shape[0], n = p.dst.shape[1], k = p.a.shape[1];
  if (!fits_mkl_int(m) || !fits_mkl_int(n) || !fits_mkl_int(k)) return false;
  const std::optional<Layout> a = layout(p.a), w = layout(p.w), dst = layout(p.dst);
  if (!a || !w || !dst || dst->transpose != CblasNoTrans) return false;

  const KernelContext context = context_for_work(given_context, 2 * m * n * k);
  const int64_t threads = context.pool->num_threads();
  // A slice per thread of the session's, whatever the row count: one packed
  // copy of the weight serves every product.
  const int64_t slices = std::min<int64_t>(given_context.pool->num_threads(), (n + kSliceColumns - 1) / kSliceColumns);
  const PackedSlices& packed = packed_slices(context, p, *w, slices);
  const bool split_rows = m >= kSplitRowsPerThread * threads;
  // A part is a band of rows across every slice, or a slice across every row.
  const int64_t parts = split_rows ? threads : slices;
  context.pool->parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const int64_t top = split_rows ? m * part / parts : 0, bottom = split_rows ? m * (part + 1) / parts : m;
      const float* a_rows = static_cast<const float*>(p.a.data) + top * (a->transpose == CblasNoTrans ? a->leading : 1);
      for (int64_t s = split_rows ? 0 : part; s < (split_rows ? slices : part + 1); ++s) {
        const int64_t first = packed.columns[s], width = packed.columns[s + 1] - first;
        cblas_sgemm_compute(CblasRowMajor, a->transpose, CblasPacked, static_cast<MKL_INT>(bottom - top),
                            static_cast<MKL_INT>(width), static_cast<MKL_INT>(k), a_rows, a->leading,
                            static_cast<const float*>(packed.packs[s].data()), static_cast<MKL_INT>(width),
                            p.accumulate ? 1.0f : 0.0f, static_cast<float*>(p.dst.data) + top * dst->leading + first,
                            dst->leading);
        finish_part(p, top, bottom, first, first + width);
      }
    }
  });
  return true;
}

}  // namespace opgraph::kernels
