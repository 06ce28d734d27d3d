// torchao::dequantize_affine: the integer data of a tensor torchao quantized
// (its int8, int4 and int-x weights, kept as int8 or uint8 levels) back to
// floats, under torchao's name and schema so that a graph exported from a
// torchao-quantized model runs as it is:
//
//   out = float(int32(input) - int32(zero_point)) * scale
//
// each element taking the scale and zero point of its block: block_size[d]
// consecutive indices of dim d share one, and scale and zero_point hold one
// per block, row-major over the blocks. A Session fuses the dequantization of
// a constant weight into the linear layer that reads it
// (kernels/cpu/passes/quantized_linear_fusion.cpp); this kernel runs the others.
#include <cmath>

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

TensorMeta dequantize_affine_shape(const TensorMeta& input, std::span<const int64_t> block_size, const TensorMeta& scale,
                                   const TensorMeta* zero_point, DType input_dtype, std::optional<double>,
                                   std::optional<double>, DType output_dtype) {
  dispatch_levels(input.dtype, "input", [](auto) {});
  OPGRAPH_CHECK(input_dtype == input.dtype, "input_dtype: ", dtype_name(input_dtype), " does not match input ",
                input.str());
  OPGRAPH_CHECK(output_dtype == DType::Float32, "output_dtype: expected float32, got ", dtype_name(output_dtype));
  OPGRAPH_CHECK(std::ssize(block_size) == input.dim(), "block_size: expected ", input.dim(),
                " sizes, one per dim of input ", input.str(), ", got ", shape_str(Shape(block_size.begin(),
                                                                                        block_size.end())));
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

}  // namespace

void register_affine_quantization_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "torchao::dequantize_affine(Tensor input, SymInt[] block_size, Tensor scale, "
                              "Tensor? zero_point, ScalarType input_dtype, Scalar? quant_min=None, "
                              "Scalar? quant_max=None, ScalarType output_dtype=6) -> Tensor",
                    .shape = dequantize_affine_shape,
                    .cpu = dequantize_affine_cpu,
                    .reference = dequantize_affine_reference});
}

}  // namespace opgraph::kernels
