// Input checks shared by the shape functions: each error names the argument
// and says what was expected and what was given.
#pragma once

#include <optional>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

inline void check_floating(const TensorMeta& meta, const char* argument) {
  OPGRAPH_CHECK(meta.dtype == DType::Float32 || meta.dtype == DType::Float64, argument,
                ": expected float32 or float64, got ", meta.str());
}

inline void check_same_meta(const TensorMeta& meta, const char* argument, const TensorMeta& like,
                            const char* like_argument) {
  OPGRAPH_CHECK(meta == like, argument, ": expected ", like.str(), " like ", like_argument, ", got ", meta.str());
}

// A `ScalarType? dtype` argument: only None or the input's own dtype, since
// the kernels compute in the input's type.
inline void check_dtype_argument(std::optional<DType> requested, const char* argument, DType input) {
  if (!requested) return;
  OPGRAPH_CHECK(*requested == input, argument, ": expected None or ", dtype_name(input),
                " (the input's dtype; conversion is not supported), got ", dtype_name(*requested));
}

}  // namespace opgraph::kernels
