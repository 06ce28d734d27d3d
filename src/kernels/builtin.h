// The built-in operator set.
#pragma once

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Registers every built-in op family (see cpu/register_all.cpp).
void register_builtin_ops(Registry& registry);

}  // namespace opgraph::kernels
