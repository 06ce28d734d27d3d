// The convolutions' geometry, which every device's convolution kernels
// share: the parameters and their checks, the output's shape, and the plain
// loops' walk over the taps. (The CPU's forward convolution: engines/conv.h.)
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kernels/define.h"

namespace opgraph::kernels {

// A convolution over `spatial` dimensions (1, 2 or 3), batch and channels
// first. A transposed one is the adjoint of the convolution from its output
// to its input, with these parameters: input[n, c, ...] * weight[c, o, ...]
// goes to every output element that the convolution would have read for it.
struct ConvParams {
  int64_t spatial = 2;
  std::vector<int64_t> stride, padding, dilation;
  // Padding after the input in each dim: `padding`, one more where "same"
  // needs an odd total, or, transposed, `padding` less output_padding (the
  // convolution's input, which is the transposed one's output, ends that
  // much later).
  std::vector<int64_t> padding_end;
  int64_t groups = 1;
  bool transposed = false;
};

using Ints = std::span<const int64_t>;

// Checks the stride, padding, dilation and groups attributes.
ConvParams conv_params(Ints stride, Ints padding, Ints dilation, int64_t groups, int64_t spatial);
// The same with `padding` a string, "valid" or "same" (for the kernel extents
// in `weight`).
ConvParams str_padding_conv_params(Ints stride, std::string_view padding, Ints dilation, int64_t groups,
                                   int64_t spatial, const Shape& weight);
// The same with output_padding, for a transposed convolution.
ConvParams transposed_conv_params(Ints stride, Ints padding, Ints output_padding, int64_t groups, Ints dilation,
                                  int64_t spatial);
// aten::convolution's (and convolution_backward's): the spatial rank from the
// weight's, transposed or not as `transposed` says.
ConvParams convolution_params(Ints stride, Ints padding, Ints dilation, bool transposed, Ints output_padding,
                              int64_t groups, const TensorMeta& weight);

// The output of a convolution of `input` (batched or not) by `weight`; checks
// every operand against the others.
TensorMeta conv_output_meta(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias,
                            const ConvParams& p);

// An unbatched operand (channels, spatial...) seen as a batch of one; others as they are.
Tensor batched(const Tensor& t, int64_t rank);
TensorMeta batched(const TensorMeta& meta, int64_t rank);

// Calls visit(out_index, input_index, weight_index) for every product
// input[input_index] * weight[weight_index] that the output element at
// out_index sums, for contiguous batched operands of a (not transposed)
// convolution; 1-D and 2-D ones are walked as 3-D ones of unit depth and
// height: out[n, o, z, y, x] sums over the group's input channels c and the
// taps (a, i, j) input[n, c, z*s - p + a*d, y*s - p + i*d, x*s - p + j*d] *
// weight[o, c, a, i, j].
template <typename Visit>
void for_each_tap(const Shape& input, const Shape& weight, const Shape& out, const ConvParams& p, Visit&& visit) {
  // Per dim (depth, height, width): extents, stride, padding, dilation.
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, o[3] = {1, 1, 1}, s[3] = {1, 1, 1}, pad[3] = {0, 0, 0},
          dil[3] = {1, 1, 1};
  for (int64_t d = 0; d < p.spatial; ++d) {
    const int64_t at = 3 - p.spatial + d;
    in[at] = input[2 + d], k[at] = weight[2 + d], o[at] = out[2 + d];
    s[at] = p.stride[d], pad[at] = p.padding[d], dil[at] = p.dilation[d];
  }
  const int64_t batch = input[0], channels = input[1], out_channels = out[1];
  const int64_t per_group = channels / p.groups, out_per_group = out_channels / p.groups;
  // The input coordinate that output coordinate `to` reads with tap `tap`
  // along dim `d`, or -1 where that falls in the padding.
  auto source = [&](int64_t d, int64_t to, int64_t tap) {
    const int64_t at = to * s[d] - pad[d] + tap * dil[d];
    return at >= 0 && at < in[d] ? at : -1;
  };
  int64_t index = 0;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t first = oc / out_per_group * per_group;
      for (int64_t z = 0; z < o[0]; ++z) {
        for (int64_t y = 0; y < o[1]; ++y) {
          for (int64_t x = 0; x < o[2]; ++x, ++index) {
            for (int64_t c = 0; c < per_group; ++c) {
              for (int64_t a = 0; a < k[0]; ++a) {
                const int64_t zi = source(0, z, a);
                if (zi < 0) continue;
                for (int64_t i = 0; i < k[1]; ++i) {
                  const int64_t yi = source(1, y, i);
                  if (yi < 0) continue;
                  for (int64_t j = 0; j < k[2]; ++j) {
                    const int64_t xi = source(2, x, j);
                    if (xi < 0) continue;
                    visit(index, (((n * channels + first + c) * in[0] + zi) * in[1] + yi) * in[2] + xi,
                          (((oc * per_group + c) * k[0] + a) * k[1] + i) * k[2] + j);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace opgraph::kernels
