// 2-D convolutions on channel-blocked activations, the layout a Session keeps
// between the convolutions of a CNN (graph/nchwc_layout.cpp), and the
// conversion back to the plain layout:
//
//   opgraph::conv2d_nchwc   plain [N, C, H, W] or blocked input ->
//                           blocked output [N, ceil(O / B), OH, OW, B];
//                           a blocked residual of the output's shape, when
//                           given, is added before the activation (a ResNet
//                           block's shortcut), in place where a Session can
//   opgraph::nchwc_to_nchw  blocked [N, ceil(C / B), H, W, B] -> plain [N, C, H, W]
//
// (The layout: blocked_layout.h.) The convolutions keep zeros in the padding
// channels (they read them against zero weights and write zeros there), as
// do the elementwise ops the layout pass lets run on blocks. Converting the
// activations into and out of the blocked layout around every convolution
// took a large share of MobileNetV2's time.
#include <algorithm>

#include "kernels/cpu/engines/conv.h"
#include "kernels/cpu/engines/conv_few_pixels.h"
#include "kernels/cpu/onednn/blocked_layout.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/define.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {
namespace {

// The output's block; checks it against the weight's output channels.
int64_t block_attr(const Attrs& attrs, const TensorMeta& weight) {
  const int64_t block = attrs.get<int64_t>("block");
  OPGRAPH_CHECK(weight.dim() >= 1, "weight: expected rank 4 (out_channels, in_channels/groups, kh, kw), got ",
                weight.str());
  OPGRAPH_CHECK(is_block(block, weight.shape[0]), "block: expected 8, 16 or the output's ", weight.shape[0],
                " channels, got ", block);
  return block;
}

// ---- opgraph::conv2d_nchwc ---------------------------------------------------

ConvParams nchwc_params(const Attrs& attrs) {
  ConvParams p = conv_params(attrs, 2);
  const std::vector<int64_t>& end = attrs.get<std::vector<int64_t>>("padding_end");
  OPGRAPH_CHECK(end.size() == 2 && end[0] >= 0 && end[1] >= 0, "padding_end: expected 2 values of at least 0, got ",
                shape_str(end));
  p.padding_end = end;
  return p;
}

// The input's plain dims: a plain input's own, a blocked one's from the
// channels the weight reads, in blocks of 8, 16 or all of them.
Shape input_dims(const TensorMeta& input, const TensorMeta& weight, const ConvParams& p) {
  if (input.dim() != 5) {
    OPGRAPH_CHECK(input.dim() == 4, "input: expected [N, C, H, W] or a blocked [N, C/B, H, W, B], got ", input.str());
    return input.shape;
  }
  OPGRAPH_CHECK(weight.dim() == 4, "weight: expected rank 4 (out_channels, in_channels/groups, kh, kw), got ",
                weight.str());
  const int64_t channels = weight.shape[1] * p.groups, block = input.shape[4];
  OPGRAPH_CHECK(is_block(block, channels), "input: expected blocks of 8, 16 or its ", channels, " channels, got ",
                input.str());
  return plain_dims(input, channels, block, "input");
}

// The plain output meta; checks every operand.
TensorMeta plain_output(std::span<const TensorMeta* const> in, const ConvParams& p) {
  OPGRAPH_CHECK(in[0]->dtype == DType::Float32, "input: expected float32, got ", in[0]->str());
  const TensorMeta input{in[0]->dtype, input_dims(*in[0], *in[1], p)};
  return conv_output_meta(input, *in[1], in[2], p);
}

std::vector<TensorMeta> conv2d_nchwc_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  activation_attr(attrs);
  const ConvParams p = nchwc_params(attrs);
  const TensorMeta plain = plain_output(in, p);
  const int64_t block = block_attr(attrs, *in[1]);
  const TensorMeta out{DType::Float32, blocked_dims(plain.shape, block)};
  OPGRAPH_CHECK(in[3] == nullptr || *in[3] == out, "residual: expected the output's ", out.str(), ", got ",
                in[3] == nullptr ? "" : in[3]->str());
  return {out};
}

// The convolution on plain copies of the operands, the residual added and the
// activation applied to the plain result, blocked after (zeros in the
// padding channels, which oneDNN writes there too).
void conv2d_nchwc_reference(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                            const Attrs& attrs) {
  const ConvParams p = nchwc_params(attrs);
  const int64_t block = block_attr(attrs, in[1].meta());
  const Activation activation = activation_attr(attrs);
  const Tensor& residual = in[3];
  Tensor input = in[0];
  if (input.dim() == 5) {
    input = Tensor::empty(input_dims(in[0].meta(), in[1].meta(), p), DType::Float32);
    convert_blocks(context, input.shape(), in[0].size(4), in[0].data_ptr<float>(), input.data_ptr<float>(), false);
  }
  const Tensor result = Tensor::empty(plain_dims(out[0].meta(), in[1].size(0), block, "output"), DType::Float32);
  conv_forward(context, input, in[1], in[2], result, p, residual.defined() ? Activation::None : activation,
               /*reference=*/true);
  if (residual.defined()) {  // read whole before the output is written: it may be the same buffer
    const Tensor shortcut = Tensor::empty(result.shape(), DType::Float32);
    convert_blocks(context, result.shape(), block, residual.data_ptr<float>(), shortcut.data_ptr<float>(), false);
    float* y = result.data_ptr<float>();
    for (int64_t i = 0; i < result.numel(); ++i) {
      y[i] = static_cast<float>(activation_reference(activation, double(y[i]) + shortcut.data_ptr<float>()[i]));
    }
  }
  convert_blocks(context, result.shape(), block, result.data_ptr<float>(), out[0].data_ptr<float>(), true);
}

