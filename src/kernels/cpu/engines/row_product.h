// One row times a matrix (batch-1 inference, a recurrent step): products
// that only have to stream the matrix from memory once.
#pragma once

#include "kernels/cpu/engines/product.h"

namespace opgraph::kernels {

// Computes a float32 product whose a and dst are one contiguous row, and
// returns false (computing nothing) where w's layout is not one it runs.
bool row_times_matrix(const KernelContext& context, const Product& p);

}  // namespace opgraph::kernels
