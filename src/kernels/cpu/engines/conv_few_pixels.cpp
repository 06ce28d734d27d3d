// A convolution over few output pixels reads each weight a few dozen times
// at most, and its weight does not stay in cache from one run to the next:
// its time is in streaming the weight from memory. ResNet-50's last stage at
// batch 1 (49 pixels, weights of 1 to 9.4 MB) ran on oneDNN's direct kernels
// at 108-125 GFLOP/s on one core, where its early stages reached 170-300.
//
// This kernel is a product of the pixels by the weight's [depth, output
// channels] matrix, written for that case:
// - Each thread computes its own output channels, in panels of 16, and
//   streams their weight alone. The weight is packed once per thread count
//   (kept in the node's prepared weights) as groups of kTilePanels panels,
//   each group's [depth][panels][16] floats in the order its tiles read them.
// - A register tile of kTilePixels pixels by kTilePanels panels (21 AVX-512
//   accumulators) sums over a chunk of kChunkDepth steps of depth; all the
//   pixels' tiles take that chunk in turn, while its weight is in L1. So
//   the weight is read from memory once.
// - While a chunk runs, its tiles prefetch the next chunk's weight, spread
//   evenly over their steps. The hardware prefetchers alone left the
//   multiply-adds waiting (ten 3x3 convolutions of 512 channels at 7x7, one
//   core: 23.1 ms without software prefetch, 17.3 with it); issued all at
//   once, the prefetches waited on each other.
// - The input is read in its blocks of 16 channels and the output written
//   in its blocks: the sums of a tile are 16 output channels of 7 pixels,
//   whole vectors of nChw16c or channels-last. A 1x1 convolution with unit
//   strides on one image in nChw16c reads its input in place; others first
//   gather the pixels each tap reads into that form (im2col), in scratch
//   kept between calls (with a new buffer each call, page faults took ten
//   3x3 convolutions of 512 channels at 7x7 from 17.9 to 22.1 ms).
// Tile shapes, in a standalone program (one core, 100 MB of weights cycled,
// a 3x3 of 512 channels / a 1x1 of 2048 to 512): 7 pixels x 3 panels 1.36 /
// 0.54 ms, 12 x 2 1.74 / 0.73, 25 x 1 1.78 / 0.82, 7 x 4 and 6 x 4 slower
// still (spilled). ResNet-50's last stage at batch 1 took 8.1 ms against
// oneDNN's 9.7 on one core (its 3x3 convolutions 1.65-1.69 ms against
// 1.91-2.03, its 1x1 ones 0.68-0.71 against 0.79-0.87), 5.6 against 6.3 on
// two. Each core streams its weight at about 6 GB/s, where plain reads
// reach 13.7 GB/s on one core: the prefetches are bound by the core's line
// fill buffers (a prefetch further ahead, or into L2 only, did not help).
#include "kernels/cpu/engines/conv_few_pixels.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/onednn/blocked_layout.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/onednn/onednn.h"
#include "kernels/cpu/util/activation_formulas.h"
#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/prepared_weights.h"

