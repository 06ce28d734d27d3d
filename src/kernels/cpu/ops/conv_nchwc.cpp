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
#include "kernels/cpu/engines/int8_conv.h"
#include "kernels/cpu/onednn/blocked_layout.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/define.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {
namespace {

// The output's block; checks it against the weight's output channels.
int64_t checked_block(int64_t block, const TensorMeta& weight) {
  OPGRAPH_CHECK(weight.dim() >= 1, "weight: expected rank 4 (out_channels, in_channels/groups, kh, kw), got ",
                weight.str());
  OPGRAPH_CHECK(is_block(block, weight.shape[0]), "block: expected 8, 16 or the output's ", weight.shape[0],
                " channels, got ", block);
  return block;
}

// ---- opgraph::conv2d_nchwc ---------------------------------------------------

// The op's attributes after its tensors, in schema order.
struct NchwcAttrs {
  Ints stride, padding, padding_end, dilation;
  int64_t groups, block;
  std::string_view activation;
};

ConvParams nchwc_params(const NchwcAttrs& attrs) {
  ConvParams p = conv_params(attrs.stride, attrs.padding, attrs.dilation, attrs.groups, 2);
  const Ints end = attrs.padding_end;
  OPGRAPH_CHECK(end.size() == 2 && end[0] >= 0 && end[1] >= 0, "padding_end: expected 2 values of at least 0, got ",
                shape_str(end));
  p.padding_end.assign(end.begin(), end.end());
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
TensorMeta plain_output(const TensorMeta& given_input, const TensorMeta& weight, const TensorMeta* bias,
                        const ConvParams& p) {
  OPGRAPH_CHECK(given_input.dtype == DType::Float32, "input: expected float32, got ", given_input.str());
  const TensorMeta input{given_input.dtype, input_dims(given_input, weight, p)};
  return conv_output_meta(input, weight, bias, p);
}

TensorMeta conv2d_nchwc_shape(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                              const TensorMeta* residual, Ints stride, Ints padding, Ints padding_end, Ints dilation,
                              int64_t groups, int64_t block_given, std::string_view activation) {
  parse_activation(activation);
  const ConvParams p = nchwc_params({stride, padding, padding_end, dilation, groups, block_given, activation});
  const TensorMeta plain = plain_output(input, weight, bias, p);
  const int64_t block = checked_block(block_given, weight);
  const TensorMeta out{DType::Float32, blocked_dims(plain.shape, block)};
  OPGRAPH_CHECK(residual == nullptr || *residual == out, "residual: expected the output's ", out.str(), ", got ",
                residual == nullptr ? "" : residual->str());
  return out;
}

// The op's tensors; bias and residual undefined for None.
struct NchwcTensors {
  const Tensor& input;
  const Tensor& weight;
  Tensor bias, residual;
  const Tensor& out;
};

// The convolution on plain copies of the operands, the residual added and the
// activation applied to the plain result, blocked after (zeros in the
// padding channels, which oneDNN writes there too).
void nchwc_reference(const KernelContext& context, const NchwcTensors& t, const NchwcAttrs& attrs) {
  const ConvParams p = nchwc_params(attrs);
  const int64_t block = checked_block(attrs.block, t.weight.meta());
  const Activation activation = parse_activation(attrs.activation);
  const Tensor& residual = t.residual;
  Tensor input = t.input;
  if (input.dim() == 5) {
    input = Tensor::empty(input_dims(t.input.meta(), t.weight.meta(), p), DType::Float32);
    convert_blocks(context, input.shape(), t.input.size(4), t.input.data_ptr<float>(), input.data_ptr<float>(), false);
  }
  const Tensor result = Tensor::empty(plain_dims(t.out.meta(), t.weight.size(0), block, "output"), DType::Float32);
  conv_forward(context, input, t.weight, t.bias, result, p, residual.defined() ? Activation::None : activation,
               /*reference=*/true);
  if (residual.defined()) {  // read whole before the output is written: it may be the same buffer
    const Tensor shortcut = Tensor::empty(result.shape(), DType::Float32);
    convert_blocks(context, result.shape(), block, residual.data_ptr<float>(), shortcut.data_ptr<float>(), false);
    float* y = result.data_ptr<float>();
    for (int64_t i = 0; i < result.numel(); ++i) {
      y[i] = static_cast<float>(activation_reference(activation, double(y[i]) + shortcut.data_ptr<float>()[i]));
    }
  }
  convert_blocks(context, result.shape(), block, result.data_ptr<float>(), t.out.data_ptr<float>(), true);
}

void nchwc_fast(const KernelContext& context, const NchwcTensors& t, const NchwcAttrs& attrs) {
  const ConvParams p = nchwc_params(attrs);
  const int64_t block = checked_block(attrs.block, t.weight.meta());
  const Shape input = input_dims(t.input.meta(), t.weight.meta(), p);
  const Shape result = plain_dims(t.out.meta(), t.weight.size(0), block, "output");
  if (t.weight.numel() == 0) return nchwc_reference(context, t, attrs);  // oneDNN sums no empty channels
  const Activation activation = parse_activation(attrs.activation);
  // A block of all of 8 or 16 channels is channels-last and nChw8c or
  // nChw16c at once. oneDNN takes a convolution's two sides in the same form
  // (8 channels in nChw8c to 16 in nChw16c ran its reference kernel, far
  // slower than on nhwc), so one from a single block to a
  // single block reads and writes nhwc.
  const bool channels_last = t.input.dim() == 5 && t.input.size(4) == input[1] && block == result[1];
  // oneDNN's int8 convolutions take channels-last alone (the layout pass
  // keeps a Session's chains so where it quantizes its activations).
  if (channels_last &&
      int8_activation_conv(context, t.input, input, t.weight, t.bias, t.residual, t.out, result, p, activation)) {
    return;
  }
  if (few_pixel_conv(context, t.input, input, t.weight, t.bias, t.residual, t.out, result, p, activation)) return;
  const ConvLayouts layouts =
      channels_last
          ? ConvLayouts{dnnl::memory::format_tag::nhwc, dnnl::memory::format_tag::nhwc}
          : ConvLayouts{t.input.dim() == 5 ? blocked_tag(t.input.size(4), input[1]) : dnnl::memory::format_tag::nchw,
                        blocked_tag(block, result[1])};
  conv_forward_in_layouts(context, t.input, input, t.weight, t.bias, t.residual, t.out, result, p, activation, layouts);
}

template <bool kReference>
void conv2d_nchwc_kernel(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                         const Tensor* residual, Ints stride, Ints padding, Ints padding_end, Ints dilation,
                         int64_t groups, int64_t block, std::string_view activation, const Tensor& out) {
  const NchwcTensors tensors{input, weight, bias ? *bias : Tensor(), residual ? *residual : Tensor(), out};
  const NchwcAttrs attrs{stride, padding, padding_end, dilation, groups, block, activation};
  (kReference ? nchwc_reference : nchwc_fast)(context, tensors, attrs);
}

// ---- opgraph::nchwc_to_nchw --------------------------------------------------

TensorMeta nchwc_to_nchw_shape(const TensorMeta& self, int64_t channels) {
  OPGRAPH_CHECK(channels >= 1, "channels: expected at least 1, got ", channels);
  OPGRAPH_CHECK(self.dtype == DType::Float32, "self: expected float32, got ", self.str());
  OPGRAPH_CHECK(self.dim() == 5 && is_block(self.shape[4], channels),
                "self: expected a blocked [N, C/B, H, W, B] with B 8, 16 or C (", channels, "), got ", self.str());
  return {DType::Float32, plain_dims(self, channels, self.shape[4], "self")};
}

void nchwc_to_nchw_cpu(const KernelContext& context, const Tensor& self, int64_t, const Tensor& out) {
  convert_blocks(context, out.shape(), self.size(4), self.data_ptr<float>(), out.data_ptr<float>(), false);
}

// Element by element from the definition of the layout.
void nchwc_to_nchw_reference(const KernelContext&, const Tensor& self, int64_t, const Tensor& out) {
  const Shape& plain = out.shape();
  const int64_t block = self.size(4), blocks = self.size(1), height = plain[2], width = plain[3];
  const float* from = self.data_ptr<float>();
  float* to = out.data_ptr<float>();
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
          OPGRAPH_CPU_AND_REFERENCE(conv2d_nchwc_kernel),
          .in_place_input = 3,
          .prepare = prepare_weights});
  define(builtins, {.schema = "opgraph::nchwc_to_nchw(Tensor self, int channels) -> Tensor",
                    .shape = nchwc_to_nchw_shape,
                    .cpu = nchwc_to_nchw_cpu,
                    .reference = nchwc_to_nchw_reference,
                    .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
