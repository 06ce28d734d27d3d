// The quantization ops of PyTorch's tools, under their names and schemas, so
// that a graph exported from a quantized model runs as it is. A Session
// fuses the dequantization of a constant weight into the linear layer that
// reads it (kernels/cpu/passes/quantized_linear_fusion.cpp); these kernels
// run the others: the activations' quantize-dequantize pairs that pt2e's
// quantizers leave, and the layers whose levels opgraph::quantized_linear
// does not take.
//
// torchao::dequantize_affine, torchao's int8, int4 and int-x weights:
//
//   out = float(int32(input) - int32(zero_point)) * scale
//
// each element taking the scale and zero point of its block: block_size[d]
// consecutive indices of dim d share one, and scale and zero_point hold one
// per block, row-major over the blocks.
//
// quantized_decomposed's ops, what pt2e's quantizers (X86Inductor, XNNPACK)
// leave, a scale and zero point per tensor or per channel along `axis`:
//
//   quantize:   q = clamp(round(x * (1 / scale)) + zero_point, quant_min, quant_max)
//   dequantize: x = (float(q) - zero_point) * scale
//
// computed in float32, rounded half to even, as torch's reference
// implementations (torch/ao/quantization/fx/_decomposed.py) compute them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/cpu/util/broadcast.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// The int8 and uint8 levels torchao stores (int4 and int-x as int8), and int32.
template <typename Fn>
void dispatch_levels(DType dtype, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Int8: return fn(int8_t{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Int32: return fn(int32_t{});
    default: throw Error(detail::concat(argument, ": expected int8, uint8 or int32, got ", dtype_name(dtype)));
  }
}

// The zero point's dtypes: integer levels, or floats holding integers.
template <typename Fn>
void dispatch_zero_point(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Int64: return fn(int64_t{});
    default: return dispatch_levels(dtype, "zero_point", fn);
  }
}

TensorMeta dequantize_affine_shape(const TensorMeta& input, std::span<const int64_t> block_size,
                                   const TensorMeta& scale, const TensorMeta* zero_point, DType input_dtype,
                                   std::optional<double>, std::optional<double>, DType output_dtype) {
  dispatch_levels(input.dtype, "input", [](auto) {});
  OPGRAPH_CHECK(input_dtype == input.dtype, "input_dtype: ", dtype_name(input_dtype), " does not match input ",
                input.str());
  OPGRAPH_CHECK(output_dtype == DType::Float32, "output_dtype: expected float32, got ", dtype_name(output_dtype));
  OPGRAPH_CHECK(std::ssize(block_size) == input.dim(), "block_size: expected ", input.dim(),
                " sizes, one per dim of input ", input.str(), ", got ",
                shape_str(Shape(block_size.begin(), block_size.end())));
  int64_t blocks = 1;
  for (int64_t d = 0; d < input.dim(); ++d) {
    OPGRAPH_CHECK(block_size[d] >= 1 && input.shape[d] % block_size[d] == 0, "block_size: ", block_size[d],
                  " does not divide dim ", d, " of input ", input.str());
    blocks *= input.shape[d] / block_size[d];
  }
  OPGRAPH_CHECK(scale.dtype == DType::Float32 && scale.numel() == blocks, "scale: expected float32 with one scale per ",
                "block (", blocks, "), got ", scale.str());
  if (zero_point) {
    dispatch_zero_point(zero_point->dtype, [](auto) {});
    OPGRAPH_CHECK(zero_point->numel() == blocks, "zero_point: expected one per block (", blocks, "), got ",
                  zero_point->str());
  }
  return {output_dtype, input.shape};
}

