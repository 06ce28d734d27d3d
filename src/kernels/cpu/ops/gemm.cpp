// gemm: a dense layer's forward, f(a @ b + bias), with b in (K, N) layout as
// the layer stores its weights, and its gradients.
//
// The forward is one product with the bias and the activation fused
// (kernels/cpu/engines/product.h; on oneDNN, a matmul with an eltwise post-op). The
// backward turns grad_output into the gradient of the pre-activation
// z = a @ b + bias, dz = grad_output * f'(z), then takes three more products:
// dA = dz @ b^T, dB = a^T @ dz and dbias = ones^T @ dz (column sums).
//
// float32, float64 and bfloat16. The fast kernels compute bfloat16 as PyTorch
// does: each product, f and f' in float32, each result (z, dz, the
// gradients) rounded to bfloat16 once; the reference in double, rounding only
// its outputs.
#include <cmath>
#include <numbers>
#include <string>

#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/util/bfloat16.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

constexpr bool kTakesBFloat16 = true;

// Checks the operands and the activation and returns the output's meta.
TensorMeta gemm_shape(const TensorMeta& a, const TensorMeta& b, const TensorMeta* bias, std::string_view activation) {
  check_dtypes(a, "a", b, "b", kTakesBFloat16);
  check_rank(a, "a", 2);
  check_rank(b, "b", 2);
  check_inner(a, a.shape[1], b, b.shape[0]);
  if (bias) {
    check_dtypes(a, "a", *bias, "bias", kTakesBFloat16);
    OPGRAPH_CHECK(bias->dim() == 1 && bias->shape[0] == b.shape[1], "bias: expected ", dtype_name(a.dtype), "[",
                  b.shape[1], "] (one per column of b), got ", bias->str());
  }
  parse_activation(activation);
  return {a.dtype, {a.shape[0], b.shape[1]}};
}

// dst = f(a @ b + bias), the bias broadcast over the rows; `constant_b`: b
// is a Session's weight, multiplied in the layout it was packed into once.
Product gemm_product(const Tensor& a, const Tensor& b, const Tensor* bias, const Tensor& dst, Activation activation,
                     bool constant_b = false) {
  Product p{operand(a, 2), operand(b, 2), operand(dst, 2), std::nullopt, activation, constant_b};
  const int64_t n = dst.size(1);
  if (bias) p.bias = operand(*bias, {1, n}, {n, 1}, 2);
  return p;
}

template <bool Reference>
void gemm_cpu(const KernelContext& context, const Tensor& a, const Tensor& b, const Tensor* bias,
              std::string_view activation, const Tensor& out) {
  const Product p = gemm_product(a, b, bias, out, parse_activation(activation), is_constant_matrix(context, 1, b));
  run_product(context, p, out.dtype(), Reference);
}

// --- Gradients, from grad_output and the forward's inputs and output.

std::vector<TensorMeta> gemm_backward_shape(const TensorMeta& grad_output, const TensorMeta& a, const TensorMeta& b,
                                            const TensorMeta* bias, const TensorMeta& output,
                                            std::string_view activation) {
  const TensorMeta forward = gemm_shape(a, b, bias, activation);
  check_same_meta(grad_output, "grad_output", forward, "gemm's output");
  check_same_meta(output, "output", forward, "gemm's output");
  return {a, b, bias ? *bias : TensorMeta{forward.dtype, {0}}};
}

// The gradient of the pre-activation: grad_output itself without an
// activation, else a scratch copy multiplied by f'(z).
Tensor pre_activation_grad(const KernelContext& context, const Tensor& grad, const Tensor& a, const Tensor& b,
                           const Tensor* bias, const Tensor& output, Activation activation) {
  if (activation == Activation::None) return grad;
  Tensor dz = grad.clone();
  // GELU's derivative needs z, which its output does not determine (gelu is
  // not monotonic) and the fused forward never stored: recompute it, at the
  // cost of one more forward product.
  Tensor z;
  if (derivative_needs_pre_activation(activation)) {
    z = Tensor::empty(grad.meta());
    run_product(context, gemm_product(a, b, bias, z, Activation::None), z.dtype(), false);
  }
  dispatch_floating<BFloat16>(grad.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    multiply_by_activation_grad<T>(activation, dz.data_ptr<T>(), output.data_ptr<const T>(),
                                   z.defined() ? z.data_ptr<const T>() : nullptr, dz.numel(), *context.pool);
  });
  return dz;
}

