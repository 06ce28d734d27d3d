// Which convolutions run on oneDNN's Winograd kernels. One rule for the two
// places that ask: the kernel (kernels/cpu/ops/conv.cpp), which tries the
// Winograd primitive on blocks of 16 channels, and the layout pass
// (graph/nchwc_layout.cpp), which keeps blocks of 16 for such chains.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace opgraph::kernels {

// Below this many output pixels (batch x height x width), the direct kernel.
// The Winograd kernels (F(2x2, 3x3) on AVX-512) multiply transformed tiles
// by transformed weights, 16/9 of the plain weights' size and read on every
// call, in products with a row per 2x2 tile: with few tiles those products
// wait on the weights. ResNet-18 at 32x32 (stage 4 at 1x1, stage 3 at 2x2)
// runs faster without Winograd at batch 1 and at batch 32, and so do
// ResNet-50's 256 channels at 14x14 (196 pixels) and 512 at 7x7, while its
// 128 channels at 28x28 (784 pixels) run faster on Winograd.
constexpr int64_t kWinogradMinPixels = 400;

// A dense 3x3 convolution with unit strides and no dilation (PyTorch's
// convention: 1 is none) over at least kWinogradMinPixels output pixels.
inline bool is_winograd_convolution(int64_t groups, std::span<const int64_t> kernel, std::span<const int64_t> strides,
                                    std::span<const int64_t> dilations, int64_t output_pixels) {
  const auto all = [](std::span<const int64_t> values, int64_t value) {
    return std::ranges::all_of(values, [&](int64_t x) { return x == value; });
  };
  return groups == 1 && kernel.size() == 2 && all(kernel, 3) && all(strides, 1) && all(dilations, 1) &&
         output_pixels >= kWinogradMinPixels;
}

}  // namespace opgraph::kernels