// Row by row of input's last dim: element (.., i) of row `row` takes block
// first + i / block_size.back(), `first` the row's first block over the
// blocks of the other dims.
void dequantize_affine_cpu(const KernelContext& context, const Tensor& input, std::span<const int64_t> block_size,
                           const Tensor& scale, const Tensor* zero_point, DType, std::optional<double>,
                           std::optional<double>, DType, const Tensor& out) {
  if (input.numel() == 0) return;
  const Shape& shape = input.shape();
  const int64_t columns = shape.empty() ? 1 : shape.back(), block = block_size.empty() ? 1 : block_size.back();
  const int64_t row_blocks = columns / block;
  dispatch_levels(input.dtype(), "input", [&]<typename Level>(Level) {
    const auto run = [&]<typename Zero>(const Zero* zeros) {
      const Level* q = input.data_ptr<const Level>();
      const float* scales = scale.data_ptr<const float>();
      float* y = out.data_ptr<float>();
      parallel_items(context, input.numel() / columns, columns, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          int64_t first = 0, stride = row_blocks, rest = row;
          for (size_t d = shape.size() - 1; d-- > 0;) {
            first += rest % shape[d] / block_size[d] * stride;
            stride *= shape[d] / block_size[d];
            rest /= shape[d];
          }
          for (int64_t i = 0; i < columns; ++i) {
            const int64_t at = first + i / block;
            const int32_t zero = zeros ? static_cast<int32_t>(zeros[at]) : 0;
            y[row * columns + i] = static_cast<float>(static_cast<int32_t>(q[row * columns + i]) - zero) * scales[at];
          }
        }
      });
    };
    if (zero_point == nullptr) return run(static_cast<const int32_t*>(nullptr));
    dispatch_zero_point(zero_point->dtype(), [&]<typename Zero>(Zero) { run(zero_point->data_ptr<const Zero>()); });
  });
}

// Element by element, from its index in each dim, the product in double
// (exact for a level times a float32 scale) rounded once.
void dequantize_affine_reference(const KernelContext&, const Tensor& input, std::span<const int64_t> block_size,
                                 const Tensor& scale, const Tensor* zero_point, DType, std::optional<double>,
                                 std::optional<double>, DType, const Tensor& out) {
  const Shape& shape = input.shape();
  const auto value = [](const Tensor& t, int64_t i) {
    double v = 0;
    dispatch_zero_point(t.dtype(), [&]<typename T>(T) { v = static_cast<double>(t.data_ptr<const T>()[i]); });
    return v;
  };
  for (int64_t i = 0; i < input.numel(); ++i) {
    int64_t at = 0, rest = i, blocks_inside = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      at += rest % shape[d] / block_size[d] * blocks_inside;
      blocks_inside *= shape[d] / block_size[d];
      rest /= shape[d];
    }
    // As int32(zero_point): a float zero point truncated.
    const double zero = zero_point ? std::trunc(value(*zero_point, at)) : 0.0;
    out.data_ptr<float>()[i] = static_cast<float>((value(input, i) - zero) * scale.data_ptr<const float>()[at]);
  }
}

// --- quantized_decomposed: a scale and zero point per tensor, or per index
// of dim `axis`.

void check_levels(DType levels, DType dtype, int64_t quant_min, int64_t quant_max) {
  dispatch_levels(dtype, "dtype", [&]<typename Level>(Level) {
    OPGRAPH_CHECK(quant_min <= quant_max && quant_min >= std::numeric_limits<Level>::min() &&
                      quant_max <= std::numeric_limits<Level>::max(),
                  "quant_min, quant_max: expected a range within ", dtype_name(dtype), "'s, got [", quant_min, ", ",
                  quant_max, "]");
  });
  OPGRAPH_CHECK(levels == dtype, "dtype: ", dtype_name(dtype), " does not match the levels' ", dtype_name(levels));
}

void check_float32(const TensorMeta& meta, const char* argument) {
  OPGRAPH_CHECK(meta.dtype == DType::Float32, argument, ": expected float32, got ", meta.str());
}
void check_int64(const TensorMeta& meta, const char* argument) {
  OPGRAPH_CHECK(meta.dtype == DType::Int64, argument, ": expected int64, got ", meta.str());
}

// The scale and zero point of a per-tensor op given as tensors: one element each.
void check_single(const TensorMeta& meta, const char* argument) {
  OPGRAPH_CHECK(
      meta.numel() == 1 && (is_floating_point(meta.dtype) || meta.dtype == DType::Int64 || meta.dtype == DType::Int32),
      argument, ": expected one number, got ", meta.str());
}

// Per channel: `count` parameters, one per index of dim `axis` of `input`.
void check_per_channel(const TensorMeta& input, int64_t axis, const TensorMeta& param, const char* argument) {
  OPGRAPH_CHECK(axis >= 0 && axis < input.dim(), "axis: expected a dim of input ", input.str(), ", got ", axis);
  OPGRAPH_CHECK(param.dim() == 1 && param.shape[0] == input.shape[axis], argument, ": expected one per index of dim ",
                axis, " of input ", input.str(), " (", input.shape[axis], "), got ", param.str());
}