void conv2d_nchwc_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                      const Attrs& attrs) {
  const ConvParams p = nchwc_params(attrs);
  const int64_t block = block_attr(attrs, in[1].meta());
  const Shape input = input_dims(in[0].meta(), in[1].meta(), p);
  const Shape result = plain_dims(out[0].meta(), in[1].size(0), block, "output");
  if (in[1].numel() == 0) return conv2d_nchwc_reference(context, in, out, attrs);  // oneDNN sums no empty channels
  const Activation activation = activation_attr(attrs);
  if (few_pixel_conv(context, in[0], input, in[1], in[2], in[3], out[0], result, p, activation)) return;
  // A block of all of 8 or 16 channels is channels-last and nChw8c or
  // nChw16c at once. oneDNN takes a convolution's two sides in the same form
  // (8 channels in nChw8c to 16 in nChw16c ran its reference kernel, far
  // slower than on nhwc), so one from a single block to a
  // single block reads and writes nhwc.
  const bool channels_last = in[0].dim() == 5 && in[0].size(4) == input[1] && block == result[1];
  const ConvLayouts layouts =
      channels_last
          ? ConvLayouts{dnnl::memory::format_tag::nhwc, dnnl::memory::format_tag::nhwc}
          : ConvLayouts{in[0].dim() == 5 ? blocked_tag(in[0].size(4), input[1]) : dnnl::memory::format_tag::nchw,
                        blocked_tag(block, result[1])};
  conv_forward_in_layouts(context, in[0], input, in[1], in[2], in[3], out[0], result, p, activation, layouts);
}

// ---- opgraph::nchwc_to_nchw --------------------------------------------------

std::vector<TensorMeta> nchwc_to_nchw_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const int64_t channels = attrs.get<int64_t>("channels");
  OPGRAPH_CHECK(channels >= 1, "channels: expected at least 1, got ", channels);
  OPGRAPH_CHECK(in[0]->dtype == DType::Float32, "self: expected float32, got ", in[0]->str());
  OPGRAPH_CHECK(in[0]->dim() == 5 && is_block(in[0]->shape[4], channels),
                "self: expected a blocked [N, C/B, H, W, B] with B 8, 16 or C (", channels, "), got ", in[0]->str());
  return {{DType::Float32, plain_dims(*in[0], channels, in[0]->shape[4], "self")}};
}

void nchwc_to_nchw_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                       const Attrs&) {
  convert_blocks(context, out[0].shape(), in[0].size(4), in[0].data_ptr<float>(), out[0].data_ptr<float>(), false);
}

// Element by element from the definition of the layout.
void nchwc_to_nchw_reference(const KernelContext&, std::span<const Tensor> in, std::span<const Tensor> out,
                             const Attrs&) {
  const Shape& plain = out[0].shape();
  const int64_t block = in[0].size(4), blocks = in[0].size(1), height = plain[2], width = plain[3];
  const float* from = in[0].data_ptr<float>();
  float* to = out[0].data_ptr<float>();
  for (int64_t n = 0; n < plain[0]; ++n) {
    for (int64_t c = 0; c < plain[1]; ++c) {
      for (int64_t h = 0; h < height; ++h) {
        for (int64_t w = 0; w < width; ++w) {
          const int64_t blocked = (((n * blocks + c / block) * height + h) * width + w) * block + c % block;
          to[((n * plain[1] + c) * height + h) * width + w] = from[blocked];
        }
      }
    }
  }
}

}  // namespace

void register_conv_nchwc_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "opgraph::conv2d_nchwc(Tensor input, Tensor weight, Tensor? bias=None, Tensor? residual=None, "
                    "int[2] stride=1, int[2] padding=0, int[2] padding_end=0, int[2] dilation=1, int groups=1, "
                    "int block=16, *, str activation=\"none\") -> Tensor",
          .shape = conv2d_nchwc_shape,
          .cpu = conv2d_nchwc_cpu,
          .reference = conv2d_nchwc_reference,
          .in_place_input = 3,
          .prepare = prepare_weights});
  define(builtins, {.schema = "opgraph::nchwc_to_nchw(Tensor self, int channels) -> Tensor",
                    .shape = nchwc_to_nchw_shape,
                    .cpu = nchwc_to_nchw_cpu,
                    .reference = nchwc_to_nchw_reference,
                    .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
