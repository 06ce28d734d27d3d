#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

constexpr DType I8 = DType::Int8, U8 = DType::UInt8;

// input [.., k], levels and scales for n outputs in groups of `group`.
Sample layer(Shape input, int64_t n, int64_t bits, int64_t group, bool bias = true) {
  const int64_t k = input.back();
  SampleTensor levels = bits == 8 ? tensor(I8, {n, k}).in(-127, 127) : tensor(U8, {n, k / 2}).in(0, 255);
  return good({tensor(F32, std::move(input)), levels, tensor(F32, {n, k / group}).in(0.01, 0.1),
               bias ? tensor(F32, {n}) : SampleTensor::absent(), SampleTensor::absent()},
              {{"bits", bits}, {"group_size", group}});
}

// `sample` of a layer's levels given an int8 zero point per scale (its input
// `scale`), in [low, high], as its last input.
Sample with_zero_points(Sample sample, size_t scale, int low, int high) {
  sample.inputs.back() = tensor(I8, sample.inputs[scale].shape).in(low, high);
  return sample;
}

// input's levels in blocks of `block`, a scale (and a zero point) per block.
Sample dequantize(SampleTensor input, std::vector<int64_t> block, Shape blocks, std::optional<DType> zero = {}) {
  const DType levels = input.dtype;
  return good(
      {input, tensor(F32, blocks).in(0.01, 0.5), zero ? tensor(*zero, blocks).in(-3, 3) : SampleTensor::absent()},
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

// quantized_decomposed's range attributes: int8's or uint8's, and the dtype.
std::vector<Attr> range(DType dtype) {
  const bool int8 = dtype == I8;
  return {{"quant_min", int64_t{int8 ? -128 : 0}}, {"quant_max", int64_t{int8 ? 127 : 255}}, {"dtype", dtype}};
}

template <typename... More>
std::vector<Attr> attrs(std::vector<Attr> first, More... more) {
  (first.insert(first.end(), more.begin(), more.end()), ...);
  return first;
}

void per_tensor(BuiltinOps& builtins) {
  const std::vector<Attr> int8 = attrs({{"scale", 0.02}, {"zero_point", int64_t{3}}}, range(I8));
  const std::vector<Attr> uint8 = attrs({{"scale", 0.5}, {"zero_point", int64_t{128}}}, range(U8));
  // Values past the range saturate (3 / 0.02 = 150).
  builtins.add_samples("quantized_decomposed::quantize_per_tensor",
                       {good({tensor(F32, {3, 5}).in(-3, 3)}, int8), good({tensor(F32, {7}).in(-80, 80)}, uint8),
                        good({tensor(F32, {})}, int8), good({tensor(F32, {0, 4})}, int8),
                        bad({tensor(I32, {3})}, "input: expected float32, got int32[3]", int8),
                        bad({tensor(F32, {3})}, "quant_min, quant_max: expected a range within int8's, got [-200, 127]",
                            attrs({{"scale", 0.02}, {"zero_point", int64_t{3}}, {"quant_min", int64_t{-200}}},
                                  std::vector<Attr>{{"quant_max", int64_t{127}}, {"dtype", I8}}))});
  const auto scalar = [](DType dtype, double low, double high) { return tensor(dtype, {1}).in(low, high); };
  builtins.add_samples("quantized_decomposed::quantize_per_tensor.tensor",
                       {good({tensor(F32, {4, 3}).in(-2, 2), scalar(F32, 0.01, 0.05), scalar(I64, -5, 5)}, range(I8)),
                        good({tensor(F32, {6}).in(-20, 20), scalar(F64, 0.1, 0.2), scalar(I64, 120, 130)}, range(U8)),
                        bad({tensor(F32, {3}), tensor(F32, {2}), scalar(I64, 0, 0)},
                            "scale: expected one number, got float32[2]", range(I8))});
  builtins.add_samples(
      "quantized_decomposed::dequantize_per_tensor",
      {good({tensor(I8, {4, 6}).in(-128, 127)}, int8), good({tensor(U8, {9}).in(0, 255)}, uint8),
       good({tensor(I8, {0})}, int8), bad({tensor(U8, {3})}, "dtype: int8 does not match the levels' uint8", int8)});
  builtins.add_samples(
      "quantized_decomposed::dequantize_per_tensor.tensor",
      {good({tensor(I8, {5, 2}).in(-128, 127), scalar(F32, 0.01, 0.05), scalar(I64, -5, 5)}, range(I8)),
       bad({tensor(I8, {3}), scalar(F32, 0.1, 0.2), tensor(I64, {3})}, "zero_point: expected one number, got int64[3]",
           range(I8))});
}

void per_channel(BuiltinOps& builtins) {
  const auto channel_attrs = [](int64_t axis, DType dtype) { return attrs({{"axis", axis}}, range(dtype)); };
  const auto scales = [](int64_t n) { return tensor(F32, {n}).in(0.01, 0.1); };
  const auto zeros = [](int64_t n) { return tensor(I64, {n}).in(-3, 3); };
  builtins.add_samples(
      "quantized_decomposed::quantize_per_channel",
      {good({tensor(F32, {4, 3, 5}).in(-10, 10), scales(3), zeros(3)}, channel_attrs(1, I8)),
       good({tensor(F32, {6, 4}).in(-10, 10), scales(6), zeros(6)}, channel_attrs(0, U8)),
       bad({tensor(F32, {4, 3}), scales(4), zeros(3)},
           "scales: expected one per index of dim 1 of input float32[4, 3] (3), got float32[4]", channel_attrs(1, I8)),
       bad({tensor(F32, {4, 3}), scales(3), zeros(3)}, "axis: expected a dim of input float32[4, 3], got 2",
           channel_attrs(2, I8))});
  builtins.add_samples(
      "quantized_decomposed::dequantize_per_channel",
      {good({tensor(I8, {6, 10}).in(-128, 127), scales(6), zeros(6)}, channel_attrs(0, I8)),
       good({tensor(I8, {2, 3, 4}).in(-128, 127), scales(4), SampleTensor::absent()}, channel_attrs(2, I8)),
       good({tensor(U8, {3, 5}).in(0, 255), scales(5), zeros(5)}, channel_attrs(1, U8)),
       bad({tensor(I8, {6, 10}), scales(6), tensor(I32, {6})}, "zero_points: expected int64, got int32[6]",
           channel_attrs(0, I8))});
}

}  // namespace

void register_quantization_samples(BuiltinOps& builtins) {
  std::vector<Sample> table = {
      layer({3, 64}, 5, 8, 64),
      layer({2, 3, 64}, 40, 8, 32, false),
      layer({96}, 144, 8, 32),      // one row; a full panel and a strip
      layer({70, 64}, 130, 4, 32),  // more rows than the panels take at once
      layer({1, 128}, 17, 4, 64, false),
      layer({0, 64}, 5, 4, 32),
      layer({4, 20}, 33, 8, 20),  // one group of fewer inputs than a block
      layer({2, 10}, 3, 4, 10),
      // Zero points, as torchao's asymmetric mapping and int*_asym leave them.
      with_zero_points(layer({3, 64}, 5, 8, 64), 2, -128, 127),
      with_zero_points(layer({70, 64}, 130, 4, 32), 2, -8, 7),
      with_zero_points(layer({96}, 144, 8, 32, false), 2, -20, 20),
      with_zero_points(layer({2, 10}, 3, 4, 10), 2, -8, 7),
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
  Sample float_zero_points = with_zero_points(layer({3, 64}, 5, 8, 32), 2, -3, 3);
  float_zero_points.inputs[4] = tensor(F32, {5, 2});
  float_zero_points.error = "zero_point: expected int8[5, 2] (one per scale), got float32[5, 2]";
  table.insert(table.end(),
               {wrong_bits, uneven_group, odd_int4, float_weight, unpacked_int4, wrong_scale, float_zero_points});
  builtins.add_samples("opgraph::quantized_linear", table);
  builtins.add_samples("torchao::dequantize_affine", dequantize_affine());
  // The table of a linear layer's levels, rows looked up.
  const auto lookup = [](int64_t rows, int64_t columns, int64_t bits, int64_t group, SampleTensor indices) {
    SampleTensor levels =
        bits == 8 ? tensor(I8, {rows, columns}).in(-127, 127) : tensor(U8, {rows, columns / 2}).in(0, 255);
    return good(
        {levels, tensor(F32, {rows, columns / group}).in(0.01, 0.1), indices.in(0, rows - 1), SampleTensor::absent()},
        {{"bits", bits}, {"group_size", group}});
  };
  Sample out_of_range = lookup(5, 64, 8, 32, tensor(I64, {3}));
  out_of_range.inputs[2].in(5, 5);
  out_of_range.error = "indices: index 5 at position 0 is out of range for 5 embeddings";
  Sample float_indices = lookup(5, 64, 8, 32, tensor(F32, {3}));
  float_indices.error = "indices: expected int64 or int32, got float32[3]";
  builtins.add_samples(
      "opgraph::quantized_embedding",
      {lookup(10, 64, 8, 32, tensor(I64, {2, 3})), lookup(7, 96, 8, 96, tensor(I32, {4})),
       lookup(9, 64, 4, 32, tensor(I64, {5})), lookup(4, 32, 4, 32, tensor(I64, {0})),
       with_zero_points(lookup(6, 64, 4, 32, tensor(I64, {4})), 1, -8, 7), out_of_range, float_indices});
  per_tensor(builtins);
  per_channel(builtins);
}

}  // namespace opgraph::kernels::samples