double number(const Tensor& t) {
  double value = 0;
  dispatch_zero_point(t.dtype() == DType::Float64 ? DType::Float32 : t.dtype(), [&]<typename T>(T) {
    value = t.dtype() == DType::Float64 ? t.data_ptr<const double>()[0] : static_cast<double>(t.data_ptr<const T>()[0]);
  });
  return value;
}

// Channel c of input (dim `axis`; one channel for a per-tensor op) takes
// parameters(c) = {scale, zero point}.
template <typename Parameters>
void quantize(const KernelContext& context, const Tensor& input, int64_t axis, int64_t quant_min, int64_t quant_max,
              const Parameters& parameters, const Tensor& out) {
  const Shape& shape = input.shape();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t channels = shape.empty() ? 1 : shape[axis];
  const float* x = input.data_ptr<const float>();
  dispatch_levels(out.dtype(), "dtype", [&]<typename Level>(Level) {
    Level* q = out.data_ptr<Level>();
    parallel_items(context, input.numel() / inner, inner, [&](int64_t begin, int64_t end) {
      for (int64_t run = begin; run < end; ++run) {
        const auto [inverse, zero] = parameters(run % channels);
        for (int64_t i = run * inner; i < (run + 1) * inner; ++i) {
          const float level = std::nearbyint(x[i] * inverse) + zero;
          q[i] = static_cast<Level>(std::clamp(level, static_cast<float>(quant_min), static_cast<float>(quant_max)));
        }
      }
    });
  });
}

template <typename Parameters>
void dequantize(const KernelContext& context, const Tensor& input, int64_t axis, const Parameters& parameters,
                const Tensor& out) {
  const Shape& shape = input.shape();
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t channels = shape.empty() ? 1 : shape[axis];
  float* x = out.data_ptr<float>();
  dispatch_levels(input.dtype(), "input", [&]<typename Level>(Level) {
    const Level* q = input.data_ptr<const Level>();
    parallel_items(context, input.numel() / inner, inner, [&](int64_t begin, int64_t end) {
      for (int64_t run = begin; run < end; ++run) {
        const auto [scale, zero] = parameters(run % channels);
        for (int64_t i = run * inner; i < (run + 1) * inner; ++i) x[i] = (static_cast<float>(q[i]) - zero) * scale;
      }
    });
  });
}

// The references: element by element, each finding its channel from its
// index; the dequantization in double (exact for a level times a float32
// scale) rounded once, the quantization in float32 as torch's.
template <typename Parameters>
void quantize_reference(const Tensor& input, int64_t axis, int64_t quant_min, int64_t quant_max,
                        const Parameters& parameters, const Tensor& out) {
  const Shape& shape = input.shape();
  dispatch_levels(out.dtype(), "dtype", [&]<typename Level>(Level) {
    for (int64_t i = 0; i < input.numel(); ++i) {
      int64_t channel = i;
      for (size_t d = shape.size(); d-- > static_cast<size_t>(axis) + 1;) channel /= shape[d];
      const auto [inverse, zero] = parameters(shape.empty() ? 0 : channel % shape[axis]);
      const float rounded = std::nearbyint(input.data_ptr<const float>()[i] * inverse);
      const double level = std::min<double>(std::max<double>(rounded + zero, quant_min), quant_max);
      out.data_ptr<Level>()[i] = static_cast<Level>(level);
    }
  });
}

template <typename Parameters>
void dequantize_reference(const Tensor& input, int64_t axis, const Parameters& parameters, const Tensor& out) {
  const Shape& shape = input.shape();
  dispatch_levels(input.dtype(), "input", [&]<typename Level>(Level) {
    for (int64_t i = 0; i < input.numel(); ++i) {
      int64_t channel = i;
      for (size_t d = shape.size(); d-- > static_cast<size_t>(axis) + 1;) channel /= shape[d];
      const auto [scale, zero] = parameters(shape.empty() ? 0 : channel % shape[axis]);
      const double level = input.data_ptr<const Level>()[i];
      out.data_ptr<float>()[i] = static_cast<float>((level - zero) * static_cast<double>(scale));
    }
  });
}

// Each op's kernel and reference: the parameters of channel c, run by the
// fast loops or the reference's.
template <bool Reference, typename Parameters>
void quantize_with(const KernelContext& context, const Tensor& input, int64_t axis, int64_t quant_min,
                   int64_t quant_max, const Parameters& parameters, const Tensor& out) {
  if constexpr (Reference) {
    quantize_reference(input, axis, quant_min, quant_max, parameters, out);
  } else {
    quantize(context, input, axis, quant_min, quant_max, parameters, out);
  }
}

