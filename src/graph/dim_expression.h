// Sizes computed from symbolic dimensions ("s0", "4*s0", "(s0 + 1)//2"): an
// attribute such as view's `size` whose value is only known once a run binds
// the graph's symbols. The grammar is integers, symbols, + - * // % and
// parentheses, with Python's floor division and modulo, which is how PyTorch
// computes sizes.
#pragma once

#include <cstdint>
#include <string_view>

#include "opgraph/graph/graph.h"

namespace opgraph {

// The value of `expression` for the symbol sizes `dims`; throws opgraph::Error
// naming the expression for a malformed one, an unknown symbol or a division by zero.
int64_t evaluate_dim_expression(std::string_view expression, const DimBindings& dims);

}  // namespace opgraph
