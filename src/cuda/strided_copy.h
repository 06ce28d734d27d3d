// Copies between two same-shaped tensors on one CUDA device through their
// strides (what contiguous(), clone() and copy_() need on the device).
#pragma once

#include <cuda_runtime.h>

#include "opgraph/core/tensor.h"

namespace opgraph::cuda {

void strided_copy(const Tensor& dst, const Tensor& src, cudaStream_t stream);

}  // namespace opgraph::cuda
