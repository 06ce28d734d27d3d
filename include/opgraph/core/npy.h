// Reading and writing NumPy .npy files (format versions 1.0 to 3.0): one
// little-endian, C-order array of a dtype opgraph holds. Anything else is an
// opgraph::Error that names the file, never a guess.
#pragma once

#include <string>

#include "opgraph/core/tensor.h"

namespace opgraph {

// A new contiguous cpu tensor holding the file's array.
Tensor read_npy(const std::string& path);

// Writes `tensor` (any strides) in format 1.0, or 2.0 for a header too long
// for it. bfloat16 has no .npy dtype and is refused.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace opgraph
