// The layers whose weight was quantized ahead of time (`opgraph quantize`,
// or a graph quantized by torchao), stored as integer levels and float32
// scales: opgraph::quantized_linear,
//
//   out = input @ (weight * scale)^T + bias
//
// weight[j] holds output j's levels, int8 (bits 8) or two to a byte (bits
// 4: input 2i in the low nibble, 2i + 1 in the high one, each stored plus
// 8, so a byte holds levels in [-8, 7]); scale[j, g] is the scale of inputs
// [g * group_size, (g + 1) * group_size), and zero_point[j, g], where given
// (int8), their zero point: the weight is (level - zero_point) * scale, as
// torchao's dequantize_affine makes it.
//
// and opgraph::quantized_embedding, the rows of the same levels, scales and
// zero points that `indices` names, dequantized.
//
// Where the CPU has AVX2 or AVX-512, a linear layer's levels are packed into
// the integer panels that a Session quantizing at load multiplies
// (engines/weight_panels.h), unpacked in registers; elsewhere the weight is
// dequantized into a float32 copy for each call, and the product runs as
// linear's does.
#include <cstring>
#include <type_traits>

#include "core/weight_levels.h"
#include "kernels/cpu/engines/few_rows_product.h"
#include "kernels/cpu/engines/int8_product.h"
#include "kernels/cpu/engines/product.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// A group is all of a row's inputs, or whole blocks of 32 of them: the
// panels' blocks each take one scale.
constexpr int64_t kGroupMultiple = 32;

TensorMeta quantized_linear_shape(const TensorMeta& input, const TensorMeta& weight, const TensorMeta& scale,
                                  const TensorMeta* bias, const TensorMeta* zero_point, int64_t bits,
                                  int64_t group_size) {
  OPGRAPH_CHECK(input.dtype == DType::Float32 && input.dim() >= 1, "input: expected float32 of rank 1 or more, got ",
                input.str());
  OPGRAPH_CHECK(bits == 4 || bits == 8, "bits: expected 4 or 8, got ", bits);
  const int64_t k = input.shape.back();
  OPGRAPH_CHECK(group_size > 0 && k % group_size == 0 && (group_size % kGroupMultiple == 0 || group_size == k),
                "group_size: expected input's ", k, " features, or a multiple of ", kGroupMultiple,
                " that divides them, got ", group_size);
  OPGRAPH_CHECK(bits == 8 || k % 2 == 0, "input: int4 levels come in pairs of features, and input has ", k);
  const DType levels = bits == 8 ? DType::Int8 : DType::UInt8;
  const int64_t per_row = bits == 8 ? k : k / 2;
  OPGRAPH_CHECK(weight.dtype == levels && weight.dim() == 2 && weight.shape[1] == per_row, "weight: expected ",
                dtype_name(levels), "[N, ", per_row, "] (", bits, "-bit levels of input's ", k,
                " features for each output), got ", weight.str());
  const int64_t n = weight.shape[0];
  OPGRAPH_CHECK(scale.dtype == DType::Float32 && scale.shape == Shape({n, k / group_size}), "scale: expected float32[",
                n, ", ", k / group_size, "] (a scale per output and group of ", group_size, " features), got ",
                scale.str());
  OPGRAPH_CHECK(bias == nullptr || (bias->dtype == DType::Float32 && bias->shape == Shape({n})),
                "bias: expected float32[", n, "], got ", bias ? bias->str() : "");
  OPGRAPH_CHECK(zero_point == nullptr || (zero_point->dtype == DType::Int8 && zero_point->shape == scale.shape),
                "zero_point: expected int8[", n, ", ", k / group_size, "] (one per scale), got ",
                zero_point ? zero_point->str() : "");
  Shape shape = input.shape;
  shape.back() = n;
  return {DType::Float32, shape};
}

// A layer's levels, scales and zero points, read element by element.
struct StoredWeight {
  const Tensor& weight;
  const Tensor& scale;
  const Tensor* zero_point;
  int64_t bits, group_size, k;

  // Input q's level of output j, less its zero point.
  int level(int64_t j, int64_t q) const {
    const int stored = bits == 8 ? weight.data_ptr<const int8_t>()[j * weight.size(1) + q]
                                 : int4_level(weight.data_ptr<const uint8_t>() + j * weight.size(1), q);
    return zero_point ? stored - zero_point->data_ptr<const int8_t>()[j * (k / group_size) + q / group_size] : stored;
  }
  float scale_of(int64_t j, int64_t q) const {
    return scale.data_ptr<const float>()[j * (k / group_size) + q / group_size];
  }
};

// The weight as float32 [N, K]: what the CPUs without AVX2 multiply.
Tensor dequantized(const StoredWeight& stored) {
  const int64_t n = stored.weight.size(0), k = stored.k;
  Tensor w = Tensor::empty({n, k}, DType::Float32);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t q = 0; q < k; ++q) {
      w.data_ptr<float>()[j * k + q] = static_cast<float>(stored.level(j, q)) * stored.scale_of(j, q);
    }
  }
  return w;
}

