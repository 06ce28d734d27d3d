// The built-in operator set, as the one batch the process-wide registry
// receives (src/global_registry.cpp), and a device backend's kernels for it.
// The kernels hand their ops over; the registry knows nothing of them.
#pragma once

#include <vector>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Every built-in op family's ops, each with its sample tables (see
// cpu/register_all.cpp).
std::vector<OpDef> builtin_ops();

// A device backend's built-in kernels for those ops, which its library
// exports under kBackendKernelsSymbol with C linkage (cuda/register_all.cu),
// so that the registry takes them as one batch when the backend opens.
using BackendKernelsFn = void (*)(std::vector<KernelDef>* kernels);
inline constexpr const char* kBackendKernelsSymbol = "opgraph_backend_kernels";

}  // namespace opgraph::kernels
