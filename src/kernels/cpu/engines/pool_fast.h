// The CPU's fast pooling kernels (engines/pool_fast.cpp), which the pooling
// ops run where they apply, and the split of planes over threads.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/shape/pool.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels::pool {

// Runs body(first, last) over the planes [0, planes), in chunks of enough
// planes to cover ~64K input elements.
template <typename Body>
void parallel_planes(const KernelContext& context, int64_t planes, const Pooling& p, const Body& body) {
  context.pool->parallel_for(0, planes, std::max<int64_t>(1, 65536 / std::max<int64_t>(p.plane_size(), 1)), body);
}

// ---- Fast kernels

// Forward max or average pooling over 2 or 3 dims (and adaptive pooling with
// regular windows, which is average pooling). `positions`, where given (2-D
// max pooling only), receives each max's position in its plane, as ATen's
// max_pool2d_with_indices.
template <Reduce R>
void run_pool_fast(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p,
                   int64_t* positions = nullptr);

// 2-D only.
bool is_2x2_stride_2(const Pooling& p);
void run_max_pool_2x2(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p);
void run_max_pool_2x2_backward(const KernelContext& context, const Tensor& input, const Tensor& grad, const Tensor& out,
                               const Pooling& p);
// Each plane's average, for any number of spatial dims.
void run_global_average(const KernelContext& context, const Tensor& input, const Tensor& out, const Pooling& p);

}  // namespace opgraph::kernels::pool
