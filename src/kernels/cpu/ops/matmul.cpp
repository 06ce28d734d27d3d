// Matrix products: mm, bmm, addmm, linear, matmul.
//
// Each op is reduced to one batched product dst[b] = a[b] @ w[b] (+ bias[b])
// over operands described by shape and strides, batch dimensions broadcast
// (kernels/cpu/engines/product.h).
#include <cstring>

#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

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
void batched_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out, const Attrs&) {
  const size_t rank = out[0].shape().size();
  run_product(context,
              {operand(in[0], rank), operand(in[1], rank), operand(out[0], rank), std::nullopt, Activation::None,
               is_constant_matrix(context, 1, in[1])},
              out[0].dtype(), Reference);
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
    OPGRAPH_CHECK(in[2]->dim() == 1 && in[2]->shape[0] == weight.shape[0], "bias: expected ", dtype_name(x.dtype), "[",
                  weight.shape[0], "], got ", in[2]->str());
  }
  Shape shape = x.shape;
  shape.back() = weight.shape[0];
  return {{x.dtype, shape}};
}

// `residual`, `multiplier`: out = f(input @ weight^T + bias + residual) *
// multiplier, the residual added and the multiplier applied by the product
// as it writes (Product::accumulate, Product::multiplier).
template <bool Reference>
void run_linear(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                Activation activation, const Tensor& residual = Tensor(), const Tensor& multiplier = Tensor()) {
  // Leading dimensions of a contiguous input fold into the rows.
  const int64_t k = in[0].shape().back(), n = in[1].size(0);
  const int64_t rows = k == 0 ? out[0].numel() / std::max<int64_t>(n, 1) : in[0].numel() / k;
  Product p{operand(in[0], {rows, k}, {k, 1}, 2),
            operand(in[1], 2, /*transposed=*/true),
            operand(out[0], {rows, n}, {n, 1}, 2),
            std::nullopt,
            activation,
            is_constant_matrix(context, 1, in[1])};
  if (in[2].defined()) p.bias = operand(in[2], {1, n}, {n, 1}, 2);
  if (residual.defined()) {
    // A Session may give the output the residual's memory (in_place_input).
    if (residual.data() != out[0].data()) std::memcpy(out[0].data(), residual.data(), out[0].nbytes());
    p.accumulate = true;
  }
  if (multiplier.defined()) p.multiplier = operand(multiplier, {rows, n}, {n, 1}, 2);
  run_product(context, p, out[0].dtype(), Reference);
}

template <bool Reference>
void linear_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out, const Attrs&) {
  run_linear<Reference>(context, in, out, Activation::None);
}

// --- opgraph::linear: linear adding a residual, applying an activation and
// multiplying by a gate as the product writes (oneDNN post-ops), saving
// passes over the output; what a Session fuses aten::linear, the residual
// add, the activation and the gating multiply after it into.

std::vector<TensorMeta> fused_linear_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  activation_attr(attrs);
  std::vector<TensorMeta> out = linear_shape(in, attrs);
  OPGRAPH_CHECK(in[3] == nullptr || *in[3] == out[0], "residual: expected ", out[0].str(), " like the product, got ",
                in[3]->str());
  OPGRAPH_CHECK(in[4] == nullptr || *in[4] == out[0], "multiplier: expected ", out[0].str(), " like the product, got ",
                in[4]->str());
  return out;
}

template <bool Reference>
void fused_linear_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                      const Attrs& attrs) {
  run_linear<Reference>(context, in, out, activation_attr(attrs), in[3], in[4]);
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
  run_product(context, {grad_rows, operand(weight, 2), operand(out[0], {rows, k}, {k, 1}, 2), std::nullopt}, dtype,
              Reference);
  run_product(context, {operand(grad, {n, rows}, {1, n}, 2), input_rows, operand(out[1], 2), std::nullopt}, dtype,
              Reference);
  if (in[3].defined()) column_sums(context, grad, rows, n, out[2], Reference);
}

