// The activation a fused op applies to its result (kernels/activation.h), run
// as a oneDNN post-op in the forward kernel and differentiated in the
// backward one.
#pragma once

#include <cstdint>
#include <string_view>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/activation.h"
#include "kernels/cpu/util/bfloat16.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {

// f(z) and f'(z) in double, from the definitions (GELU: erf form), for the
// reference implementations.
double activation_reference(Activation activation, double z);
double activation_derivative_reference(Activation activation, double z);

// Appends the activation as a oneDNN eltwise post-op (GELU: erf form); no-op for None.
void append_activation_post_op(dnnl::post_ops& ops, Activation activation);

// grad[i] *= f'(z[i]), from the activation's output y (ReLU, Sigmoid, Tanh, ReLU6) or,
// for GELU, from the pre-activation z (pass nullptr where not needed); float32
// and bfloat16 in float32, float64 in double.
template <typename T>
void multiply_by_activation_grad(Activation activation, T* grad, const T* output, const T* pre_activation,
                                 int64_t count, ThreadPool& pool);

extern template void multiply_by_activation_grad<float>(Activation, float*, const float*, const float*, int64_t,
                                                        ThreadPool&);
extern template void multiply_by_activation_grad<double>(Activation, double*, const double*, const double*, int64_t,
                                                         ThreadPool&);
extern template void multiply_by_activation_grad<BFloat16>(Activation, BFloat16*, const BFloat16*, const BFloat16*,
                                                           int64_t, ThreadPool&);

}  // namespace opgraph::kernels
