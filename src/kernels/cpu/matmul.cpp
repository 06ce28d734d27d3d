// Matrix products: mm, bmm, addmm, linear, matmul.
//
// Each op is reduced to one batched product dst[b] = a[b] @ w[b] (+ bias[b])
// over operands described by shape and strides, batch dimensions broadcast.
// float32 runs on oneDNN's matmul primitive, which reads the caller's
// buffers in place through those descriptors (transposed weights, broadcast
// batches and the bias cost no copy). float64, which oneDNN does not compute,
// and the reference use a plain loop.
#include <optional>

#include "kernels/cpu/onednn.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// An operand of the product at the product's rank: [batch..., rows, cols].
// Broadcast batch dimensions have extent 1 and stride 0. (Only batch ones:
// oneDNN takes a zero row stride for an unusual layout and falls back to its
// slow reference implementation.)
struct Operand {
  void* data;
  Shape shape;
  Strides strides;  // elements
};

struct Product {
  Operand a, w, dst;
  std::optional<Operand> bias;
};

// Views `t` as [rows, cols] matrices, prepending broadcast dimensions up to
// `rank`; `transposed` swaps the last two dimensions.
Operand operand(const Tensor& t, Shape shape, Strides strides, size_t rank, bool transposed = false) {
  if (transposed) {
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  while (shape.size() < rank) {
    shape.insert(shape.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  for (size_t d = 0; d + 2 < shape.size(); ++d) {
    if (shape[d] == 1) strides[d] = 0;
  }
  return {t.data(), std::move(shape), std::move(strides)};
}

Operand operand(const Tensor& t, size_t rank, bool transposed = false) {
  return operand(t, t.shape(), t.strides(), rank, transposed);
}

dnnl::memory::desc describe(const Operand& op) {
  return dnnl::memory::desc(dnnl::memory::dims(op.shape.begin(), op.shape.end()), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(op.strides.begin(), op.strides.end()));
}

void onednn_product(const KernelContext& context, const Product& p) {
  const auto bias_md = p.bias ? describe(*p.bias) : dnnl::memory::desc();
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(describe(p.a), describe(p.w), bias_md, describe(p.dst)),
                                  onednn_engine());
  auto wrap = [](const Operand& op) { return dnnl::memory(describe(op), onednn_engine(), op.data); };
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, wrap(p.a)}, {DNNL_ARG_WEIGHTS, wrap(p.w)}, {DNNL_ARG_DST, wrap(p.dst)}};
  if (p.bias) args.emplace(DNNL_ARG_BIAS, wrap(*p.bias));
  dnnl::stream stream = onednn_stream(context);
  dnnl::matmul(pd).execute(stream, args);
  stream.wait();
}

// dst[b, i, j] = sum_p a[b, i, p] * w[b, p, j] (+ bias[b, i, j]), in double.
template <typename T>
void plain_product(const Product& p) {
  const size_t rank = p.dst.shape.size();
  const int64_t m = p.dst.shape[rank - 2], n = p.dst.shape[rank - 1], k = p.a.shape[rank - 1];
  auto at = [rank](const Operand& op, std::span<const int64_t> batch, int64_t row, int64_t col) {
    // Extent-1 dimensions broadcast: they are always read at index 0.
    auto step = [&op](size_t d, int64_t i) { return op.shape[d] == 1 ? 0 : i * op.strides[d]; };
    int64_t offset = step(rank - 2, row) + step(rank - 1, col);
    for (size_t d = 0; d + 2 < rank; ++d) offset += step(d, batch[d]);
    return static_cast<T*>(op.data) + offset;
  };
  std::vector<int64_t> batch(rank - 2, 0);
  for (int64_t b = 0; b < shape_numel(std::span(p.dst.shape).first(rank - 2)); ++b) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = p.bias ? *at(*p.bias, batch, i, j) : 0.0;
        for (int64_t q = 0; q < k; ++q) sum += double(*at(p.a, batch, i, q)) * *at(p.w, batch, q, j);
        *at(p.dst, batch, i, j) = static_cast<T>(sum);
      }
    }
    for (size_t d = batch.size(); d-- > 0;) {
      if (++batch[d] < p.dst.shape[d]) break;
      batch[d] = 0;
    }
  }
}

// --- One row times a matrix (batch 1 inference), which only has to stream
// the matrix from memory once. oneDNN 2.6's matmul runs it as a GEMM at a
// few percent of that bandwidth, so it gets its own kernels.

// Lane-wise partial sums that GCC vectorizes without reassociating floats.
[[gnu::target_clones("avx512f", "avx2", "default")]] float dot(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 32;
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) partial[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  for (float v : partial) sum += v;
  return sum;
}

