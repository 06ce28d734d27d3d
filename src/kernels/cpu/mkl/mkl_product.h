// Products with a Session's float32 weight on MKL's packed-matrix GEMM
// (built where MKL is found, see cmake/mkl.cmake).
#pragma once

#include "kernels/cpu/util/product_operands.h"

namespace opgraph::kernels {

// Computes p and returns true where MKL takes it: a float32 product of two
// matrices whose weight is a Session's (p.constant_w) and whose operands MKL
// can read in place. Returns false, having done nothing, otherwise.
bool mkl_product(const KernelContext& context, const Product& p);

}  // namespace opgraph::kernels
