// The channel-blocked activations a Session keeps between the convolutions
// of a CNN (graph/nchwc_layout.cpp), as the ops on them (conv_nchwc.cpp,
// pool_nchwc.cpp) read and write them.
//
// A blocked tensor holds channel c of pixel (h, w) at [n, c / B, h, w, c % B],
// B being 16 (an AVX-512 vector of floats) or 8 (AVX2's): oneDNN's nChw16c and
// nChw8c, which its direct kernels read and write with whole-vector loads;
// or B = C, one block of all the channels: channels-last (nhwc), which its
// brgemm convolutions take. Channels past C fill the last block with zeros,
// which the ops keep.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "opgraph/core/tensor.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Whether `block` is one of the blocks above for a tensor of `channels` channels.
inline bool is_block(int64_t block, int64_t channels) { return block == 8 || block == 16 || block == channels; }

inline int64_t blocks_of(int64_t channels, int64_t block) { return (channels + block - 1) / block; }

// The oneDNN layout of a tensor of `channels` channels in blocks of `block`.
dnnl::memory::format_tag blocked_tag(int64_t block, int64_t channels);

// The plain dims [N, C, H, W] of a blocked tensor of `channels` channels;
// checks its blocks (`name` names it in the error).
Shape plain_dims(const TensorMeta& blocked, int64_t channels, int64_t block, const char* name);

// The blocked dims [N, ceil(C / B), H, W, B] of plain ones.
inline Shape blocked_dims(const Shape& plain, int64_t block) {
  return {plain[0], blocks_of(plain[1], block), plain[2], plain[3], block};
}

// Copies between a plain [N, C, H, W] float32 buffer and a blocked one,
// writing zeros to the blocked one's padding channels.
void convert_blocks(const KernelContext& context, const Shape& plain, int64_t block, const float* from, float* to,
                    bool to_blocked);

}  // namespace opgraph::kernels
