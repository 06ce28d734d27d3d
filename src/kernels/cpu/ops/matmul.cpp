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
TensorMeta batched_shape(const TensorMeta& a, const TensorMeta& b) {
  check_dtypes(a, "self", b, "mat2");
  check_rank(a, "self", Rank);
  check_rank(b, "mat2", Rank);
  check_inner(a, a.shape[Rank - 1], b, b.shape[Rank - 2]);
  if (Rank == 3) {
    OPGRAPH_CHECK(a.shape[0] == b.shape[0], "mat2: expected batch ", a.shape[0], " like self, got ", b.str());
  }
  Shape shape = a.shape;
  shape[Rank - 1] = b.shape[Rank - 1];
  return {a.dtype, shape};
}

template <bool Reference>
void batched_cpu(const KernelContext& context, const Tensor& a, const Tensor& b, const Tensor& out) {
  const size_t rank = out.shape().size();
  run_product(context,
              {operand(a, rank), operand(b, rank), operand(out, rank), std::nullopt, Activation::None,
               is_constant_matrix(context, 1, b)},
              out.dtype(), Reference);
}

// --- linear: input[..., K] @ weight[N, K]^T + bias[N].

TensorMeta linear_shape(const TensorMeta& x, const TensorMeta& weight, const TensorMeta* bias) {
  check_dtypes(x, "input", weight, "weight");
  OPGRAPH_CHECK(x.dim() >= 1, "input: expected rank 1 or more, got ", x.str());
  check_rank(weight, "weight", 2);
  check_inner(x, x.shape.back(), weight, weight.shape[1]);
  if (bias) {
    check_dtypes(x, "input", *bias, "bias");
    OPGRAPH_CHECK(bias->dim() == 1 && bias->shape[0] == weight.shape[0], "bias: expected ", dtype_name(x.dtype), "[",
                  weight.shape[0], "], got ", bias->str());
  }
  Shape shape = x.shape;
  shape.back() = weight.shape[0];
  return {x.dtype, shape};
}

// `residual`, `multiplier`: out = f(input @ weight^T + bias + residual) *
// multiplier, the residual added and the multiplier applied by the product
// as it writes (Product::accumulate, Product::multiplier).
template <bool Reference>
void run_linear(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                const Tensor& out, Activation activation, const Tensor* residual = nullptr,
                const Tensor* multiplier = nullptr) {
  // Leading dimensions of a contiguous input fold into the rows.
  const int64_t k = input.shape().back(), n = weight.size(0);
  const int64_t rows = k == 0 ? out.numel() / std::max<int64_t>(n, 1) : input.numel() / k;
  Product p{operand(input, {rows, k}, {k, 1}, 2),
            operand(weight, 2, /*transposed=*/true),
            operand(out, {rows, n}, {n, 1}, 2),
            std::nullopt,
            activation,
            is_constant_matrix(context, 1, weight)};
  if (bias) p.bias = operand(*bias, {1, n}, {n, 1}, 2);
  if (residual) {
    // A Session may give the output the residual's memory (in_place_input).
    if (residual->data() != out.data()) std::memcpy(out.data(), residual->data(), out.nbytes());
    p.accumulate = true;
  }
  if (multiplier) p.multiplier = operand(*multiplier, {rows, n}, {n, 1}, 2);
  run_product(context, p, out.dtype(), Reference);
}

template <bool Reference>
void linear_cpu(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                const Tensor& out) {
  run_linear<Reference>(context, input, weight, bias, out, Activation::None);
}

// --- opgraph::linear: linear adding a residual, applying an activation and
// multiplying by a gate as the product writes (oneDNN post-ops), saving
// passes over the output; what a Session fuses aten::linear, the residual
// add, the activation and the gating multiply after it into.

TensorMeta fused_linear_shape(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                              const TensorMeta* residual, const TensorMeta* multiplier, std::string_view activation) {
  parse_activation(activation);
  const TensorMeta out = linear_shape(input, weight, bias);
  OPGRAPH_CHECK(residual == nullptr || *residual == out, "residual: expected ", out.str(), " like the product, got ",
                residual ? residual->str() : "");
  OPGRAPH_CHECK(multiplier == nullptr || *multiplier == out, "multiplier: expected ", out.str(),
                " like the product, got ", multiplier ? multiplier->str() : "");
  return out;
}

template <bool Reference>
void fused_linear_cpu(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                      const Tensor* residual, const Tensor* multiplier, std::string_view activation,
                      const Tensor& out) {
  run_linear<Reference>(context, input, weight, bias, out, parse_activation(activation), residual, multiplier);
}

// --- linear's gradients. With rows = the input's leading dimensions folded:
//   grad_input  = grad_output[rows, N] @ weight[N, K]
//   grad_weight = grad_output^T[N, rows] @ input[rows, K]
//   grad_bias   = grad_output summed over rows ([0] when there is no bias)