template <bool Reference, typename Parameters>
void dequantize_with(const KernelContext& context, const Tensor& input, int64_t axis, const Parameters& parameters,
                     const Tensor& out) {
  if constexpr (Reference) {
    dequantize_reference(input, axis, parameters, out);
  } else {
    dequantize(context, input, axis, parameters, out);
  }
}

TensorMeta quantize_per_tensor_shape(const TensorMeta& input, double, int64_t, int64_t quant_min, int64_t quant_max,
                                     DType dtype) {
  check_float32(input, "input");
  check_levels(dtype, dtype, quant_min, quant_max);
  return {dtype, input.shape};
}

TensorMeta quantize_per_tensor_tensor_shape(const TensorMeta& input, const TensorMeta& scale,
                                            const TensorMeta& zero_point, int64_t quant_min, int64_t quant_max,
                                            DType dtype) {
  check_single(scale, "scale");
  check_single(zero_point, "zero_point");
  return quantize_per_tensor_shape(input, 1, 0, quant_min, quant_max, dtype);
}

template <bool Reference>
void quantize_per_tensor_cpu(const KernelContext& context, const Tensor& input, double scale, int64_t zero_point,
                             int64_t quant_min, int64_t quant_max, DType, const Tensor& out) {
  // 1 / scale in double, as Python divides, then taken as float32 by the multiply.
  const float inverse = static_cast<float>(1.0 / scale), zero = static_cast<float>(zero_point);
  quantize_with<Reference>(
      context, input, 0, quant_min, quant_max, [&](int64_t) { return std::pair(inverse, zero); }, out);
}

template <bool Reference>
void quantize_per_tensor_tensor_cpu(const KernelContext& context, const Tensor& input, const Tensor& scale,
                                    const Tensor& zero_point, int64_t quant_min, int64_t quant_max, DType,
                                    const Tensor& out) {
  // 1 / scale as a float32 tensor's reciprocal.
  const float inverse = 1.0f / static_cast<float>(number(scale)), zero = static_cast<float>(number(zero_point));
  quantize_with<Reference>(
      context, input, 0, quant_min, quant_max, [&](int64_t) { return std::pair(inverse, zero); }, out);
}

TensorMeta dequantize_per_tensor_shape(const TensorMeta& input, double, int64_t, int64_t quant_min, int64_t quant_max,
                                       DType dtype, std::optional<DType> out_dtype) {
  check_levels(input.dtype, dtype, quant_min, quant_max);
  OPGRAPH_CHECK(out_dtype.value_or(DType::Float32) == DType::Float32, "out_dtype: expected float32, got ",
                dtype_name(*out_dtype));
  return {DType::Float32, input.shape};
}

TensorMeta dequantize_per_tensor_tensor_shape(const TensorMeta& input, const TensorMeta& scale,
                                              const TensorMeta& zero_point, int64_t quant_min, int64_t quant_max,
                                              DType dtype, std::optional<DType> out_dtype) {
  check_single(scale, "scale");
  check_single(zero_point, "zero_point");
  return dequantize_per_tensor_shape(input, 1, 0, quant_min, quant_max, dtype, out_dtype);
}

template <bool Reference>
void dequantize_per_tensor_cpu(const KernelContext& context, const Tensor& input, double scale, int64_t zero_point,
                               int64_t, int64_t, DType, std::optional<DType>, const Tensor& out) {
  const float factor = static_cast<float>(scale), zero = static_cast<float>(zero_point);
  dequantize_with<Reference>(context, input, 0, [&](int64_t) { return std::pair(factor, zero); }, out);
}

template <bool Reference>
void dequantize_per_tensor_tensor_cpu(const KernelContext& context, const Tensor& input, const Tensor& scale,
                                      const Tensor& zero_point, int64_t, int64_t, DType, std::optional<DType>,
                                      const Tensor& out) {
  const float factor = static_cast<float>(number(scale)), zero = static_cast<float>(number(zero_point));
  dequantize_with<Reference>(context, input, 0, [&](int64_t) { return std::pair(factor, zero); }, out);
}

TensorMeta quantize_per_channel_shape(const TensorMeta& input, const TensorMeta& scales, const TensorMeta& zero_points,
                                      int64_t axis, int64_t quant_min, int64_t quant_max, DType dtype) {
  check_float32(input, "input");
  check_per_channel(input, axis, scales, "scales");
  check_per_channel(input, axis, zero_points, "zero_points");
  check_float32(scales, "scales");
  check_int64(zero_points, "zero_points");
  check_levels(dtype, dtype, quant_min, quant_max);
  return {dtype, input.shape};
}

