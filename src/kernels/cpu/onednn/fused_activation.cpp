#include "kernels/cpu/onednn/fused_activation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <type_traits>
#include <utility>

#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/parallel.h"
#include "opgraph/core/error.h"

namespace opgraph::kernels {
namespace {

constexpr std::array<std::pair<std::string_view, Activation>, 8> kActivations{{{"none", Activation::None},
                                                                               {"relu", Activation::ReLU},
                                                                               {"gelu", Activation::GELU},
                                                                               {"gelu_tanh", Activation::GELUTanh},
                                                                               {"sigmoid", Activation::Sigmoid},
                                                                               {"tanh", Activation::Tanh},
                                                                               {"relu6", Activation::ReLU6},
                                                                               {"silu", Activation::SiLU}}};
constexpr float kReLU6Max = 6.0f;

// oneDNN's algorithm for f': ReLU, sigmoid, tanh and ReLU6 (a clip) in the
// forms that read the forward's output, GELU's and SiLU's (swish with alpha
// 1) from the pre-activation.
dnnl::algorithm backward_algorithm(Activation activation) {
  switch (activation) {
    case Activation::ReLU: return dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    case Activation::Sigmoid: return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
    case Activation::Tanh: return dnnl::algorithm::eltwise_tanh_use_dst_for_bwd;
    case Activation::ReLU6: return dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd;
    case Activation::GELUTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case Activation::SiLU: return dnnl::algorithm::eltwise_swish;
    default: return dnnl::algorithm::eltwise_gelu_erf;
  }
}

// A cached eltwise backward primitive and the scratchpad it takes from its
// caller (bfloat16's kernels may take one).
struct ActivationBackward {
  dnnl::primitive primitive;
  dnnl::memory::desc scratchpad;
};

// float32 and bfloat16 run on oneDNN's eltwise backward, in place on grad:
// its erf and exp are vectorized, where libm's cost a call per element
// (GELU's derivative took longer than the products of a 1024 x 1024 layer's
// backward). bfloat16 is computed in float32 and rounded once.
template <typename T>
void onednn_activation_grad(Activation activation, T* grad, const T* output, const T* pre_activation, int64_t count,
                            ThreadPool& pool) {
  const dnnl::algorithm algorithm = backward_algorithm(activation);
  const bool from_output = !derivative_needs_pre_activation(activation);
  const KernelContext given{&pool};
  // Below PyTorch's grain size the call stays on the calling thread.
  const KernelContext context = count < kParallelElements ? on_calling_thread(given) : given;
  constexpr auto type = std::is_same_v<T, float> ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
  const dnnl::memory::desc md({count}, type, dnnl::memory::format_tag::a);
  static PrimitiveCache<ActivationBackward> cache(256);
  const OneDnnStream stream(context);
  const PrimitiveCache<ActivationBackward>::Key key{static_cast<int64_t>(activation), count,
                                                    static_cast<int64_t>(type)};
  const std::shared_ptr<const ActivationBackward> backward = cached_primitive(cache, context, stream, key, [&] {
    const float alpha = activation == Activation::SiLU ? 1.0f : 0.0f;       // swish's x * sigmoid(alpha x)
    const float beta = activation == Activation::ReLU6 ? kReLU6Max : 0.0f;  // the clip's upper bound
    const dnnl::eltwise_forward::primitive_desc forward(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, md, alpha, beta), onednn_engine());
    const dnnl::eltwise_backward::primitive_desc pd(dnnl::eltwise_backward::desc(algorithm, md, md, alpha, beta),
                                                    with_caller_scratchpad(), onednn_engine(), forward);
    return ActivationBackward{dnnl::eltwise_backward(pd), pd.scratchpad_desc()};
  });
  auto wrap = [&](const T* data) { return dnnl::memory(md, onednn_engine(), const_cast<T*>(data)); };
  const dnnl::memory diff = wrap(grad);
  execute_with_scratchpad(backward->primitive, stream,
                          {{DNNL_ARG_DIFF_DST, diff},
                           {DNNL_ARG_DIFF_SRC, diff},
                           {from_output ? DNNL_ARG_DST : DNNL_ARG_SRC, wrap(from_output ? output : pre_activation)}},
                          backward->scratchpad);
  stream.wait();
}

// d/dz of 0.5 z (1 + tanh(u)), u = kGeluTanhScale (z + kGeluTanhCube z^3).
double gelu_tanh_derivative(double z) {
  const double t = std::tanh(kGeluTanhScale * (z + kGeluTanhCube * z * z * z));
  return 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * kGeluTanhScale * (1 + 3 * kGeluTanhCube * z * z);
}

// d/dz of z sigmoid(z): s (1 + z (1 - s)).
double silu_derivative(double z) {
  const double s = 1 / (1 + std::exp(-z));
  return s * (1 + z * (1 - s));
}

// grad * f'(z), f' from the activation's output y or from z, in the forms
// of PyTorch's threshold_backward, sigmoid_backward, tanh_backward and
// gelu_backward.
double times_activation_grad(Activation activation, double grad, double y, double z) {
  switch (activation) {
    case Activation::None: return grad;
    case Activation::ReLU: return y <= 0 ? 0 : grad;
    case Activation::Sigmoid: return grad * (1 - y) * y;
    case Activation::Tanh: return grad * (1 - y * y);
    case Activation::ReLU6: return y <= 0 || y >= kReLU6Max ? 0 : grad;
    case Activation::GELU: {
      // gelu'(z) = Phi(z) + z phi(z), with Phi and phi the normal cdf and pdf.
      const double cdf = 0.5 * (1 + std::erf(z * (std::numbers::sqrt2 / 2)));
      const double pdf = std::numbers::inv_sqrtpi * (std::numbers::sqrt2 / 2) * std::exp(-0.5 * z * z);
      return grad * (cdf + z * pdf);
    }
    case Activation::GELUTanh: return grad * gelu_tanh_derivative(z);
    case Activation::SiLU: return grad * silu_derivative(z);
  }
  return grad;
}

// float64, which oneDNN does not compute, and bfloat16 where oneDNN does not
// (no AVX-512): in double, rounded to T once.
template <typename T>
void plain_activation_grad(Activation activation, T* grad, const T* y, const T* z, int64_t count, ThreadPool& pool) {
  parallel_rows(KernelContext{&pool}, count, 1, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      grad[i] =
          static_cast<T>(times_activation_grad(activation, grad[i], y ? double(y[i]) : 0.0, z ? double(z[i]) : 0.0));
    }
  });
}

}  // namespace