[[gnu::target_clones("avx512f", "avx2", "default")]] void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// dst[j] = bias[j] + sum_q a[q] * w[q, j] for one row a, when a and dst are
// contiguous and w has contiguous rows (w[q, :]) or columns (w[:, j]).
bool row_times_matrix(const KernelContext& context, const Product& p) {
  const size_t rank = p.dst.shape.size();
  if (shape_numel(p.dst.shape) != p.dst.shape.back() || p.a.strides.back() != 1 || p.dst.strides.back() != 1) {
    return false;
  }
  const int64_t k = p.a.shape.back(), n = p.dst.shape.back();
  const int64_t row_stride = p.w.strides[rank - 2], column_stride = p.w.strides[rank - 1];
  const bool columns = column_stride == 1 || n == 1, rows = row_stride == 1 || k == 1;
  if (!columns && !rows) return false;
  const auto* a = static_cast<const float*>(p.a.data);
  const auto* w = static_cast<const float*>(p.w.data);
  auto* dst = static_cast<float*>(p.dst.data);
  auto bias = [&](int64_t j) {
    return p.bias ? static_cast<const float*>(p.bias->data)[p.bias->shape.back() == 1 ? 0 : j * p.bias->strides.back()]
                  : 0.0f;
  };
  // Chunks of output columns, each streaming its part of w.
  context.pool->parallel_for(0, n, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(k, 1)),
                             [&](int64_t j0, int64_t j1) {
                               if (rows) {  // w[:, j] contiguous: one dot product per output
                                 for (int64_t j = j0; j < j1; ++j) dst[j] = bias(j) + dot(a, w + j * column_stride, k);
                                 return;
                               }
                               for (int64_t j = j0; j < j1; ++j) dst[j] = bias(j);
                               for (int64_t q = 0; q < k; ++q) axpy(a[q], w + q * row_stride + j0, dst + j0, j1 - j0);
                             });
  return true;
}

void run(const KernelContext& context, const Product& p, DType dtype, bool reference) {
  if (shape_numel(p.dst.shape) == 0) return;
  if (!reference && dtype == DType::Float32 && p.a.shape[p.a.shape.size() - 2] == 1 && row_times_matrix(context, p)) {
    return;
  }
  // oneDNN computes float32 only, and not sums over an empty inner dimension.
  if (!reference && dtype == DType::Float32 && p.a.shape.back() > 0) return onednn_product(context, p);
  dispatch_floating(dtype, "self", [&](auto zero) { plain_product<decltype(zero)>(p); });
}

void check_dtypes(const TensorMeta& a, const char* a_name, const TensorMeta& b, const char* b_name) {
  OPGRAPH_CHECK(a.dtype == DType::Float32 || a.dtype == DType::Float64, a_name, ": expected float32 or float64, got ",
                a.str());
  OPGRAPH_CHECK(b.dtype == a.dtype, b_name, ": expected ", dtype_name(a.dtype), " like ", a_name, ", got ", b.str());
}

void check_rank(const TensorMeta& t, const char* name, int64_t rank) {
  OPGRAPH_CHECK(t.dim() == rank, name, ": expected rank ", rank, ", got ", t.str());
}

void check_inner(const TensorMeta& a, int64_t k_a, const TensorMeta& b, int64_t k_b) {
  OPGRAPH_CHECK(k_a == k_b, "cannot multiply ", a.str(), " by ", b.str(), ": inner dimensions ", k_a, " and ", k_b,
                " differ");
}

