// What the convolution kernels share (conv.cpp: forward, conv_backward.cpp:
// gradients): the parameters and their checks, the forward convolution, and
// the plain loops' walk over the taps.
#pragma once

#include <vector>

#include "kernels/cpu/fused_activation.h"
#include "kernels/define.h"

namespace opgraph::kernels {

// A convolution over `spatial` dimensions (1 or 2), batch and channels first.
struct ConvParams {
  int64_t spatial = 2;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// Reads and checks the stride, padding, dilation and groups attributes.
ConvParams conv_params(const Attrs& attrs, int64_t spatial);

// The output of a convolution of `input` (batched or not) by `weight`; checks
// every operand against the others.
TensorMeta conv_output_meta(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                            const ConvParams& p);

// An unbatched operand (channels, spatial...) seen as a batch of one; others as they are.
Tensor batched(const Tensor& t, int64_t rank);
TensorMeta batched(const TensorMeta& meta, int64_t rank);

// out = activation(conv(input, weight) + bias) on batched operands (bias may be
// undefined): oneDNN for float32, plain loops for float64 or when `reference`.
void conv_forward(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& out, const ConvParams& p, Activation activation, bool reference);

// The activation in double, for the reference implementations.
double activation_reference(Activation activation, double z);

// Calls visit(out_index, input_index, weight_index) for every product
// input[input_index] * weight[weight_index] that the output element at
// out_index sums, for contiguous batched operands (1-D as 2-D of unit height):
// out[n, o, y, x] sums over the group's input channels c and the taps (i, j)
// input[n, c, y*s - p + i*d, x*s - p + j*d] * weight[o, c, i, j].
template <typename Visit>
void for_each_tap(const Shape& input, const Shape& weight, const Shape& out, const ConvParams& p, Visit&& visit) {
  const bool one_d = p.spatial == 1;
  auto extent = [one_d](const Shape& s, int64_t d) { return one_d ? (d == 0 ? 1 : s[2]) : s[2 + d]; };
  const int64_t batch = input[0], channels = input[1], out_channels = out[1];
  const int64_t height = extent(input, 0), width = extent(input, 1);
  const int64_t kh = extent(weight, 0), kw = extent(weight, 1);
  const int64_t oh = extent(out, 0), ow = extent(out, 1);
  const int64_t sh = p.stride[0], sw = p.stride.back();
  const int64_t ph = one_d ? 0 : p.padding[0], pw = p.padding.back();
  const int64_t dh = p.dilation[0], dw = p.dilation.back();
  const int64_t per_group = channels / p.groups, out_per_group = out_channels / p.groups;
  int64_t o = 0;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t first = oc / out_per_group * per_group;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xo = 0; xo < ow; ++xo, ++o) {
          for (int64_t c = 0; c < per_group; ++c) {
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t yi = y * sh - ph + i * dh;
              if (yi < 0 || yi >= height) continue;
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t xi = xo * sw - pw + j * dw;
                if (xi < 0 || xi >= width) continue;
                visit(o, ((n * channels + first + c) * height + yi) * width + xi,
                      ((oc * per_group + c) * kh + i) * kw + j);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace opgraph::kernels
