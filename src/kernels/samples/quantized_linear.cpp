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

}  // namespace

void register_quantized_linear_samples(BuiltinOps& builtins) {
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
}

}  // namespace opgraph::kernels::samples