template <bool Reference>
void quantize_per_channel_cpu(const KernelContext& context, const Tensor& input, const Tensor& scales,
                              const Tensor& zero_points, int64_t axis, int64_t quant_min, int64_t quant_max, DType,
                              const Tensor& out) {
  const float* scale = scales.data_ptr<const float>();
  const int64_t* zero = zero_points.data_ptr<const int64_t>();
  quantize_with<Reference>(
      context, input, axis, quant_min, quant_max,
      [&](int64_t c) { return std::pair(1.0f / scale[c], static_cast<float>(zero[c])); }, out);
}

TensorMeta dequantize_per_channel_shape(const TensorMeta& input, const TensorMeta& scales,
                                        const TensorMeta* zero_points, int64_t axis, int64_t quant_min,
                                        int64_t quant_max, DType dtype, std::optional<DType> out_dtype) {
  check_per_channel(input, axis, scales, "scales");
  check_float32(scales, "scales");
  if (zero_points) {
    check_per_channel(input, axis, *zero_points, "zero_points");
    check_int64(*zero_points, "zero_points");
  }
  return dequantize_per_tensor_shape(input, 1, 0, quant_min, quant_max, dtype, out_dtype);
}

template <bool Reference>
void dequantize_per_channel_cpu(const KernelContext& context, const Tensor& input, const Tensor& scales,
                                const Tensor* zero_points, int64_t axis, int64_t, int64_t, DType, std::optional<DType>,
                                const Tensor& out) {
  const float* scale = scales.data_ptr<const float>();
  const int64_t* zero = zero_points ? zero_points->data_ptr<const int64_t>() : nullptr;
  dequantize_with<Reference>(
      context, input, axis, [&](int64_t c) { return std::pair(scale[c], zero ? static_cast<float>(zero[c]) : 0.0f); },
      out);
}

}  // namespace

void register_quantization_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "torchao::dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, "
                              "Tensor? zero_point, ScalarType input_dtype, Scalar? quant_min=None, "
                              "Scalar? quant_max=None, ScalarType output_dtype=6) -> Tensor",
                    .shape = dequantize_affine_shape,
                    .cpu = dequantize_affine_cpu,
                    .reference = dequantize_affine_reference});
  define(builtins, {.schema = "quantized_decomposed::quantize_per_tensor(Tensor input, float scale, int zero_point, "
                              "int quant_min, int quant_max, ScalarType dtype) -> Tensor",
                    .shape = quantize_per_tensor_shape,
                    OPGRAPH_CPU_AND_REFERENCE(quantize_per_tensor_cpu)});
  define(builtins, {.schema = "quantized_decomposed::quantize_per_tensor.tensor(Tensor input, Tensor scale, "
                              "Tensor zero_point, int quant_min, int quant_max, ScalarType dtype) -> Tensor",
                    .shape = quantize_per_tensor_tensor_shape,
                    OPGRAPH_CPU_AND_REFERENCE(quantize_per_tensor_tensor_cpu)});
  define(builtins,
         {.schema = "quantized_decomposed::dequantize_per_tensor(Tensor input, float scale, int zero_point, "
                    "int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor",
          .shape = dequantize_per_tensor_shape,
          OPGRAPH_CPU_AND_REFERENCE(dequantize_per_tensor_cpu)});
  define(builtins,
         {.schema = "quantized_decomposed::dequantize_per_tensor.tensor(Tensor input, Tensor scale, Tensor zero_point, "
                    "int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None) -> Tensor",
          .shape = dequantize_per_tensor_tensor_shape,
          OPGRAPH_CPU_AND_REFERENCE(dequantize_per_tensor_tensor_cpu)});
  define(builtins, {.schema = "quantized_decomposed::quantize_per_channel(Tensor input, Tensor scales, "
                              "Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype) -> Tensor",
                    .shape = quantize_per_channel_shape,
                    OPGRAPH_CPU_AND_REFERENCE(quantize_per_channel_cpu)});
  define(builtins, {.schema = "quantized_decomposed::dequantize_per_channel(Tensor input, Tensor scales, "
                              "Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, "
                              "ScalarType? out_dtype=None) -> Tensor",
                    .shape = dequantize_per_channel_shape,
                    OPGRAPH_CPU_AND_REFERENCE(dequantize_per_channel_cpu)});
}

}  // namespace opgraph::kernels
