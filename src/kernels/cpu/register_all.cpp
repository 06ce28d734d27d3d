#include "kernels/builtin.h"

namespace opgraph::kernels {

// One line per op family. Kept explicit rather than left to static
// initializers, which a static link may drop without a word.
void register_builtin_ops(Registry& registry) {
  (void)registry;
}

}  // namespace opgraph::kernels
