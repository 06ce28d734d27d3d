#include "kernels/builtin.h"

namespace opgraph::kernels {

void register_shape_ops(Registry& registry);
void register_matmul_ops(Registry& registry);
void register_conv_ops(Registry& registry);
void register_pool_ops(Registry& registry);

// One line per op family. Kept explicit rather than left to static
// initializers, which a static link may drop without a word.
void register_builtin_ops(Registry& registry) {
  register_shape_ops(registry);
  register_matmul_ops(registry);
  register_conv_ops(registry);
  register_pool_ops(registry);
}

}  // namespace opgraph::kernels