Activation parse_activation(std::string_view name) {
  for (const auto& [known, activation] : kActivations) {
    if (name == known) return activation;
  }
  throw Error(
      detail::concat("activation: expected one of \"none\", \"relu\", \"gelu\", \"gelu_tanh\", \"sigmoid\", \"tanh\", "
                     "\"relu6\", \"silu\", got \"",
                     name, "\""));
}

std::string_view activation_name(Activation activation) {
  for (const auto& [name, known] : kActivations) {
    if (activation == known) return name;
  }
  return "none";
}

void append_activation_post_op(dnnl::post_ops& ops, Activation activation) {
  // oneDNN computes scale * f(x; alpha, beta); relu's alpha is the negative slope.
  switch (activation) {
    case Activation::None: return;
    case Activation::ReLU: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    case Activation::GELU: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case Activation::GELUTanh: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
    case Activation::Sigmoid: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_logistic, 0.0f, 0.0f);
    case Activation::Tanh: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_tanh, 0.0f, 0.0f);
    case Activation::ReLU6: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip_v2, 0.0f, kReLU6Max);
    case Activation::SiLU: return ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
  }
}

double activation_reference(Activation activation, double z) {
  switch (activation) {
    case Activation::None: return z;
    case Activation::ReLU: return z < 0 ? 0 : z;
    case Activation::GELU: return z * 0.5 * (1 + std::erf(z / std::numbers::sqrt2));
    case Activation::GELUTanh: return z * 0.5 * (1 + std::tanh(kGeluTanhScale * (z + kGeluTanhCube * z * z * z)));
    case Activation::Sigmoid: return 1 / (1 + std::exp(-z));
    case Activation::Tanh: return std::tanh(z);
    case Activation::ReLU6: return std::min(std::max(z, 0.0), double(kReLU6Max));
    case Activation::SiLU: return z / (1 + std::exp(-z));
  }
  return z;
}

double activation_derivative_reference(Activation activation, double z) {
  switch (activation) {
    case Activation::None: return 1;
    case Activation::ReLU: return z > 0 ? 1 : 0;
    case Activation::GELU:  // Phi(z) + z phi(z)
      return 0.5 * (1 + std::erf(z / std::numbers::sqrt2)) + z * std::exp(-z * z / 2) / std::sqrt(2 * std::numbers::pi);
    case Activation::GELUTanh: return gelu_tanh_derivative(z);
    case Activation::Sigmoid: {
      const double s = 1 / (1 + std::exp(-z));
      return s * (1 - s);
    }
    case Activation::Tanh: return 1 - std::tanh(z) * std::tanh(z);
    case Activation::ReLU6: return z > 0 && z < kReLU6Max ? 1 : 0;
    case Activation::SiLU: return silu_derivative(z);
  }
  return 1;
}

template <typename T>
void multiply_by_activation_grad(Activation activation, T* grad, const T* output, const T* pre_activation,
                                 int64_t count, ThreadPool& pool) {
  if (activation == Activation::None || count == 0) return;
  // oneDNN computes neither float64 nor, without AVX-512, bfloat16.
  if constexpr (!std::is_same_v<T, double>) {
    if (std::is_same_v<T, float> || onednn_computes_bfloat16()) {
      return onednn_activation_grad(activation, grad, output, pre_activation, count, pool);
    }
  }
  plain_activation_grad(activation, grad, output, pre_activation, count, pool);
}

template void multiply_by_activation_grad<float>(Activation, float*, const float*, const float*, int64_t, ThreadPool&);
template void multiply_by_activation_grad<double>(Activation, double*, const double*, const double*, int64_t,
                                                  ThreadPool&);
template void multiply_by_activation_grad<BFloat16>(Activation, BFloat16*, const BFloat16*, const BFloat16*, int64_t,
                                                    ThreadPool&);

}  // namespace opgraph::kernels