void quantized_linear_cpu(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor& scale,
                          const Tensor* bias, const Tensor* zero_point, int64_t bits, int64_t group_size,
                          const Tensor& out) {
  const int64_t k = input.shape().back(), n = weight.size(0);
  const int64_t rows = k == 0 ? out.numel() / std::max<int64_t>(n, 1) : input.numel() / k;
  if (rows == 0 || n == 0) return;
  Product p{operand(input, {rows, k}, {k, 1}, 2), Operand{nullptr, {k, n}, {1, k}}, operand(out, {rows, n}, {n, 1}, 2),
            std::nullopt};
  if (bias) p.bias = operand(*bias, {1, n}, {n, 1}, 2);
  const QuantizedRows levels{weight.data(),
                             scale.data_ptr<const float>(),
                             zero_point ? zero_point->data_ptr<const int8_t>() : nullptr,
                             static_cast<int>(bits),
                             k,
                             n,
                             group_size};
  // A Session with int8 activations multiplies many rows by symmetric int8
  // levels of a scale per output on the CPU's integer instructions.
  if (weight_quantization(context).int8_activations && bits == 8 && group_size == k && !zero_point &&
      rows >= kMinInt8ActivationRows && int8_activation_product(context, p, &levels)) {
    return;
  }
  if (quantized_rows_product(context, p, levels)) return;
  const Tensor w = dequantized({weight, scale, zero_point, bits, group_size, k});
  p.w = operand(w, 2, /*transposed=*/true);
  run_product(context, p, DType::Float32, false);
}

// In double, level by level (less its zero point) times its scale.
void quantized_linear_reference(const KernelContext&, const Tensor& input, const Tensor& weight, const Tensor& scale,
                                const Tensor* bias, const Tensor* zero_point, int64_t bits, int64_t group_size,
                                const Tensor& out) {
  const int64_t k = input.shape().back(), n = weight.size(0), rows = out.numel() / std::max<int64_t>(n, 1);
  const float* a = input.data_ptr<const float>();
  const StoredWeight stored{weight, scale, zero_point, bits, group_size, k};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias ? bias->data_ptr<const float>()[j] : 0.0;
      for (int64_t q = 0; q < k; ++q) {
        sum += double(a[r * k + q]) * stored.level(j, q) * stored.scale_of(j, q);
      }
      out.data_ptr<float>()[r * n + j] = static_cast<float>(sum);
    }
  }
}

// --- quantized_embedding

TensorMeta quantized_embedding_shape(const TensorMeta& weight, const TensorMeta& scale, const TensorMeta& indices,
                                     const TensorMeta* zero_point, int64_t bits, int64_t group_size) {
  OPGRAPH_CHECK(weight.dim() == 2, "weight: expected rank 2 (num_embeddings, levels), got ", weight.str());
  const int64_t columns = bits == 4 ? 2 * weight.shape[1] : weight.shape[1];
  // The linear layer's checks, a row of the table taken as its input.
  quantized_linear_shape({DType::Float32, {columns}}, weight, scale, nullptr, zero_point, bits, group_size);
  OPGRAPH_CHECK(indices.dtype == DType::Int64 || indices.dtype == DType::Int32,
                "indices: expected int64 or int32, got ", indices.str());
  Shape shape = indices.shape;
  shape.push_back(columns);
  return {DType::Float32, shape};
}

// Row `index` of the table, dequantized into `to`: a level less its zero
// point times its scale in float32, or in double rounded once (the
// reference), which is the same product.
template <bool Reference>
void dequantize_row(const StoredWeight& stored, int64_t index, float* to) {
  using Arithmetic = std::conditional_t<Reference, double, float>;
  for (int64_t q = 0; q < stored.k; ++q) {
    to[q] = static_cast<float>(static_cast<Arithmetic>(stored.level(index, q)) *
                               static_cast<Arithmetic>(stored.scale_of(index, q)));
  }
}

template <bool Reference>
void quantized_embedding_cpu(const KernelContext&, const Tensor& weight, const Tensor& scale, const Tensor& indices,
                             const Tensor* zero_point, int64_t bits, int64_t group_size, const Tensor& out) {
  const int64_t rows = weight.size(0), columns = out.shape().back();
  const StoredWeight stored{weight, scale, zero_point, bits, group_size, columns};
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t index =
        indices.dtype() == DType::Int64 ? indices.data_ptr<const int64_t>()[i] : indices.data_ptr<const int32_t>()[i];
    OPGRAPH_CHECK(index >= 0 && index < rows, "indices: index ", index, " at position ", i, " is out of range for ",
                  rows, " embeddings");
    dequantize_row<Reference>(stored, index, out.data_ptr<float>() + i * columns);
  }
}

}  // namespace

void register_quantized_layer_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "opgraph::quantized_linear(Tensor input, Tensor weight, Tensor scale, Tensor? bias=None, "
                              "Tensor? zero_point=None, *, int bits, int group_size) -> Tensor",
                    .shape = quantized_linear_shape,
                    .cpu = quantized_linear_cpu,
                    .reference = quantized_linear_reference,
                    .prepare = prepare_weights});
  define(builtins, {.schema = "opgraph::quantized_embedding(Tensor weight, Tensor scale, Tensor indices, "
                              "Tensor? zero_point=None, *, int bits, int group_size) -> Tensor",
                    .shape = quantized_embedding_shape,
                    OPGRAPH_CPU_AND_REFERENCE(quantized_embedding_cpu)});
}

}  // namespace opgraph::kernels
