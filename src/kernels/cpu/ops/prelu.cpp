// aten::prelu: x where x > 0, else weight[c] * x, with c the channel (dim 1)
// of each element, or one weight for every element (torch.nn.PReLU's
// default, and the only form an input of rank below 2 takes).
#include "kernels/cpu/util/parallel.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// The input as [outer, channels, inner] for its weights.
struct Channels {
  int64_t outer, channels, inner;
};

Channels channels_of(const TensorMeta& self) {
  if (self.dim() < 2) return {1, 1, self.numel()};
  return {self.shape[0], self.shape[1], shape_numel(std::span(self.shape).subspan(2))};
}

TensorMeta prelu_shape(const TensorMeta& self, const TensorMeta& weight) {
  OPGRAPH_CHECK(self.dtype == DType::Float32 || self.dtype == DType::Float64, "self: expected float32 or float64, got ",
                self.str());
  OPGRAPH_CHECK(weight.dtype == self.dtype, "weight: expected ", dtype_name(self.dtype), " like self, got ",
                weight.str());
  const int64_t channels = channels_of(self).channels;
  OPGRAPH_CHECK(weight.dim() <= 1 && (weight.numel() == 1 || weight.numel() == channels),
                "weight: expected 1 value or one per channel (", channels, " for self ", self.str(), "), got ",
                weight.str());
  return self;
}

void prelu_cpu(const KernelContext& context, const Tensor& self, const Tensor& weight, const Tensor& out) {
  const Channels shape = channels_of(self.meta());
  const bool shared = weight.numel() == 1;
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<T>();
    const T* w = weight.data_ptr<T>();
    T* y = out.data_ptr<T>();
    parallel_rows(context, shape.outer * shape.channels, shape.inner, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const T slope = w[shared ? 0 : row % shape.channels];
        for (int64_t i = row * shape.inner; i < (row + 1) * shape.inner; ++i) y[i] = x[i] > 0 ? x[i] : slope * x[i];
      }
    });
  });
}

// Element by element, each one's channel from its flat index, in double.
void prelu_reference(const KernelContext&, const Tensor& self, const Tensor& weight, const Tensor& out) {
  const Channels shape = channels_of(self.meta());
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < self.numel(); ++i) {
      const double x = self.data_ptr<T>()[i];
      const double slope = weight.data_ptr<T>()[weight.numel() == 1 ? 0 : i / shape.inner % shape.channels];
      out.data_ptr<T>()[i] = static_cast<T>(x > 0 ? x : slope * x);
    }
  });
}

}  // namespace

void register_prelu_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::prelu(Tensor self, Tensor weight) -> Tensor",
                    .shape = prelu_shape,
                    .cpu = prelu_cpu,
                    .reference = prelu_reference});
}

}  // namespace opgraph::kernels