namespace opgraph::kernels {
namespace {

// Channels per block and per panel: one AVX-512 vector of floats.
constexpr int64_t kLanes = 16;
// At most this many output pixels (batch x height x width). With more, each
// weight is read often enough for oneDNN's kernels to keep up: at 196 pixels
// (ResNet-50's third stage) this kernel's tiles, in a standalone program,
// were no faster (1x1, 1024 to 256 channels: 0.61 against oneDNN's 0.63 ms
// in the model; 3x3 of 256: 1.44 against 1.30 ms).
constexpr int64_t kFewPixels = 128;
// Outputs of at least 7x7 an image: on smaller ones most of a 3x3 kernel's
// taps fall in the padding, which oneDNN skips and this kernel multiplies by
// zeros (ResNet-18 at 32x32, whose last stage is 1x1, took 2.2 ms against
// 1.0).
constexpr int64_t kMinOutputSide = 7;
// Weights larger than a core's L2 cache, which stream from memory: with
// MobileNetV2's (0.6 to 1.6 MB, 14 MB in all), which stay in cache from one
// run to the next, oneDNN's kernels are faster (the model took 5.5 ms
// against 4.4).
constexpr int64_t kMinWeightBytes = 4 << 20;
constexpr int64_t kTilePixels = 7, kTilePanels = 3;
// 64 steps of 3 panels: 12 KiB of weight, which stays in L1 while every
// pixel tile takes it (64 was faster than 128 or 256 steps).
constexpr int64_t kChunkDepth = 64;
// How far ahead of a chunk its tiles prefetch: the next chunk of 3 panels.
// 24 to 96 KiB were no faster, nor a second prefetch into L2 from 48 to
// 192 KiB ahead; 1 and 4 KiB were slower.
constexpr int64_t kPrefetchBytes = kChunkDepth * kTilePanels * kLanes * sizeof(float);
// Sets the packed weights apart from the other forms among the node's
// prepared weights.
constexpr int64_t kPackedKey = -0x465058;

typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

// The output channels a thread computes, in panels of 16: part `part` of
// `parts`, in groups of kTilePanels panels and one of what is left.
struct Group {
  int64_t first_panel, panels;
};

std::vector<Group> groups_of(int64_t out_panels, int64_t part, int64_t parts) {
  std::vector<Group> groups;
  const int64_t end = out_panels * (part + 1) / parts;
  for (int64_t panel = out_panels * part / parts; panel < end; panel += kTilePanels) {
    groups.push_back({panel, std::min(kTilePanels, end - panel)});
  }
  return groups;
}

// The weight packed for `parts` threads: each group's as [depth][panels][16]
// from float first_panel * depth * 16 on, so that a group's weight streams
// from memory in the order its tiles read it. Depth index d is
// ((c / 16 * kernel_h + i) * kernel_w + j) * 16 + c % 16 for input channel c
// and tap (i, j), as in the gathered input, whose blocks of 16 channels stay
// whole.
const float* packed_weight(const KernelContext& context, const Tensor& weight, int64_t parts) {
  const int64_t out_channels = weight.size(0), channels = weight.size(1), taps = weight.size(2) * weight.size(3);
  const PreparedWeights::Key key{kPackedKey,
                                 out_channels,
                                 channels,
                                 weight.size(2),
                                 weight.size(3),
                                 parts,
                                 reinterpret_cast<intptr_t>(weight.data())};
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, spanned_bytes(weight), [&] {
    auto packed = std::make_shared<Tensor>(Tensor::empty({out_channels * channels * taps}, DType::Float32));
    const float* w = weight.data_ptr<float>();
    float* to = packed->data_ptr<float>();
    const int64_t depth = channels * taps;
    for (int64_t part = 0; part < parts; ++part) {
      for (const Group& group : groups_of(out_channels / kLanes, part, parts)) {
        float* group_to = to + group.first_panel * depth * kLanes;
        for (int64_t o = group.first_panel * kLanes; o < (group.first_panel + group.panels) * kLanes; ++o) {
          const int64_t v = o / kLanes - group.first_panel;
          for (int64_t c = 0; c < channels; ++c) {
            for (int64_t tap = 0; tap < taps; ++tap) {
              const int64_t d = ((c / kLanes) * taps + tap) * kLanes + c % kLanes;
              group_to[(d * group.panels + v) * kLanes + o % kLanes] = w[(o * channels + c) * taps + tap];
            }
          }
        }
      }
    }
    return std::shared_ptr<const void>(packed, packed->data());
  });
  return static_cast<const float*>(kept.get());
}

struct Problem {
  const float* a;  // the input: [depth / 16][pixels][16]
  const float* w;  // packed_weight's
  float* out;
  const float* bias;      // [out_channels], or null
  const float* residual;  // out's layout, or null; may be out
  // Where pixel p's 16 channels of the first panel lie in out (and in residual).
  const int64_t* pixel_at;
  int64_t pixels, depth;
  int64_t panel_step;  // between the same pixel of two panels in out
  Activation activation;
};

// The weight a chunk reads: kChunkDepth or fewer steps of a group's
// panels, `panels` lines a step from `first` on.
struct Chunk {
  const float* first;
  int64_t panels, steps;
};

Chunk chunk_of(const Problem& pr, const Group& group, int64_t depth_begin) {
  return {pr.w + (group.first_panel * pr.depth + depth_begin * group.panels) * kLanes, group.panels,
          std::min(kChunkDepth, pr.depth - depth_begin)};
}

// The lines a tile prefetches: [first, + count), spread over its steps.
struct Prefetch {
  const float* first;
  int64_t count;
};

// Adds the chunk `run` to the sums of pixels [first_pixel, + Pixels) of
// its panels, which out holds between chunks. Meanwhile prefetches the
// `prefetch` lines, spread evenly over its steps: issued all at once, they
// filled the core's line fill buffers and waited.
template <int64_t Pixels, int64_t Panels>
void tile(const Problem& pr, int64_t first_pixel, int64_t first_panel, int64_t depth_begin, const Chunk& run,
          Prefetch prefetch) {
  float* sums_at[Pixels][Panels];
  Lanes sums[Pixels][Panels];
#pragma GCC unroll 8
  for (int64_t t = 0; t < Pixels; ++t) {
#pragma GCC unroll 3
    for (int64_t v = 0; v < Panels; ++v) {
      sums_at[t][v] = pr.out + pr.pixel_at[first_pixel + t] + (first_panel + v) * pr.panel_step;
      std::memcpy(&sums[t][v], sums_at[t][v], sizeof(Lanes));
    }
  }
  int64_t line = 0, due = 0;  // `due` counts lines owed, in units of 1 / run.steps
  for (int64_t step = 0; step < run.steps; ++step) {
    Lanes w[Panels];
#pragma GCC unroll 3
    for (int64_t v = 0; v < Panels; ++v) std::memcpy(&w[v], run.first + (step * Panels + v) * kLanes, sizeof w[v]);
    for (due += prefetch.count; due >= run.steps && line < prefetch.count; due -= run.steps, ++line) {
      __builtin_prefetch(prefetch.first + line * kLanes, 0, 3);
    }
    const int64_t d = depth_begin + step;
    const float* a = pr.a + ((d / kLanes) * pr.pixels + first_pixel) * kLanes + d % kLanes;
#pragma GCC unroll 8
    for (int64_t t = 0; t < Pixels; ++t) {
#pragma GCC unroll 3
      for (int64_t v = 0; v < Panels; ++v) sums[t][v] += a[t * kLanes] * w[v];
    }
  }
#pragma GCC unroll 8
  for (int64_t t = 0; t < Pixels; ++t) {
#pragma GCC unroll 3
    for (int64_t v = 0; v < Panels; ++v) std::memcpy(sums_at[t][v], &sums[t][v], sizeof(Lanes));
  }
}

// The last tile of a chunk, of fewer than kTilePixels pixels.
template <int64_t Panels, int64_t... Fewer>
void short_tile(int64_t pixels, std::integer_sequence<int64_t, Fewer...>, const Problem& pr, int64_t first_pixel,
                int64_t first_panel, int64_t depth_begin, const Chunk& run, Prefetch prefetch) {
  ((pixels == Fewer + 1 ? tile<Fewer + 1, Panels>(pr, first_pixel, first_panel, depth_begin, run, prefetch) : void()),
   ...);
}

// Sets out's sums for the group's panels to bias + residual (either may be
// missing), from which the chunks add.
void start_sums(const Problem& pr, const Group& group) {
  for (int64_t v = group.first_panel; v < group.first_panel + group.panels; ++v) {
    Lanes bias{};
    if (pr.bias != nullptr) std::memcpy(&bias, pr.bias + v * kLanes, sizeof bias);
    for (int64_t pixel = 0; pixel < pr.pixels; ++pixel) {
      const int64_t at = pr.pixel_at[pixel] + v * pr.panel_step;
      Lanes sums = bias, residual;
      if (pr.residual != nullptr) {
        std::memcpy(&residual, pr.residual + at, sizeof residual);
        sums += residual;
      }
      std::memcpy(pr.out + at, &sums, sizeof sums);
    }
  }
}

// Applies the activation to out's sums for the group's panels, a run of
// adjacent pixels or panels at a time: over 16 lanes at a time, GCC
// unrolled the loop and left its comparisons scalar (ReLU took a seventh of
// a 1x1 convolution's time).
void finish_sums(const Problem& pr, const Group& group) {
  if (pr.activation == Activation::None) return;
  if (pr.panel_step == kLanes) {  // channels-last: a pixel's panels lie side by side
    for (int64_t pixel = 0; pixel < pr.pixels; ++pixel) {
      activate(pr.activation, pr.out + pr.pixel_at[pixel] + group.first_panel * kLanes, group.panels * kLanes);
    }
    return;
  }
  for (int64_t v = group.first_panel; v < group.first_panel + group.panels; ++v) {  // an image's pixels follow
    for (int64_t pixel = 0, end; pixel < pr.pixels; pixel = end) {
      for (end = pixel + 1; end < pr.pixels && pr.pixel_at[end] == pr.pixel_at[end - 1] + kLanes;) ++end;
      activate(pr.activation, pr.out + pr.pixel_at[pixel] + v * pr.panel_step, (end - pixel) * kLanes);
    }
  }
}

// Every pixel's sums for the group's panels, chunk by chunk. The weight of
// a thread's groups lies in one run, which ends at `end`; the tiles of a
// chunk prefetch as many lines as it has, kPrefetchBytes ahead of it.
template <int64_t Panels>
void group_sums(const Problem& pr, const Group& group, const float* end) {
  start_sums(pr, group);
  for (int64_t depth_begin = 0; depth_begin < pr.depth; depth_begin += kChunkDepth) {
    const Chunk run = chunk_of(pr, group, depth_begin);
    const float* ahead = run.first + kPrefetchBytes / int64_t{sizeof(float)};
    const int64_t lines = std::clamp<int64_t>((end - ahead) / kLanes, 0, run.steps * Panels);
    const int64_t tiles = (pr.pixels + kTilePixels - 1) / kTilePixels;
    const auto share = [&](int64_t tile) {
      const int64_t begin = lines * tile / tiles;
      return Prefetch{ahead + begin * kLanes, lines * (tile + 1) / tiles - begin};
    };
    int64_t pixel = 0;
    for (; pixel + kTilePixels <= pr.pixels; pixel += kTilePixels) {
      tile<kTilePixels, Panels>(pr, pixel, group.first_panel, depth_begin, run, share(pixel / kTilePixels));
    }
    short_tile<Panels>(pr.pixels - pixel, std::make_integer_sequence<int64_t, kTilePixels - 1>(), pr, pixel,
                       group.first_panel, depth_begin, run, share(pixel / kTilePixels));
  }
  finish_sums(pr, group);
}

// A thread's groups, one after another.
void run_groups(const Problem& pr, const std::vector<Group>& groups) {
  if (groups.empty()) return;
  const float* end = pr.w + (groups.back().first_panel + groups.back().panels) * pr.depth * kLanes;
  for (const Group& group : groups) {
    switch (group.panels) {
      case 3: group_sums<3>(pr, group, end); break;
      case 2: group_sums<2>(pr, group, end); break;
      default: group_sums<1>(pr, group, end); break;
    }
  }
}
static_assert(kTilePanels == 3, "run_groups's switch covers 1 to 3 panels");

// Where the 16 channels from `channel` (a multiple of 16) of pixel `pixel`
// (y * width + x) of `image` lie in a blocked tensor of `channels` channels
// and `pixels` pixels an image, in blocks of `block`: 16, or all of the
// channels (channels-last).
int64_t lanes_at(int64_t image, int64_t channel, int64_t pixel, int64_t channels, int64_t pixels, int64_t block) {
  return ((image * (channels / block) + channel / block) * pixels + pixel) * block + channel % block;
}

// The input pixels each output pixel reads, tap by tap, in the packed
// weight's depth order: [depth / 16][pixels][16], zeros where a tap falls
// in the padding.
void gather_input(const KernelContext& context, const Tensor& input, const Shape& input_dims, const Shape& out_dims,
                  const Shape& kernel, const ConvParams& p, float* to) {
  const int64_t height = input_dims[2], width = input_dims[3], out_height = out_dims[2], out_width = out_dims[3];
  const int64_t channels = input_dims[1], blocks = channels / kLanes, taps = kernel[0] * kernel[1];
  const int64_t pixels = out_dims[0] * out_height * out_width, block_size = input.size(4);
  const float* from = input.data_ptr<float>();
  context.pool->parallel_for(0, blocks * taps, 1, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t block = row / taps, i = row % taps / kernel[1], j = row % kernel[1];
      float* line = to + row * pixels * kLanes;
      for (int64_t image = 0; image < out_dims[0]; ++image) {
        for (int64_t oy = 0; oy < out_height; ++oy) {
          const int64_t y = oy * p.stride[0] - p.padding[0] + i * p.dilation[0];
          for (int64_t ox = 0; ox < out_width; ++ox, line += kLanes) {
            const int64_t x = ox * p.stride[1] - p.padding[1] + j * p.dilation[1];
            if (y < 0 || y >= height || x < 0 || x >= width) {
              std::fill_n(line, kLanes, 0.0f);
            } else {
              std::copy_n(from + lanes_at(image, block * kLanes, y * width + x, channels, height * width, block_size),
                          kLanes, line);
            }
          }
        }
      }
    }
  });
}

