// Samples of the ops that rearrange or sample images (im2col, col2im,
// grid_sampler) and of scaled dot-product attention: sliding blocks with
// padding, stride and dilation and their inverse, grid sampling in every
// interpolation and padding mode with coordinates past the border,
// attention with masks, causality, a scale, grouped heads and no queries, and
// the rotary embedding that precedes it, its cos and sin broadcast over heads
// in either layout. Blocks that do not fit, grids of the wrong shape, unknown
// modes, mismatched features and odd feature counts are refused.
#include "kernels/samples/samples.h"

namespace opgraph::kernels::samples {
namespace {

struct Blocks {
  Shape image;  // (N, C, H, W) or (C, H, W)
  int64_t kernel, dilation, padding, stride;
  Layout layout = Layout::Contiguous;
};

const std::vector<Blocks>& blocks() {
  static const std::vector<Blocks> cases = {
      {{1, 2, 5, 5}, 2, 1, 0, 1},
      {{2, 5, 5}, 3, 1, 1, 2},
      {{0, 3, 4, 4}, 2, 1, 0, 2},
      {{1, 1, 1, 1}, 1, 1, 0, 1},
      {{2, 3, 7, 6}, 3, 2, 1, 1, Layout::Transposed},
      {{1, 2, 6, 8}, 2, 1, 1, 3, Layout::Strided},
  };
  return cases;
}

std::vector<Attr> block_attrs(const Blocks& b) {
  return {{"kernel_size", Shape{b.kernel, b.kernel}},
          {"dilation", Shape{b.dilation, b.dilation}},
          {"padding", Shape{b.padding, b.padding}},
          {"stride", Shape{b.stride, b.stride}}};
}

// How many blocks fit along a side of `size`.
int64_t fitting(const Blocks& b, int64_t size) {
  return (size + 2 * b.padding - b.dilation * (b.kernel - 1) - 1) / b.stride + 1;
}

void register_blocks(BuiltinOps& builtins) {
  std::vector<Sample> im2col, col2im;
  for (DType dtype : {F32, F64}) {
    for (const Blocks& b : blocks()) {
      im2col.push_back(good({tensor(dtype, b.image, b.layout)}, block_attrs(b)));
      // col2im takes the columns im2col makes of the image, and the image's size.
      const size_t rank = b.image.size();
      const int64_t h = b.image[rank - 2], w = b.image[rank - 1];
      Shape columns(b.image.begin(), b.image.end() - 2);
      columns.back() *= b.kernel * b.kernel;
      columns.push_back(fitting(b, h) * fitting(b, w));
      std::vector<Attr> attrs = block_attrs(b);
      attrs.emplace_back("output_size", Shape{h, w});
      col2im.push_back(good({tensor(dtype, columns, b.layout)}, attrs));
    }
  }
  const Blocks two{{1, 2, 5, 5}, 2, 1, 0, 1};
  std::vector<Attr> large = block_attrs(two);
  large[0].second = Shape{6, 6};
  im2col.push_back(bad({tensor(F32, {1, 2, 5, 5})},
                       "self: no sliding block fits in float32[1, 2, 5, 5] for kernel_size [6, 6]", large));
  im2col.push_back(bad({tensor(F32, {5, 5})}, "self", block_attrs(two)));
  builtins.add_samples("aten::im2col", im2col);

  std::vector<Attr> attrs = block_attrs(two);
  attrs.emplace_back("output_size", Shape{5, 5});
  col2im.push_back(
      bad({tensor(F32, {1, 8, 15})},
          "self: expected 4 x 4 sliding blocks in its last dim for output_size [5, 5], got float32[1, 8, 15]", attrs));
  col2im.push_back(bad({tensor(F32, {1, 7, 16})},
                       "self: expected dim 1 to be divisible by the kernel's size 4, got float32[1, 7, 16]", attrs));
  builtins.add_samples("aten::col2im", col2im);
}

void register_grid_samples(BuiltinOps& builtins) {
  // Coordinates in [-1.2, 1.2]: some samples fall past the border, where the padding mode decides.
  std::vector<Sample> table;
  const std::vector<std::pair<SampleTensor, Shape>> cases = {
      {tensor(F32, {1, 2, 4, 5}), {1, 3, 3, 2}}, {tensor(F32, {2, 1, 1, 1}), {2, 2, 4, 2}},
      {tensor(F32, {0, 2, 3, 3}), {0, 2, 2, 2}}, {tensor(F32, {1, 3, 6, 5}, Layout::Transposed), {1, 4, 1, 2}},
      {tensor(F32, {2, 2, 4, 4}), {2, 0, 3, 2}},
  };
  size_t next = 0;
  for (DType dtype : {F32, F64}) {
    for (int64_t interpolation : {0, 1, 2}) {
      for (int64_t padding : {0, 1, 2}) {
        auto [input, grid] = cases[next++ % cases.size()];
        input.dtype = dtype;
        table.push_back(
            good({input, tensor(dtype, grid).in(-1.2, 1.2)},
                 {{"interpolation_mode", interpolation}, {"padding_mode", padding}, {"align_corners", next % 2 == 0}}));
      }
    }
  }
  const std::vector<Attr> bilinear = {
      {"interpolation_mode", int64_t{0}}, {"padding_mode", int64_t{0}}, {"align_corners", false}};
  table.push_back(bad({tensor(F32, {1, 2, 4, 5}), tensor(F32, {1, 3, 3, 3})},
                      "grid: expected (1, height, width, 2) for input float32[1, 2, 4, 5], got float32[1, 3, 3, 3]",
                      bilinear));
  table.push_back(bad({tensor(F32, {1, 2, 4, 5}), tensor(F32, {1, 3, 3, 2})},
                      "interpolation_mode: expected 0 (bilinear), 1 (nearest) or 2 (bicubic), got 3",
                      {{"interpolation_mode", int64_t{3}}, {"padding_mode", int64_t{0}}, {"align_corners", false}}));
  table.push_back(bad({tensor(F32, {1, 2, 4, 5, 3}), tensor(F32, {1, 3, 3, 2, 3})},
                      "input: expected rank 4 (batch, channels, height, width), got float32[1, 2, 4, 5, 3]", bilinear));
  add_to_each(builtins, {"aten::grid_sampler", "aten::grid_sampler_2d"}, table);
}

void register_attention(BuiltinOps& builtins) {
  // query (..., L, E), key (..., S, E), value (..., S, Ev), an optional mask.
  const SampleTensor none = SampleTensor::absent();
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    auto t = [&](Shape shape, Layout layout = Layout::Contiguous) { return tensor(dtype, std::move(shape), layout); };
    table.push_back(good({t({2, 3, 4, 8}), t({2, 3, 5, 8}), t({2, 3, 5, 6}), none}));
    table.push_back(
        good({t({2, 3, 4, 8}), t({2, 3, 5, 8}), t({2, 3, 5, 6}), none}, {{"is_causal", true}, {"scale", 0.5}}));
    table.push_back(good({t({2, 3, 4, 8}), t({2, 3, 5, 8}), t({2, 3, 5, 6}), tensor(B, {4, 5})}));
    table.push_back(
        good({t({2, 3, 4, 8}), t({2, 3, 5, 8}, Layout::Transposed), t({2, 3, 5, 6}, Layout::Strided), t({4, 5})}));
    table.push_back(good({t({2, 4, 4, 8}), t({2, 2, 5, 8}), t({2, 2, 5, 6}), none}, {{"enable_gqa", true}}));
    table.push_back(good({t({4, 8}), t({5, 8}), t({5, 6}), none}));
    table.push_back(good({t({1, 0, 8}), t({1, 3, 8}), t({1, 3, 2}), none}));
  }
  table.push_back(bad({tensor(F32, {2, 3, 4, 8}), tensor(F32, {2, 3, 5, 7}), tensor(F32, {2, 3, 5, 6}), none},
                      "key: expected 8 features (dim -1) like query float32[2, 3, 4, 8], got float32[2, 3, 5, 7]"));
  table.push_back(bad({tensor(F32, {2, 3, 4, 8}), tensor(F32, {2, 3, 5, 8}), tensor(F32, {2, 3, 5, 6}), none},
                      "dropout_p: expected 0.0 (inference), got 0.5", {{"dropout_p", 0.5}}));
  builtins.add_samples("aten::scaled_dot_product_attention", table);

