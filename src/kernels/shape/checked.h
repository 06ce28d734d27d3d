// int64 arithmetic on sizes that come from attributes, and so from graph
// files: an overflow is an opgraph::Error naming the argument, never
// undefined behavior.
#pragma once

#include <cstdint>

#include "opgraph/core/error.h"

namespace opgraph::kernels {

inline int64_t checked_add(int64_t a, int64_t b, const char* argument) {
  int64_t sum = 0;
  OPGRAPH_CHECK(!__builtin_add_overflow(a, b, &sum), argument, ": ", a, " + ", b, " overflows int64");
  return sum;
}

inline int64_t checked_mul(int64_t a, int64_t b, const char* argument) {
  int64_t product = 0;
  OPGRAPH_CHECK(!__builtin_mul_overflow(a, b, &product), argument, ": ", a, " * ", b, " overflows int64");
  return product;
}

}  // namespace opgraph::kernels
