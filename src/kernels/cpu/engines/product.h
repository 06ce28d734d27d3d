// Batched matrix products dst[b] = f(a[b] @ w[b] + bias[b]) over operands
// described by shape and strides, batch dimensions broadcast: what the matmul
// and gemm op families compute with.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/onednn/fused_activation.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/cpu/util/product_operands.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Views `t` as [rows, cols] matrices of the given shape and strides,
// prepending broadcast dimensions up to `rank`; `transposed` swaps the last
// two dimensions.
Operand operand(const Tensor& t, Shape shape, Strides strides, size_t rank, bool transposed = false);
Operand operand(const Tensor& t, size_t rank, bool transposed = false);

// `op` as a oneDNN memory descriptor of `type`. A dim of extent 1 gets the
// stride a dense layout would give it (oneDNN runs its reference kernels on
// other strides there).
dnnl::memory::desc describe(const Operand& op, dnnl::memory::data_type type);

// The words of a memory descriptor: a key for what is laid out by it.
PreparedWeights::Key layout_key(const dnnl::memory::desc& desc);

// Whether operand `w` of a product, input `input` of the op, is a Session's
// weight that one matrix serves for every batch (rank 2 or less).
bool is_constant_matrix(const KernelContext& context, size_t input, const Tensor& w);

// Computes the product into p.dst. float32 runs on oneDNN, or, where w is a
// Session's weight, on the engine measured the fastest for the product's
// shape (128 rows or more) or on the panels (a few rows), or, for a single
// row, on a kernel that streams w once; bfloat16 on oneDNN,
// summing in float32 and rounding once; float64, and any dtype when
// `reference` is set, on a plain loop in double.
void run_product(const KernelContext& context, const Product& p, DType dtype, bool reference);

// out[j] = sum_i m[i, j] over a contiguous [rows, cols] matrix m (a bias
// gradient), computed as a row of ones times m.
void column_sums(const KernelContext& context, const Tensor& m, int64_t rows, int64_t cols, const Tensor& out,
                 bool reference);

// Input checks shared by the shape functions of the product ops. a's dtype
// is float32 or float64, or bfloat16 where the op `takes_bfloat16`; b's is a's.
void check_dtypes(const TensorMeta& a, const char* a_name, const TensorMeta& b, const char* b_name,
                  bool takes_bfloat16 = false);
void check_rank(const TensorMeta& t, const char* name, int64_t rank);
void check_inner(const TensorMeta& a, int64_t k_a, const TensorMeta& b, int64_t k_b);

}  // namespace opgraph::kernels
