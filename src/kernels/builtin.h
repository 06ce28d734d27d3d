// The built-in operator set, as the one batch the process-wide registry
// receives (src/global_registry.cpp). The kernels hand their ops over; the
// registry knows nothing of them.
#pragma once

#include <vector>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Every built-in op family's ops, each with its sample tables (see
// cpu/register_all.cpp).
std::vector<OpDef> builtin_ops();

}  // namespace opgraph::kernels