// out = alpha * out + beta * self, self broadcast to out's [rows..., n] shape
// (addmm's and baddbmm's scaling when it is not the bias a product adds).
void scale_and_add(const Tensor& out, const Tensor& self, double alpha, double beta) {
  const Shape& shape = out.shape();
  const int64_t rank = static_cast<int64_t>(shape.size()), offset = rank - self.dim();
  dispatch_floating(out.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    T* o = out.data_ptr<T>();
    const T* s = self.data_ptr<T>();
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t flat = 0; flat < out.numel(); ++flat) {
      int64_t at = 0;  // self's element for this one: extent-1 dims broadcast
      for (int64_t d = offset; d < rank; ++d) {
        const int64_t extent = self.size(d - offset);
        at = at * extent + (extent == 1 ? 0 : index[d]);
      }
      o[flat] = static_cast<T>(alpha) * o[flat] + (beta == 0.0 ? T(0) : static_cast<T>(beta) * s[at]);
      for (int64_t d = rank; d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
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
  Product p{operand(in[1], 2), operand(in[2], 2), operand(out[0], 2),
            std::nullopt,      Activation::None,  is_constant_matrix(context, 2, in[2])};
  if (alpha == 1.0 && beta == 1.0) {
    p.bias = bias;
    return run_product(context, p, out[0].dtype(), Reference);
  }
  run_product(context, p, out[0].dtype(), Reference);
  scale_and_add(out[0], self, alpha, beta);
}

// --- baddbmm: beta * self + alpha * (batch1 @ batch2), self broadcast to [B, N, M].

std::vector<TensorMeta> baddbmm_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const TensorMeta& self = *in[0];
  const TensorMeta product = batched_shape<3>(in.subspan(1), attrs)[0];
  check_dtypes(product, "batch1", self, "self");
  OPGRAPH_CHECK(self.dim() <= 3, "self: expected rank 3 or less, got ", self.str());
  for (int64_t d = 1; d <= self.dim(); ++d) {
    const int64_t extent = self.shape[self.dim() - d];
    OPGRAPH_CHECK(extent == 1 || extent == product.shape[3 - d], "self: ", self.str(),
                  " does not broadcast to the product's shape ", shape_str(product.shape));
  }
  return {product};
}

template <bool Reference>
void baddbmm_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                 const Attrs& attrs) {
  run_product(context, {operand(in[1], 3), operand(in[2], 3), operand(out[0], 3), std::nullopt}, out[0].dtype(),
              Reference);
  scale_and_add(out[0], in[0], scalar_attr(attrs, "alpha"), scalar_attr(attrs, "beta"));
}

// --- matmul: torch.matmul's rules. Vectors gain a dimension for the product
// (a row for the left operand, a column for the right) that the result drops;
// batch dimensions broadcast.

std::vector<TensorMeta> matmul_shape(std::span<const TensorMeta* const> in, const Attrs&) {
  const TensorMeta &a = *in[0], &b = *in[1];
  check_dtypes(a, "self", b, "other");
  OPGRAPH_CHECK(a.dim() >= 1 && b.dim() >= 1, "expected operands of rank 1 or more, got ", a.str(), " and ", b.str());
  const int64_t k_a = a.shape.back(), k_b = b.dim() == 1 ? b.shape[0] : b.shape[b.dim() - 2];
  check_inner(a, k_a, b, k_b);
  Shape shape = broadcast_batch(std::span(a.shape).first(std::max<int64_t>(a.dim() - 2, 0)),
                                std::span(b.shape).first(std::max<int64_t>(b.dim() - 2, 0)));
  if (a.dim() >= 2) shape.push_back(a.shape[a.dim() - 2]);
  if (b.dim() >= 2) shape.push_back(b.shape.back());
  return {{a.dtype, shape}};
}

template <bool Reference>
void matmul_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out, const Attrs&) {
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
  Product p{left,
            right,
            operand(out[0], dst_shape, contiguous_strides(dst_shape), rank),
            std::nullopt,
            Activation::None,
            is_constant_matrix(context, 1, b)};
  run_product(context, p, out[0].dtype(), Reference);
}

}  // namespace

void register_matmul_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::mm(Tensor self, Tensor mat2) -> Tensor",
                    .shape = batched_shape<2>,
                    OPGRAPH_CPU_AND_REFERENCE(batched_cpu),
                    .prepare = prepare_weights});
  define(builtins, {.schema = "aten::bmm(Tensor self, Tensor mat2) -> Tensor",
                    .shape = batched_shape<3>,
                    OPGRAPH_CPU_AND_REFERENCE(batched_cpu),
                    .prepare = prepare_weights});
  define(builtins,
         {.schema = "aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
          .shape = addmm_shape,
          OPGRAPH_CPU_AND_REFERENCE(addmm_cpu),
          .prepare = prepare_weights});
  define(builtins,
         {.schema = "aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> "
                    "Tensor",
          .shape = baddbmm_shape,
          OPGRAPH_CPU_AND_REFERENCE(baddbmm_cpu),
          .prepare = prepare_weights});
  define(builtins,
         {.schema = "opgraph::linear_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor? bias=None) "
                    "-> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
          .shape = linear_backward_shape,
          OPGRAPH_CPU_AND_REFERENCE(linear_backward_cpu),
          .prepare = prepare_weights});
  define(builtins, {.schema = "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
                    .shape = linear_shape,
                    OPGRAPH_CPU_AND_REFERENCE(linear_cpu),
                    .backward = "opgraph::linear_backward",
                    .prepare = prepare_weights});
  define(builtins, {.schema = "aten::matmul(Tensor self, Tensor other) -> Tensor",
                    .shape = matmul_shape,
                    OPGRAPH_CPU_AND_REFERENCE(matmul_cpu),
                    .prepare = prepare_weights});
  define(builtins, {.schema = "opgraph::linear(Tensor input, Tensor weight, Tensor? bias=None, Tensor? residual=None, "
                              "Tensor? multiplier=None, *, str activation=\"none\") -> Tensor",
                    .shape = fused_linear_shape,
                    OPGRAPH_CPU_AND_REFERENCE(fused_linear_cpu),
                    .in_place_input = 3,
                    .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
