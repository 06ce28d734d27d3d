// The process-wide registry, built once from the built-in operator set, and
// joined by a device backend's kernels when the backend opens: the one place
// that joins the two layers. The kernels hand over their ops, and a backend
// library its kernels, as batches; the registry depends on no kernel, and the
// core that opens the backend on no registry.
#include <dlfcn.h>

#include "kernels/builtin.h"
#include "opgraph/core/device_backend.h"

namespace opgraph {
namespace {

void add_backend_kernels(DeviceType type, void* library) {
  auto kernels_of = reinterpret_cast<kernels::BackendKernelsFn>(dlsym(library, kernels::kBackendKernelsSymbol));
  OPGRAPH_CHECK(kernels_of != nullptr, "the ", device_type_name(type), " backend exports no ",
                kernels::kBackendKernelsSymbol);
  std::vector<KernelDef> kernels;
  kernels_of(&kernels);
  Registry::global().add_kernels(std::move(kernels));
}

// Set as the library loads, before anything can open a backend.
[[maybe_unused]] const bool backend_kernels_hooked = (set_backend_library_hook(add_backend_kernels), true);

}  // namespace

Registry& Registry::global() {
  static Registry& registry = []() -> Registry& {
    static Registry instance;
    instance.add(kernels::builtin_ops());
    return instance;
  }();
  return registry;
}

}  // namespace opgraph