void gemm_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& a, const Tensor& b,
                       const Tensor* bias, const Tensor& output, std::string_view activation, const Tensor& grad_a,
                       const Tensor& grad_b, const Tensor& grad_bias) {
  const DType dtype = a.dtype();
  const Tensor dz = pre_activation_grad(context, grad_output, a, b, bias, output, parse_activation(activation));
  run_product(context, {operand(dz, 2), operand(b, 2, /*transposed=*/true), operand(grad_a, 2), std::nullopt}, dtype,
              false);
  run_product(context, {operand(a, 2, /*transposed=*/true), operand(dz, 2), operand(grad_b, 2), std::nullopt}, dtype,
              false);
  if (bias) column_sums(context, dz, dz.size(0), dz.size(1), grad_bias, false);
}

// Every sum written out, in double: z, dz, then dA, dB and dbias entry by entry.
void gemm_backward_reference(const KernelContext&, const Tensor& grad_output, const Tensor& a_tensor,
                             const Tensor& b_tensor, const Tensor* bias_tensor, const Tensor&,
                             std::string_view activation_name, const Tensor& grad_a_tensor, const Tensor& grad_b_tensor,
                             const Tensor& grad_bias_tensor) {
  const Activation activation = parse_activation(activation_name);
  const int64_t m = a_tensor.size(0), k = a_tensor.size(1), n = b_tensor.size(1);
  dispatch_floating<BFloat16>(a_tensor.dtype(), "a", [&](auto zero) {
    using T = decltype(zero);
    const T *grad = grad_output.data_ptr<const T>(), *a = a_tensor.data_ptr<const T>(),
            *b = b_tensor.data_ptr<const T>();
    const T* bias = bias_tensor ? bias_tensor->data_ptr<const T>() : nullptr;
    std::vector<double> dz(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double z = bias ? bias[j] : 0.0;
        for (int64_t q = 0; q < k; ++q) z += double(a[i * k + q]) * b[q * n + j];
        dz[i * n + j] = grad[i * n + j] * activation_derivative_reference(activation, z);
      }
    }
    T *grad_a = grad_a_tensor.data_ptr<T>(), *grad_b = grad_b_tensor.data_ptr<T>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t q = 0; q < k; ++q) {
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += dz[i * n + j] * b[q * n + j];
        grad_a[i * k + q] = static_cast<T>(sum);
      }
    }
    for (int64_t q = 0; q < k; ++q) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t i = 0; i < m; ++i) sum += double(a[i * k + q]) * dz[i * n + j];
        grad_b[q * n + j] = static_cast<T>(sum);
      }
    }
    if (!bias) return;
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < m; ++i) sum += dz[i * n + j];
      grad_bias_tensor.data_ptr<T>()[j] = static_cast<T>(sum);
    }
  });
}

}  // namespace

void register_gemm_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "opgraph::gemm(Tensor a, Tensor b, Tensor? bias=None, *, str activation=\"none\") -> Tensor",
          .shape = gemm_shape,
          OPGRAPH_CPU_AND_REFERENCE(gemm_cpu),
          .backward = "opgraph::gemm_backward",
          .prepare = prepare_weights});
  define(builtins,
         {.schema = "opgraph::gemm_backward(Tensor grad_output, Tensor a, Tensor b, Tensor? bias, Tensor output, *, "
                    "str activation=\"none\") -> (Tensor grad_a, Tensor grad_b, Tensor grad_bias)",
          .shape = gemm_backward_shape,
          .cpu = gemm_backward_cpu,
          .reference = gemm_backward_reference,
          .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
