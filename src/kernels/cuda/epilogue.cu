#include "kernels/cuda/epilogue.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "cuda/cuda_check.h"
#include "kernels/cuda/register.h"
#include "kernels/define.h"

namespace opgraph {
// bfloat16 tensors' elements, as the kernels below read and write them.
template <>
struct DTypeOf<__nv_bfloat16> {
  static constexpr DType value = DType::BFloat16;
};
}  // namespace opgraph

namespace opgraph::cuda {
namespace {

using kernels::Activation;

constexpr int kThreads = 256;

using kernels::kGeluTanhCube;
using kernels::kGeluTanhScale;

// The type an element of T is computed in: double for float64, float for
// float32 and bfloat16, which is rounded once, on the store.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The argument of GELU's tanh form: kGeluTanhScale (z + kGeluTanhCube z^3).
template <typename T>
__device__ T gelu_tanh_argument(T z) {
  return T(kGeluTanhScale) * (z + T(kGeluTanhCube) * z * z * z);
}

template <typename T>
__device__ T activate(Activation activation, T z) {
  switch (activation) {
    case Activation::None: return z;
    case Activation::ReLU: return z > 0 ? z : T(0);
    case Activation::GELU: return T(0.5) * z * (T(1) + erf(z * T(M_SQRT1_2)));
    case Activation::GELUTanh: return T(0.5) * z * (T(1) + tanh(gelu_tanh_argument(z)));
    case Activation::Sigmoid: return T(1) / (T(1) + exp(-z));
    case Activation::Tanh: return tanh(z);
    case Activation::ReLU6: return z < 0 ? T(0) : (z > 6 ? T(6) : z);
    case Activation::SiLU: return z / (T(1) + exp(-z));
  }
  return z;
}

// f'(z) from y = f(z), or from z itself for GELU's two forms (see the header).
template <typename T>
__device__ T derivative(Activation activation, T y, T z) {
  switch (activation) {
    case Activation::None: return 1;
    case Activation::ReLU: return y > 0 ? T(1) : T(0);
    case Activation::GELU:
      return T(0.5) * (T(1) + erf(z * T(M_SQRT1_2))) + z * exp(T(-0.5) * z * z) * T(0.5 * M_2_SQRTPI * M_SQRT1_2);
    case Activation::GELUTanh: {
      const T t = tanh(gelu_tanh_argument(z));
      return T(0.5) * (T(1) + t) +
             T(0.5) * z * (T(1) - t * t) * T(kGeluTanhScale) * (T(1) + T(3 * kGeluTanhCube) * z * z);
    }
    case Activation::Sigmoid: return y * (T(1) - y);
    case Activation::Tanh: return T(1) - y * y;
    case Activation::ReLU6: return y > 0 && y < 6 ? T(1) : T(0);
    case Activation::SiLU: {
      const T s = T(1) / (T(1) + exp(-z));
      return s * (T(1) + z * (T(1) - s));
    }
  }
  return 1;
}

// c as rows of `row` elements, [biases][run] each where there is a bias:
// blockIdx.y walks the rows and the threads a row, so that an element's bias
// costs one 32-bit division (none for a per-column bias, run 1) rather than
// 64-bit ones.
template <typename T>
__global__ void bias_activation(T* c, const T* bias, int64_t count, int32_t row, int32_t run, Activation activation) {
  using C = Compute<T>;
  for (int64_t start = blockIdx.y * int64_t(row); start < count; start += gridDim.y * int64_t(row)) {
    T* values = c + start;
    const int32_t length = static_cast<int32_t>(count - start < row ? count - start : row);
    for (int32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < length; i += gridDim.x * blockDim.x) {
      const C z = bias ? C(values[i]) + C(bias[run == 1 ? i : i / run]) : C(values[i]);
      values[i] = T(activate(activation, z));
    }
  }
}

template <typename T>
__global__ void activation_grad(T* grad, const T* output, const T* pre_activation, int64_t count,
                                Activation activation) {
  using C = Compute<T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    const C z = pre_activation ? C(pre_activation[i]) : C(0);
    grad[i] = T(C(grad[i]) * derivative(activation, C(output[i]), z));
  }
}

// One thread per column, walking the rows: coalesced across the threads of a warp.
template <typename T>
__global__ void sum_columns(const T* matrix, T* sums, int64_t rows, int64_t columns) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < columns; j += int64_t(gridDim.x) * blockDim.x) {
    Compute<T> sum = 0;
    for (int64_t i = 0; i < rows; ++i) sum += Compute<T>(matrix[i * columns + j]);
    sums[j] = T(sum);
  }
}

}  // namespace

void add_bias_and_activate(const Tensor& c, const Tensor& bias, Activation activation, cudaStream_t stream,
                           int64_t run) {
  if (c.numel() == 0 || (!bias.defined() && activation == Activation::None)) return;
  // Without a bias every element is alike, and any row length will do.
  const int64_t row = bias.defined() ? bias.numel() * run : std::min<int64_t>(c.numel(), int64_t(1) << 24);
  OPGRAPH_CHECK(row <= INT32_MAX, "add_bias_and_activate on cuda: ", row, " elements per bias row exceed 2^31 - 1");
  const int64_t rows = (c.numel() + row - 1) / row;
  const dim3 grid(blocks_for(row, kThreads), static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  kernels::dispatch_floating<__nv_bfloat16>(c.dtype(), "output", [&](auto zero) {
    using T = decltype(zero);
    bias_activation<T><<<grid, kThreads, 0, stream>>>(c.data_ptr<T>(),
                                                      bias.defined() ? bias.data_ptr<const T>() : nullptr, c.numel(),
                                                      static_cast<int32_t>(row), static_cast<int32_t>(run), activation);
  });
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
}

void multiply_by_activation_grad(const Tensor& grad, const Tensor& output, const Tensor& pre_activation,
                                 Activation activation, cudaStream_t stream) {
  if (grad.numel() == 0 || activation == Activation::None) return;
  kernels::dispatch_floating<__nv_bfloat16>(grad.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    activation_grad<T><<<blocks_for(grad.numel(), kThreads), kThreads, 0, stream>>>(
        grad.data_ptr<T>(), output.data_ptr<const T>(),
        pre_activation.defined() ? pre_activation.data_ptr<const T>() : nullptr, grad.numel(), activation);
  });
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
}

void column_sums(const Tensor& matrix, int64_t rows, const Tensor& sums, cudaStream_t stream) {
  if (sums.numel() == 0) return;
  kernels::dispatch_floating<__nv_bfloat16>(sums.dtype(), "sums", [&](auto zero) {
    using T = decltype(zero);
    sum_columns<T><<<blocks_for(sums.numel(), kThreads), kThreads, 0, stream>>>(matrix.data_ptr<const T>(),
                                                                                sums.data_ptr<T>(), rows, sums.numel());
  });
  OPGRAPH_CUDA_CHECK(cudaGetLastError());
}

}  // namespace opgraph::cuda