Shape broadcast_batch(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i + a.size() < rank ? 1 : a[i + a.size() - rank];
    const int64_t y = i + b.size() < rank ? 1 : b[i + b.size() - rank];
    OPGRAPH_CHECK(x == y || x == 1 || y == 1, "batch dimensions ", shape_str(a), " and ", shape_str(b),
                  " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// --- mm and bmm: plain (batched) products of matching ranks.

template <int64_t Rank>
std::vector<TensorMeta> batched_shape(std::span<const TensorMeta* const> in, const Attrs&) {
  const TensorMeta &a = *in[0], &b = *in[1];
  check_dtypes(a, "self", b, "mat2");
  check_rank(a, "self", Rank);
  check_rank(b, "mat2", Rank);
  check_inner(a, a.shape[Rank - 1], b, b.shape[Rank - 2]);
  if (Rank == 3) {
    OPGRAPH_CHECK(a.shape[0] == b.shape[0], "mat2: expected batch ", a.shape[0], " like self, got ", b.str());
  }
  Shape shape = a.shape;
  shape[Rank - 1] = b.shape[Rank - 1];
  return {{a.dtype, shape}};
}

template <bool Reference>
void batched_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                 const Attrs&) {
  const size_t rank = out[0].shape().size();
  run(context, {operand(in[0], rank), operand(in[1], rank), operand(out[0], rank), std::nullopt}, out[0].dtype(),
      Reference);
}

// --- linear: input[..., K] @ weight[N, K]^T + bias[N].

std::vector<TensorMeta> linear_shape(std::span<const TensorMeta* const> in, const Attrs&) {
  const TensorMeta &x = *in[0], &weight = *in[1];
  check_dtypes(x, "input", weight, "weight");
  OPGRAPH_CHECK(x.dim() >= 1, "input: expected rank 1 or more, got ", x.str());
  check_rank(weight, "weight", 2);
  check_inner(x, x.shape.back(), weight, weight.shape[1]);
  if (in[2]) {
    check_dtypes(x, "input", *in[2], "bias");
    OPGRAPH_CHECK(in[2]->dim() == 1 && in[2]->shape[0] == weight.shape[0], "bias: expected ",
                  dtype_name(x.dtype), "[", weight.shape[0], "], got ", in[2]->str());
  }
  Shape shape = x.shape;
  shape.back() = weight.shape[0];
  return {{x.dtype, shape}};
}

template <bool Reference>
void linear_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                const Attrs&) {
  // Leading dimensions of a contiguous input fold into the rows.
  const int64_t k = in[0].shape().back(), n = in[1].size(0);
  const int64_t rows = k == 0 ? out[0].numel() / std::max<int64_t>(n, 1) : in[0].numel() / k;
  Product p{operand(in[0], {rows, k}, {k, 1}, 2), operand(in[1], 2, /*transposed=*/true),
            operand(out[0], {rows, n}, {n, 1}, 2), std::nullopt};
  if (in[2].defined()) p.bias = operand(in[2], {1, n}, {n, 1}, 2);
  run(context, p, out[0].dtype(), Reference);
}

// --- linear's gradients. With rows = the input's leading dimensions folded:
//   grad_input  = grad_output[rows, N] @ weight[N, K]
//   grad_weight = grad_output^T[N, rows] @ input[rows, K]
//   grad_bias   = grad_output summed over rows ([0] when there is no bias)

std::vector<TensorMeta> linear_backward_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const TensorMeta& grad = *in[0];
  const TensorMeta forward = linear_shape(in.subspan(1), attrs)[0];
  OPGRAPH_CHECK(grad == forward, "grad_output: expected ", forward.str(), " like linear's output, got ", grad.str());
  const TensorMeta bias = in[3] ? *in[3] : TensorMeta{grad.dtype, {0}};
  return {*in[1], *in[2], bias};
}

template <bool Reference>
void linear_backward_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                         const Attrs&) {
  const Tensor &grad = in[0], &input = in[1], &weight = in[2];
  const int64_t n = weight.size(0), k = weight.size(1);
  const int64_t rows = n == 0 ? (k == 0 ? 0 : input.numel() / k) : grad.numel() / n;
  const Operand grad_rows = operand(grad, {rows, n}, {n, 1}, 2);
  const Operand input_rows = operand(input, {rows, k}, {k, 1}, 2);
  const DType dtype = grad.dtype();
  run(context, {grad_rows, operand(weight, 2), operand(out[0], {rows, k}, {k, 1}, 2), std::nullopt}, dtype,
      Reference);
  run(context, {operand(grad, {n, rows}, {1, n}, 2), input_rows, operand(out[1], 2), std::nullopt}, dtype,
      Reference);
  if (!in[3].defined()) return;
  dispatch_floating(dtype, "grad_output", [&](auto zero) {
    using T = decltype(zero);
    const T* g = grad.data_ptr<T>();
    T* db = out[2].data_ptr<T>();
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t r = 0; r < rows; ++r) sum += g[r * n + j];
      db[j] = static_cast<T>(sum);
    }
  });
}

// --- addmm: beta * self + alpha * (mat1 @ mat2), self broadcast to [M, N].

std::vector<TensorMeta> addmm_shape(std::span<const TensorMeta* const> in, const Attrs&) {
  const TensorMeta &self = *in[0], &a = *in[1], &b = *in[2];
  check_dtypes(a, "mat1", b, "mat2");
  check_dtypes(a, "mat1", self, "self");
  check_rank(a, "mat1", 2);
  check_rank(b, "mat2", 2);
  check_inner(a, a.shape[1], b, b.shape[0]);
  OPGRAPH_CHECK(self.dim() <= 2, "self: expected rank 2 or less, got ", self.str());
  const Shape out{a.shape[0], b.shape[1]};
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t extent = self.shape[self.dim() - 1 - d];
    OPGRAPH_CHECK(extent == 1 || extent == out[1 - d], "self: ", self.str(),
                  " does not broadcast to the product's shape ", shape_str(out));
  }
  return {{a.dtype, out}};
}

