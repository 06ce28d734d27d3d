// What a product does to its rows of dst around its sums (Product's bias,
// residual, activation and multiplier), for the engines that sum first and
// finish the rows themselves: opgraph's panels, and the int8 product's
// per-row scales, which oneDNN's fused post-ops cannot take.
#pragma once

#include <cstdint>

#include "kernels/cpu/engines/product.h"

namespace opgraph::kernels {

// The element stride between an operand's rows (0 where it has one row, broadcast).
int64_t rows_apart(const Operand& o);

// Rows [0, m) of dst, columns [j0, j1), before their sums: zero, or the
// residual they add to, plus the bias.
void start_rows(const Product& p, int64_t m, int64_t j0, int64_t j1);

// Rows [0, m) of dst, columns [j0, j1), plus the bias (start_rows' second half,
// for an engine that writes its sums over dst itself).
void add_bias(const Product& p, int64_t m, int64_t j0, int64_t j1);

// Rows [0, m) of dst, columns [j0, j1), after their sums: the activation, then the multiplier.
void finish_rows(const Product& p, int64_t m, int64_t j0, int64_t j1);

}  // namespace opgraph::kernels
