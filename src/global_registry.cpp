// The process-wide registry, built once from the built-in operator set: the
// one place that joins the two layers. The kernels hand over their ops as one
// batch; the registry depends on no kernel.
#include "kernels/builtin.h"

namespace opgraph {

Registry& Registry::global() {
  static Registry& registry = []() -> Registry& {
    static Registry instance;
    instance.add(kernels::builtin_ops());
    return instance;
  }();
  return registry;
}

}  // namespace opgraph