template <bool Reference>
void addmm_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
               const Attrs& attrs) {
  const double beta = scalar_attr(attrs, "beta"), alpha = scalar_attr(attrs, "alpha");
  const Tensor& self = in[0];
  Operand bias = operand(self, 2);
  Product p{operand(in[1], 2), operand(in[2], 2), operand(out[0], 2), std::nullopt};
  if (alpha == 1.0 && beta == 1.0) {
    p.bias = bias;
    return run(context, p, out[0].dtype(), Reference);
  }
  run(context, p, out[0].dtype(), Reference);
  dispatch_floating(out[0].dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T* o = out[0].data_ptr<T>();
    const T* s = self.data_ptr<T>();
    const int64_t n = out[0].size(1);
    for (int64_t i = 0; i < out[0].size(0); ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = (bias.shape[0] == 1 ? 0 : i * bias.strides[0]) + (bias.shape[1] == 1 ? 0 : j * bias.strides[1]);
        const T added = beta == 0.0 ? T(0) : static_cast<T>(beta) * s[at];
        o[i * n + j] = static_cast<T>(alpha) * o[i * n + j] + added;
      }
    }
  });
}

// --- matmul: torch.matmul's rules. Vectors gain a dimension for the product
// (a row for the left operand, a column for the right) that the result drops;
// batch dimensions broadcast.

std::vector<TensorMeta> matmul_shape(std::span<const TensorMeta* const> in, const Attrs&) {
  const TensorMeta &a = *in[0], &b = *in[1];
  check_dtypes(a, "self", b, "other");
  OPGRAPH_CHECK(a.dim() >= 1 && b.dim() >= 1, "expected operands of rank 1 or more, got ", a.str(), " and ",
                b.str());
  const int64_t k_a = a.shape.back(), k_b = b.dim() == 1 ? b.shape[0] : b.shape[b.dim() - 2];
  check_inner(a, k_a, b, k_b);
  Shape shape = broadcast_batch(std::span(a.shape).first(std::max<int64_t>(a.dim() - 2, 0)),
                                std::span(b.shape).first(std::max<int64_t>(b.dim() - 2, 0)));
  if (a.dim() >= 2) shape.push_back(a.shape[a.dim() - 2]);
  if (b.dim() >= 2) shape.push_back(b.shape.back());
  return {{a.dtype, shape}};
}

template <bool Reference>
void matmul_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                const Attrs&) {
  const Tensor &a = in[0], &b = in[1];
  const size_t rank = std::max<size_t>({a.shape().size(), b.shape().size(), 2});
  auto as_matrix = [rank](const Tensor& t, bool is_left) {
    if (t.dim() >= 2) return operand(t, rank);
    const int64_t k = t.size(0);
    return is_left ? operand(t, {1, k}, {k, 1}, rank) : operand(t, {k, 1}, {1, 1}, rank);
  };
  Operand left = as_matrix(a, true), right = as_matrix(b, false);
  Shape dst_shape(rank);
  for (size_t d = 0; d + 2 < rank; ++d) dst_shape[d] = left.shape[d] == 1 ? right.shape[d] : left.shape[d];
  dst_shape[rank - 2] = left.shape[rank - 2];
  dst_shape[rank - 1] = right.shape[rank - 1];
  Product p{left, right, operand(out[0], dst_shape, contiguous_strides(dst_shape), rank), std::nullopt};
  run(context, p, out[0].dtype(), Reference);
}

}  // namespace

void register_matmul_ops(Registry& registry) {
  define(registry, {"aten::mm(Tensor self, Tensor mat2) -> Tensor", batched_shape<2>, batched_cpu<false>,
                    batched_cpu<true>});
  define(registry, {"aten::bmm(Tensor self, Tensor mat2) -> Tensor", batched_shape<3>, batched_cpu<false>,
                    batched_cpu<true>});
  define(registry, {"aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
                    addmm_shape, addmm_cpu<false>, addmm_cpu<true>});
  // A backward op is registered before the op that names it.
  define(registry, {"opgraph::linear_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor? bias=None) "
                    "-> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
                    linear_backward_shape, linear_backward_cpu<false>, linear_backward_cpu<true>});
  define(registry, {"aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", linear_shape,
                    linear_cpu<false>, linear_cpu<true>, "opgraph::linear_backward"});
  define(registry, {"aten::matmul(Tensor self, Tensor other) -> Tensor", matmul_shape, matmul_cpu<false>,
                    matmul_cpu<true>});
}

}  // namespace opgraph::kernels
