// The `bool[3] output_mask` of ATen's backward ops (native_layer_norm_backward,
// native_group_norm_backward, convolution_backward): which of the gradients
// of input, weight and bias the caller wants.
//
// ATen returns an undefined tensor for a gradient left out. The registry's
// outputs are all tensors, allocated from the shape function, so one left out
// is an empty tensor (shape [0]) of the op's dtype: nothing is computed for
// it, and a graph exported from PyTorch never reads it.
#pragma once

#include <array>
#include <span>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

inline std::array<bool, 3> output_mask(std::span<const int64_t> mask) {
  OPGRAPH_CHECK(mask.size() == 3, "output_mask: expected 3 values, got ", mask.size());
  return {mask[0] != 0, mask[1] != 0, mask[2] != 0};
}

// `meta` when the output is wanted, an empty tensor of its dtype when not.
inline TensorMeta unless_masked(bool wanted, TensorMeta meta) {
  if (!wanted) meta.shape = {0};
  return meta;
}

}  // namespace opgraph::kernels
