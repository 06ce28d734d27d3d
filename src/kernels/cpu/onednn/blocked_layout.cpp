#include "kernels/cpu/onednn/blocked_layout.h"

#include <algorithm>

namespace opgraph::kernels {

dnnl::memory::format_tag blocked_tag(int64_t block, int64_t channels) {
  if (block == 16) return dnnl::memory::format_tag::nChw16c;
  if (block == 8) return dnnl::memory::format_tag::nChw8c;
  OPGRAPH_CHECK(block == channels, "a block of ", block, " channels of ", channels);
  return dnnl::memory::format_tag::nhwc;
}

Shape plain_dims(const TensorMeta& blocked, int64_t channels, int64_t block, const char* name) {
  OPGRAPH_CHECK(blocked.dim() == 5 && blocked.shape[1] == blocks_of(channels, block) && blocked.shape[4] == block, name,
                ": expected [N, ", blocks_of(channels, block), ", H, W, ", block, "] (", channels,
                " channels in blocks of ", block, "), got ", blocked.str());
  return {blocked.shape[0], channels, blocked.shape[2], blocked.shape[3]};
}

// One task per run of 16 lanes of a block of an image, so that a
// channels-last block (thousands of lanes) is split too, and each task walks
// 16 plain rows at once.
void convert_blocks(const KernelContext& context, const Shape& plain, int64_t block, const float* from, float* to,
                    bool to_blocked) {
  constexpr int64_t kRun = 16;
  const int64_t channels = plain[1], blocks = blocks_of(channels, block), pixels = plain[2] * plain[3];
  const int64_t runs = blocks_of(block, kRun);
  context.pool->parallel_for(
      0, plain[0] * blocks * runs, std::max<int64_t>(1, 4096 / std::max<int64_t>(pixels * kRun, 1)),
      [&](int64_t begin, int64_t end) {
        for (int64_t task = begin; task < end; ++task) {
          const int64_t image_block = task / runs, first = task % runs * kRun, last = std::min(first + kRun, block);
          const int64_t n = image_block / blocks, c0 = image_block % blocks * block;
          const int64_t lanes = std::min(block, channels - c0);
          const int64_t blocked_base = image_block * pixels * block, plain_base = (n * channels + c0) * pixels;
          for (int64_t s = 0; s < pixels; ++s) {
            for (int64_t lane = first; lane < last; ++lane) {
              const int64_t b = blocked_base + s * block + lane, p = plain_base + lane * pixels + s;
              if (to_blocked) {
                to[b] = lane < lanes ? from[p] : 0.0f;
              } else if (lane < lanes) {
                to[p] = from[b];
              }
            }
          }
        }
      });
}

}  // namespace opgraph::kernels
