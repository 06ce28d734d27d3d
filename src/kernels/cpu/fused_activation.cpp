#include "kernels/cpu/fused_activation.h"

#include <cmath>
#include <numbers>

#include "opgraph/core/error.h"

namespace opgraph::kernels {
namespace {

// Below this many elements, waking the pool costs more than the loop itself.
constexpr int64_t kParallelThreshold = int64_t{1} << 16;

constexpr double kSqrtHalf = std::numbers::sqrt2 / 2;
constexpr double kInvSqrt2Pi = std::numbers::inv_sqrtpi * kSqrtHalf;  // 1 / sqrt(2 pi)

// grad[i] = update(grad[i], i) over [0, count), split over the pool when large.
template <typename T, typename Update>
void update_each(T* grad, int64_t count, ThreadPool& pool, Update&& update) {
  const auto chunk = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) grad[i] = update(grad[i], i);
  };
  if (count < kParallelThreshold) return chunk(0, count);
  pool.parallel_for(0, count, kParallelThreshold / 2, chunk);
}

}  // namespace

Activation parse_activation(std::string_view name) {
  if (name == "none") return Activation::None;
  if (name == "relu") return Activation::ReLU;
  if (name == "gelu") return Activation::GELU;
  if (name == "sigmoid") return Activation::Sigmoid;
  if (name == "tanh") return Activation::Tanh;
  throw Error(detail::concat("activation: expected one of \"none\", \"relu\", \"gelu\", \"sigmoid\", \"tanh\", got \"",
                             name, "\""));
}

void append_activation_post_op(dnnl::post_ops& ops, Activation activation) {
  using dnnl::algorithm;
  switch (activation) {
    case Activation::None: return;
    case Activation::ReLU: return ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    case Activation::GELU: return ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case Activation::Sigmoid: return ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
    case Activation::Tanh: return ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
  }
}

template <typename T>
void multiply_by_activation_grad(Activation activation, T* grad, const T* output, const T* pre_activation,
                                 int64_t count, ThreadPool& pool) {
  const T* y = output;
  const T* z = pre_activation;
  switch (activation) {
    case Activation::None: return;
    // A select rather than a product, as torch's threshold_backward: an
    // infinite gradient where the output is 0 gives 0, not NaN.
    case Activation::ReLU:
      return update_each(grad, count, pool, [y](T g, int64_t i) { return y[i] <= T(0) ? T(0) : g; });
    case Activation::Sigmoid:
      return update_each(grad, count, pool, [y](T g, int64_t i) { return g * (T(1) - y[i]) * y[i]; });
    case Activation::Tanh:
      return update_each(grad, count, pool, [y](T g, int64_t i) { return g * (T(1) - y[i] * y[i]); });
    // gelu(z) = z * Phi(z), so gelu' = Phi(z) + z * phi(z).
    case Activation::GELU:
      return update_each(grad, count, pool, [z](T g, int64_t i) {
        const T cdf = T(0.5) * (T(1) + std::erf(z[i] * T(kSqrtHalf)));
        const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * z[i] * z[i]);
        return g * (cdf + z[i] * pdf);
      });
  }
}

// The dtypes the fused ops compute in.
template void multiply_by_activation_grad<float>(Activation, float*, const float*, const float*, int64_t,
                                                 ThreadPool&);
template void multiply_by_activation_grad<double>(Activation, double*, const double*, const double*, int64_t,
                                                  ThreadPool&);

}  // namespace opgraph::kernels
