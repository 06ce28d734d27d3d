// opgraph::rotary_embedding: the rotary position embedding of Llama, Mistral,
// Qwen, Phi and GPT-NeoX, as transformers' apply_rotary_pos_emb writes it:
//
//   y = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x2, x1)
//
// where x1 and x2 are the two halves of x's last dim, and cos and sin (one
// shape) broadcast to x's. Exported, that is seven nodes per tensor, each a
// pass over q or k (graph/rotary_embedding.cpp fuses them); here it is one.
#include <span>

#include "kernels/cpu/util/broadcast.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

TensorMeta rotary_embedding_shape(const TensorMeta& input, const TensorMeta& cos, const TensorMeta& sin) {
  check_floating(input, "input");
  OPGRAPH_CHECK(input.dim() >= 1 && input.shape.back() % 2 == 0,
                "input: expected an even number of features in the last dim, got ", input.str());
  for (const auto& [meta, name] : {std::pair{&cos, "cos"}, std::pair{&sin, "sin"}}) {
    OPGRAPH_CHECK(meta->dtype == input.dtype && meta->dim() >= 1 && meta->dim() <= input.dim() &&
                      meta->shape.back() == input.shape.back(),
                  name, ": expected ", dtype_name(input.dtype), " with input's ", input.shape.back(),
                  " features in the last dim, got ", meta->str());
    for (int64_t i = 1; i <= meta->dim(); ++i) {
      const int64_t extent = meta->shape[meta->dim() - i];
      OPGRAPH_CHECK(extent == 1 || extent == input.shape[input.dim() - i], name,
                    ": expected a shape that broadcasts to input ", input.str(), ", got ", meta->str());
    }
  }
  OPGRAPH_CHECK(cos.shape == sin.shape, "sin: expected cos's shape ", shape_str(cos.shape), ", got ", sin.str());
  return input;
}

// One row of `features` elements; c and s are that row's cos and sin.
template <typename T>
void rotate_row(const T* x, const T* c, const T* s, T* y, int64_t features) {
  const int64_t half = features / 2;
  for (int64_t i = 0; i < half; ++i) y[i] = x[i] * c[i] - x[i + half] * s[i];
  for (int64_t i = half; i < features; ++i) y[i] = x[i] * c[i] + x[i - half] * s[i];
}

void rotary_embedding_cpu(const KernelContext& context, const Tensor& input, const Tensor& cos, const Tensor& sin,
                          const Tensor& out) {
  if (input.numel() == 0) return;
  const Shape& shape = input.shape();
  const int64_t features = shape.back();
  // The op takes contiguous operands: the output's rows lie where the input's do.
  const std::array<Strides, 2> strides = {input.strides(), broadcast_strides(cos.shape(), shape)};
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const T *x = input.data_ptr<const T>(), *c = cos.data_ptr<const T>(), *s = sin.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    parallel_items(context, input.numel() / features, features, [&](int64_t begin, int64_t end) {
      for_each_row(std::span<const int64_t>(shape), strides, begin, end, [&](const std::array<int64_t, 2>& at) {
        rotate_row(x + at[0], c + at[1], s + at[1], y + at[0], features);
      });
    });
  });
}

// Element by element, from the definition: x * cos + cat(-x2, x1) * sin.
void rotary_embedding_reference(const KernelContext&, const Tensor& input, const Tensor& cos, const Tensor& sin,
                                const Tensor& out) {
  const Shape& shape = input.shape();
  const Strides trig = broadcast_strides(cos.shape(), shape);
  dispatch_floating(input.dtype(), "input", [&](auto zero) {
    using T = decltype(zero);
    const int64_t features = shape.empty() ? 1 : shape.back(), half = features / 2;
    for (int64_t i = 0; i < input.numel(); ++i) {
      const int64_t k = i % features, at = strided_offset(i, shape, trig);
      const double x = input.data_ptr<const T>()[i];
      const double rotated =
          k < half ? -double(input.data_ptr<const T>()[i + half]) : double(input.data_ptr<const T>()[i - half]);
      out.data_ptr<T>()[i] = static_cast<T>(x * cos.data_ptr<const T>()[at] + rotated * sin.data_ptr<const T>()[at]);
    }
  });
}

}  // namespace

void register_rotary_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "opgraph::rotary_embedding(Tensor input, Tensor cos, Tensor sin) -> Tensor",
                    .shape = rotary_embedding_shape,
                    .cpu = rotary_embedding_cpu,
                    .reference = rotary_embedding_reference});
}

}  // namespace opgraph::kernels
