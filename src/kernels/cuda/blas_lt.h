// Row-major matrix products on cuBLASLt, which works column-major: a
// row-major X is a column-major X^T, so C = op(A) op(B) is computed as
// C^T = op(B)^T op(A)^T with the operands swapped.
#pragma once

#include <cuda_runtime.h>

#include "opgraph/core/tensor.h"

namespace opgraph::cuda {

struct MatmulOperand {
  const void* data;
  bool transposed;           // the buffer holds the operand's transpose, row-major
  int64_t batch_stride = 0;  // elements from one batch's matrix to the next (0: one matrix for every batch)
};

// `count` products in one call, each output `c_stride` elements after the last.
struct MatmulBatch {
  int64_t count = 1;
  int64_t c_stride = 0;
};

// c (m x n, row-major, contiguous) = op(a) (m x k) @ op(b) (k x n), plus
// `bias` (n values, one per column, of c's dtype) when not null, then ReLU
// if `relu`: the epilogues cuBLASLt fuses into the product, which callers ask
// for in float32 and bfloat16 only. float32, float64 or bfloat16 (summed in
// float32, rounded once).
// With `accumulate`, c += op(a) @ op(b) instead (no epilogue). With a
// `batch`, c holds batch.count outputs, the first at c.data().
void matmul(const Tensor& c, MatmulOperand a, MatmulOperand b, int64_t m, int64_t n, int64_t k, const void* bias,
            bool relu, cudaStream_t stream, bool accumulate = false, MatmulBatch batch = {});

}  // namespace opgraph::cuda
