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

// Inputs a, b, bias?: checks them and returns the output's meta.
TensorMeta gemm_meta(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const TensorMeta &a = *in[0], &b = *in[1];
  check_dtypes(a, "a", b, "b", kTakesBFloat16);
  check_rank(a, "a", 2);
  check_rank(b, "b", 2);
  check_inner(a, a.shape[1], b, b.shape[0]);
  if (in[2]) {
    check_dtypes(a, "a", *in[2], "bias", kTakesBFloat16);
    OPGRAPH_CHECK(in[2]->dim() == 1 && in[2]->shape[0] == b.shape[1], "bias: expected ", dtype_name(a.dtype), "[",
                  b.shape[1], "] (one per column of b), got ", in[2]->str());
  }
  activation_attr(attrs);
  return {a.dtype, {a.shape[0], b.shape[1]}};
}

std::vector<TensorMeta> gemm_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  return {gemm_meta(in, attrs)};
}

// dst = f(a @ b + bias), the bias broadcast over the rows; `constant_b`: b
// is a Session's weight, multiplied in the layout it was packed into once.
Product gemm_product(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& dst, Activation activation,
                     bool constant_b = false) {
  Product p{operand(a, 2), operand(b, 2), operand(dst, 2), std::nullopt, activation, constant_b};
  const int64_t n = dst.size(1);
  if (bias.defined()) p.bias = operand(bias, {1, n}, {n, 1}, 2);
  return p;
}

template <bool Reference>
void gemm_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
              const Attrs& attrs) {
  const Product p =
      gemm_product(in[0], in[1], in[2], out[0], activation_attr(attrs), is_constant_matrix(context, 1, in[1]));
  run_product(context, p, out[0].dtype(), Reference);
}

// --- Gradients. Inputs: grad_output, a, b, bias?, output (the forward's).

std::vector<TensorMeta> gemm_backward_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const TensorMeta forward = gemm_meta(in.subspan(1, 3), attrs);
  check_same_meta(*in[0], "grad_output", forward, "gemm's output");
  check_same_meta(*in[4], "output", forward, "gemm's output");
  const TensorMeta grad_bias = in[3] ? *in[3] : TensorMeta{forward.dtype, {0}};
  return {*in[1], *in[2], grad_bias};
}

// The gradient of the pre-activation: grad_output itself without an
// activation, else a scratch copy multiplied by f'(z).
Tensor pre_activation_grad(const KernelContext& context, std::span<const Tensor> in, Activation activation) {
  const Tensor &grad = in[0], &a = in[1], &b = in[2], &bias = in[3], &output = in[4];
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

void gemm_backward_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                       const Attrs& attrs) {
  const Tensor &a = in[1], &b = in[2];
  const DType dtype = a.dtype();
  const Tensor dz = pre_activation_grad(context, in, activation_attr(attrs));
  run_product(context, {operand(dz, 2), operand(b, 2, /*transposed=*/true), operand(out[0], 2), std::nullopt}, dtype,
              false);
  run_product(context, {operand(a, 2, /*transposed=*/true), operand(dz, 2), operand(out[1], 2), std::nullopt}, dtype,
              false);
  if (in[3].defined()) column_sums(context, dz, dz.size(0), dz.size(1), out[2], false);
}

// Every sum written out, in double: z, dz, then dA, dB and dbias entry by entry.
void gemm_backward_reference(const KernelContext&, std::span<const Tensor> in, std::span<const Tensor> out,
                             const Attrs& attrs) {
  const Activation activation = activation_attr(attrs);
  const int64_t m = in[1].size(0), k = in[1].size(1), n = in[2].size(1);
  dispatch_floating<BFloat16>(in[1].dtype(), "a", [&](auto zero) {
    using T = decltype(zero);
    const T *grad = in[0].data_ptr<const T>(), *a = in[1].data_ptr<const T>(), *b = in[2].data_ptr<const T>();
    const T* bias = in[3].defined() ? in[3].data_ptr<const T>() : nullptr;
    std::vector<double> dz(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double z = bias ? bias[j] : 0.0;
        for (int64_t q = 0; q < k; ++q) z += double(a[i * k + q]) * b[q * n + j];
        dz[i * n + j] = grad[i * n + j] * activation_derivative_reference(activation, z);
      }
    }
    T *grad_a = out[0].data_ptr<T>(), *grad_b = out[1].data_ptr<T>();
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
      out[2].data_ptr<T>()[j] = static_cast<T>(sum);
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