  // The same on [batch, sequence, heads, features]; the mask still over [batch, heads, L, S].
  std::vector<Sample> heads_second;
  for (DType dtype : {F32, F64}) {
    auto t = [&](Shape shape) { return tensor(dtype, std::move(shape)); };
    heads_second.push_back(good({t({2, 4, 3, 8}), t({2, 5, 3, 8}), t({2, 5, 3, 6}), none}));
    heads_second.push_back(
        good({t({2, 4, 3, 8}), t({2, 5, 3, 8}), t({2, 5, 3, 6}), none}, {{"is_causal", true}, {"scale", 0.5}}));
    heads_second.push_back(good({t({2, 4, 3, 8}), t({2, 5, 3, 8}), t({2, 5, 3, 6}), tensor(B, {2, 1, 1, 5})}));
    heads_second.push_back(good({t({1, 40, 2, 16}), t({1, 40, 2, 16}), t({1, 40, 2, 16}), t({40, 40})}));
    heads_second.push_back(good({t({2, 4, 4, 8}), t({2, 5, 2, 8}), t({2, 5, 2, 6}), none}, {{"enable_gqa", true}}));
    heads_second.push_back(good({t({1, 0, 2, 8}), t({1, 3, 2, 8}), t({1, 3, 2, 2}), none}));
  }
  heads_second.push_back(bad({tensor(F32, {2, 4, 8}), tensor(F32, {2, 5, 3, 8}), tensor(F32, {2, 5, 3, 6}), none},
                             "query: expected rank 4 (batch, sequence, heads, features), got float32[2, 4, 8]"));
  heads_second.push_back(bad({tensor(F32, {2, 4, 3, 8}), tensor(F32, {2, 5, 3, 7}), tensor(F32, {2, 5, 3, 6}), none},
                             "key: expected 8 features (dim -1) like query float32[2, 3, 4, 8], got float32[2, 3, 5, "
                             "7] (operands read as [batch, heads, sequence, features])"));
  builtins.add_samples("opgraph::attention_bshd", heads_second);
}

// cos and sin as Llama's: [batch, 1, sequence, features] over q's heads, or
// [batch, sequence, 1, features] where q is [batch, sequence, heads, features].
void register_rotary_embedding(BuiltinOps& builtins) {
  std::vector<Sample> table;
  for (DType dtype : {F32, F64}) {
    auto t = [&](Shape shape) { return tensor(dtype, std::move(shape)); };
    table.push_back(good({t({2, 3, 5, 8}), t({2, 1, 5, 8}), t({2, 1, 5, 8})}));
    table.push_back(good({t({2, 5, 3, 8}), t({1, 5, 1, 8}), t({1, 5, 1, 8})}));
    table.push_back(good({t({1, 4, 128, 64}), t({128, 64}), t({128, 64})}));  // past the parallel threshold
    table.push_back(good({tensor(dtype, {3, 4, 6}, Layout::Transposed), t({4, 6}), t({4, 6})}));
    table.push_back(good({t({0, 2, 4}), t({2, 4}), t({2, 4})}));
    table.push_back(good({t({2}), t({2}), t({2})}));
  }
  table.push_back(bad({tensor(F32, {2, 3, 5, 7}), tensor(F32, {2, 1, 5, 7}), tensor(F32, {2, 1, 5, 7})},
                      "input: expected an even number of features in the last dim, got float32[2, 3, 5, 7]"));
  table.push_back(bad({tensor(F32, {2, 3, 5, 8}), tensor(F32, {2, 3, 4, 8}), tensor(F32, {2, 3, 4, 8})},
                      "cos: expected a shape that broadcasts to input float32[2, 3, 5, 8], got float32[2, 3, 4, 8]"));
  table.push_back(bad({tensor(F32, {2, 3, 5, 8}), tensor(F64, {5, 8}), tensor(F64, {5, 8})},
                      "cos: expected float32 with input's 8 features in the last dim, got float64[5, 8]"));
  table.push_back(bad({tensor(F32, {2, 3, 5, 8}), tensor(F32, {5, 8}), tensor(F32, {1, 5, 8})},
                      "sin: expected cos's shape [5, 8], got float32[1, 5, 8]"));
  builtins.add_samples("opgraph::rotary_embedding", table);
}

}  // namespace

void register_attention_samples(BuiltinOps& builtins) {
  register_blocks(builtins);
  register_grid_samples(builtins);
  register_attention(builtins);
  register_rotary_embedding(builtins);
}

}  // namespace opgraph::kernels::samples