std::vector<TensorMeta> linear_backward_shape(const TensorMeta& grad, const TensorMeta& input, const TensorMeta& weight,
                                              const TensorMeta* bias) {
  const TensorMeta forward = linear_shape(input, weight, bias);
  OPGRAPH_CHECK(grad == forward, "grad_output: expected ", forward.str(), " like linear's output, got ", grad.str());
  return {input, weight, bias ? *bias : TensorMeta{grad.dtype, {0}}};
}

template <bool Reference>
void linear_backward_cpu(const KernelContext& context, const Tensor& grad, const Tensor& input, const Tensor& weight,
                         const Tensor* bias, const Tensor& grad_input, const Tensor& grad_weight,
                         const Tensor& grad_bias) {
  const int64_t n = weight.size(0), k = weight.size(1);
  const int64_t rows = n == 0 ? (k == 0 ? 0 : input.numel() / k) : grad.numel() / n;
  const Operand grad_rows = operand(grad, {rows, n}, {n, 1}, 2);
  const Operand input_rows = operand(input, {rows, k}, {k, 1}, 2);
  const DType dtype = grad.dtype();
  run_product(context, {grad_rows, operand(weight, 2), operand(grad_input, {rows, k}, {k, 1}, 2), std::nullopt}, dtype,
              Reference);
  run_product(context, {operand(grad, {n, rows}, {1, n}, 2), input_rows, operand(grad_weight, 2), std::nullopt}, dtype,
              Reference);
  if (bias) column_sums(context, grad, rows, n, grad_bias, Reference);
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

TensorMeta addmm_shape(const TensorMeta& self, const TensorMeta& a, const TensorMeta& b, double, double) {
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
  return {a.dtype, out};
}

template <bool Reference>
void addmm_cpu(const KernelContext& context, const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta,
               double alpha, const Tensor& out) {
  Operand bias = operand(self, 2);
  Product p{operand(mat1, 2), operand(mat2, 2), operand(out, 2),
            std::nullopt,     Activation::None, is_constant_matrix(context, 2, mat2)};
  if (alpha == 1.0 && beta == 1.0) {
    p.bias = bias;
    return run_product(context, p, out.dtype(), Reference);
  }
  run_product(context, p, out.dtype(), Reference);
  scale_and_add(out, self, alpha, beta);
}

// --- baddbmm: beta * self + alpha * (batch1 @ batch2), self broadcast to [B, N, M].

TensorMeta baddbmm_shape(const TensorMeta& self, const TensorMeta& batch1, const TensorMeta& batch2, double, double) {
  const TensorMeta product = batched_shape<3>(batch1, batch2);
  check_dtypes(product, "batch1", self, "self");
  OPGRAPH_CHECK(self.dim() <= 3, "self: expected rank 3 or less, got ", self.str());
  for (int64_t d = 1; d <= self.dim(); ++d) {
    const int64_t extent = self.shape[self.dim() - d];
    OPGRAPH_CHECK(extent == 1 || extent == product.shape[3 - d], "self: ", self.str(),
                  " does not broadcast to the product's shape ", shape_str(product.shape));
  }
  return product;
}

template <bool Reference>
void baddbmm_cpu(const KernelContext& context, const Tensor& self, const Tensor& batch1, const Tensor& batch2,
                 double beta, double alpha, const Tensor& out) {
  run_product(context, {operand(batch1, 3), operand(batch2, 3), operand(out, 3), std::nullopt}, out.dtype(), Reference);
  scale_and_add(out, self, alpha, beta);
}

// --- matmul: torch.matmul's rules. Vectors gain a dimension for the product
// (a row for the left operand, a column for the right) that the result drops;
// batch dimensions broadcast.

TensorMeta matmul_shape(const TensorMeta& a, const TensorMeta& b) {
  check_dtypes(a, "self", b, "other");
  OPGRAPH_CHECK(a.dim() >= 1 && b.dim() >= 1, "expected operands of rank 1 or more, got ", a.str(), " and ", b.str());
  const int64_t k_a = a.shape.back(), k_b = b.dim() == 1 ? b.shape[0] : b.shape[b.dim() - 2];
  check_inner(a, k_a, b, k_b);
  Shape shape = broadcast_batch(std::span(a.shape).first(std::max<int64_t>(a.dim() - 2, 0)),
                                std::span(b.shape).first(std::max<int64_t>(b.dim() - 2, 0)));
  if (a.dim() >= 2) shape.push_back(a.shape[a.dim() - 2]);
  if (b.dim() >= 2) shape.push_back(b.shape.back());
  return {a.dtype, shape};
}

template <bool Reference>
void matmul_cpu(const KernelContext& context, const Tensor& a, const Tensor& b, const Tensor& out) {
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
            operand(out, dst_shape, contiguous_strides(dst_shape), rank),
            std::nullopt,
            Activation::None,
            is_constant_matrix(context, 1, b)};
  run_product(context, p, out.dtype(), Reference);
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
