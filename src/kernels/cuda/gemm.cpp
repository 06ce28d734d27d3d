// opgraph::gemm and its gradient on CUDA: f(a @ b + bias) with b stored
// (K, N), as kernels/cpu/ops/gemm.cpp defines them. The product runs on
// cuBLASLt with the bias and ReLU fused as its epilogue in float32 and
// bfloat16 (summed in float32, rounded once); the other activations, and
// every float64 case, take one elementwise pass after.
#include "kernels/cuda/blas_lt.h"
#include "kernels/cuda/epilogue.h"
#include "kernels/cuda/register.h"

namespace opgraph::cuda {
namespace {

using kernels::Activation;

// out = f(a @ b + bias), a (m x k) and b (k x n) row-major.
void fused_gemm(const Tensor& a, const Tensor& b, const Tensor& bias, const Tensor& out, Activation activation,
                cudaStream_t stream) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  // cuBLASLt has no epilogue in float64, nor on an empty sum.
  const bool epilogue = out.dtype() != DType::Float64 && k > 0;
  const bool fused_relu = epilogue && activation == Activation::ReLU;
  matmul(out, {a.data(), false}, {b.data(), false}, m, n, k, epilogue && bias.defined() ? bias.data() : nullptr,
         fused_relu, stream);
  add_bias_and_activate(out, epilogue ? Tensor() : bias, fused_relu ? Activation::None : activation, stream);
}

void gemm_kernel(const KernelContext& context, const Tensor& a, const Tensor& b, const Tensor* bias,
                 std::string_view activation, const Tensor& out) {
  fused_gemm(a, b, bias ? *bias : Tensor(), out, kernels::parse_activation(activation), stream_of(context));
}

// dz = grad_output * f'(z), then dA = dz @ b^T, dB = a^T @ dz and dbias =
// the column sums of dz.
void gemm_backward_kernel(const KernelContext& context, const Tensor& grad, const Tensor& a, const Tensor& b,
                          const Tensor* given_bias, const Tensor& output, std::string_view activation_name,
                          const Tensor& grad_a, const Tensor& grad_b, const Tensor& grad_bias) {
  const Tensor bias = given_bias ? *given_bias : Tensor();
  const cudaStream_t stream = stream_of(context);
  const Activation activation = kernels::parse_activation(activation_name);
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor dz = grad;
  if (activation != Activation::None) {
    dz = grad.clone();
    // GELU's derivative needs z, which its output does not determine: recompute it.
    Tensor z;
    if (kernels::derivative_needs_pre_activation(activation)) {
      z = Tensor::empty(grad.meta(), grad.device());
      fused_gemm(a, b, bias, z, Activation::None, stream);
    }
    multiply_by_activation_grad(dz, output, z, activation, stream);
  }
  matmul(grad_a, {dz.data(), false}, {b.data(), true}, m, k, n, nullptr, false, stream);
  matmul(grad_b, {a.data(), true}, {dz.data(), false}, k, n, m, nullptr, false, stream);
  if (bias.defined()) column_sums(dz, m, grad_bias, stream);
}

}  // namespace

void register_gemm_kernels(CudaKernels& kernels) {
  add_cuda_kernel(kernels, "opgraph::gemm", gemm_kernel);
  add_cuda_kernel(kernels, "opgraph::gemm_backward", gemm_backward_kernel);
}

}  // namespace opgraph::cuda