bool reads_in_place(const Tensor& input, const Shape& input_dims, const Shape& kernel, const ConvParams& p) {
  const auto all = [](const std::vector<int64_t>& values, int64_t value) {
    return std::ranges::all_of(values, [&](int64_t x) { return x == value; });
  };
  return input.size(4) == kLanes && input_dims[0] == 1 && all(kernel, 1) && all(p.stride, 1) && all(p.padding, 0) &&
         all(p.padding_end, 0);
}

}  // namespace

bool few_pixel_conv(const KernelContext& given_context, const Tensor& input, const Shape& input_dims,
                    const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
                    const Shape& out_dims, const ConvParams& p, Activation activation) {
  const int64_t pixels = out_dims[0] * out_dims[2] * out_dims[3];
  const bool whole_blocks = input_dims[1] % kLanes == 0 && out_dims[1] % kLanes == 0;
  const bool dense = p.spatial == 2 && p.groups == 1 && !p.transposed;
  if (cpu_capability() != CpuCapability::Avx512 || weight_precision(given_context) != Precision::Float32 ||
      !is_constant_input(given_context, 1) || !dense || !whole_blocks || input.dim() != 5 || out.dim() != 5 ||
      (input.size(4) != kLanes && input.size(4) != input_dims[1]) ||
      (out.size(4) != kLanes && out.size(4) != out_dims[1]) || pixels > kFewPixels || out_dims[2] < kMinOutputSide ||
      out_dims[3] < kMinOutputSide || weight.nbytes() < static_cast<size_t>(kMinWeightBytes)) {
    return false;
  }
  const KernelContext context = context_for_work(given_context, conv_flops(weight, out_dims));
  const Shape kernel{weight.size(2), weight.size(3)};
  const int64_t depth = weight.numel() / weight.size(0), out_pixels = out_dims[2] * out_dims[3];
  const float* a = input.data_ptr<float>();
  if (!reads_in_place(input, input_dims, kernel, p)) {
    float* gathered = static_cast<float*>(thread_scratch(depth * pixels * sizeof(float)));
    gather_input(context, input, input_dims, out_dims, kernel, p, gathered);
    a = gathered;
  }
  const int64_t out_channels = out_dims[1], out_block = out.size(4);
  const int64_t parts = std::min<int64_t>(context.pool->num_threads(), out_channels / kLanes);
  std::vector<int64_t> pixel_at(pixels);
  for (int64_t pixel = 0; pixel < pixels; ++pixel) {
    pixel_at[pixel] = lanes_at(pixel / out_pixels, 0, pixel % out_pixels, out_channels, out_pixels, out_block);
  }
  const Problem problem{a,
                        packed_weight(context, weight, parts),
                        out.data_ptr<float>(),
                        bias.defined() ? bias.data_ptr<float>() : nullptr,
                        residual.defined() ? residual.data_ptr<float>() : nullptr,
                        pixel_at.data(),
                        pixels,
                        depth,
                        lanes_at(0, kLanes, 0, out_channels, out_pixels, out_block),
                        activation};
  // Each thread streams the weight of its own panels.
  context.pool->parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const std::vector<Group> groups = groups_of(out_channels / kLanes, part, parts);
      dispatch_cpu([&] { run_groups(problem, groups); });
    }
  });
  return true;
}

}  // namespace opgraph::kernels
