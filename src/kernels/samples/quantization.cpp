#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

constexpr DType I8 = DType::Int8, U8 = DType::UInt8;

// input [.., k], levels and scales for n outputs in groups of `group`.
Sample layer(Shape input, int64_t n, int64_t bits, int64_t group, bool bias = true) {
  const int64_t k = input.back();
  SampleTensor levels = bits == 8 ? tensor(I8, {n, k}).in(-127, 127) : tensor(U8, {n, k / 2}).in(0, 255);
  return good({tensor(F32, std::move(input)), levels, tensor(F32, {n, k / group}).in(0.01, 0.1),
               bias ? tensor(F32, {n}) : SampleTensor::absent()},
              {{"bits", bits}, {"group_size", group}});
}

// input's levels in blocks of `block`, a scale (and a zero point) per block.
Sample dequantize(SampleTensor input, std::vector<int64_t> block, Shape blocks, std::optional<DType> zero = {}) {
  const DType levels = input.dtype;
  return good({input, tensor(F32, blocks).in(0.01, 0.5),
               zero ? tensor(*zero, blocks).in(-3, 3) : SampleTensor::absent()},
              {{"block_size", block}, {"input_dtype", levels}});
}

std::vector<Sample> dequantize_affine() {
  std::vector<Sample> table = {
      // torchao's weights: a scale per row and group of inputs, per row, per tensor
      dequantize(tensor(I8, {6, 64}).in(-8, 7), {1, 32}, {6, 2}, I8),
      dequantize(tensor(I8, {5, 7}).in(-127, 127), {1, 7}, {5, 1}),
      dequantize(tensor(U8, {4, 6}).in(0, 255), {4, 6}, {1, 1}, DType::Int32),
      // per token of a [batch, tokens, features] activation, blocks in every dim
      dequantize(tensor(I8, {2, 3, 8}).in(-128, 127), {1, 1, 8}, {2, 3}, F32),
      dequantize(tensor(DType::Int32, {4, 6, 4}).in(-1000, 1000), {2, 3, 2}, {2, 2, 2}, I64),
      dequantize(tensor(I8, {0, 32}), {1, 32}, {0, 1}),
  };
  Sample uneven = dequantize(tensor(I8, {4, 48}), {1, 32}, {4, 2});
  uneven.error = "block_size: 32 does not divide dim 1 of input int8[4, 48]";
  Sample wrong_dtype = dequantize(tensor(I8, {4, 32}), {1, 32}, {4, 1});
  wrong_dtype.attrs[1].second = DType::UInt8;
  wrong_dtype.error = "input_dtype: uint8 does not match input int8[4, 32]";
  Sample few_scales = dequantize(tensor(I8, {4, 64}), {1, 32}, {4, 1});
  few_scales.error = "scale: expected float32 with one scale per block (8), got float32[4, 1]";
  Sample float_levels = dequantize(tensor(F32, {4, 32}), {1, 32}, {4, 1});
  float_levels.attrs[1].second = F32;
  float_levels.error = "input: expected int8, uint8 or int32, got float32";
  Sample short_block = dequantize(tensor(I8, {4, 32}), {32}, {4, 1});
  short_block.error = "block_size: expected 2 sizes, one per dim of input int8[4, 32], got [32]";
  table.insert(table.end(), {uneven, wrong_dtype, few_scales, float_levels, short_block});
  return table;
}

}  // namespace

void register_quantization_samples(BuiltinOps& builtins) {
  std::vector<Sample> table = {
      layer({3, 64}, 5, 8, 64),          layer({2, 3, 64}, 40, 8, 32, false),
      layer({96}, 144, 8, 32),      // one row; a full panel and a strip
      layer({70, 64}, 130, 4, 32),  // more rows than the panels take at once
      layer({1, 128}, 17, 4, 64, false), layer({0, 64}, 5, 4, 32),
      layer({4, 20}, 33, 8, 20),  // one group of fewer inputs than a block
      layer({2, 10}, 3, 4, 10),
  };
  Sample odd_int4 = layer({2, 9}, 3, 8, 9);
  odd_int4.attrs[0].second = int64_t{4};
  odd_int4.inputs[1] = tensor(U8, {3, 4});
  odd_int4.error = "input: int4 levels come in pairs of features, and input has 9";
  Sample wrong_bits = layer({3, 64}, 5, 8, 64);
  wrong_bits.attrs[0].second = int64_t{5};
  wrong_bits.error = "bits: expected 4 or 8, got 5";
  Sample uneven_group = layer({3, 96}, 5, 8, 32);
  uneven_group.attrs[1].second = int64_t{64};
  uneven_group.error = "group_size: expected input's 96 features, or a multiple of 32 that divides them, got 64";
  Sample float_weight = layer({3, 64}, 5, 8, 64);
  float_weight.inputs[1] = tensor(F32, {5, 64});
  float_weight.error =
      "weight: expected int8[N, 64] (8-bit levels of input's 64 features for each output), got "
      "float32[5, 64]";
  Sample unpacked_int4 = layer({3, 64}, 5, 4, 32);
  unpacked_int4.inputs[1] = tensor(U8, {5, 64});
  unpacked_int4.error = "weight: expected uint8[N, 32]";
  Sample wrong_scale = layer({3, 64}, 5, 8, 32);
  wrong_scale.inputs[2] = tensor(F32, {5, 1});
  wrong_scale.error = "scale: expected float32[5, 2] (a scale per output and group of 32 features), got float32[5, 1]";
  table.insert(table.end(), {wrong_bits, uneven_group, odd_int4, float_weight, unpacked_int4, wrong_scale});
  builtins.add_samples("opgraph::quantized_linear", table);
  builtins.add_samples("torchao::dequantize_affine", dequantize_affine());
}

}  // namespace opgraph::kernels::samples
