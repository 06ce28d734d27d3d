// The graph passes that encode the CPU kernels' rules (which layouts their
// convolutions run fastest on, which epilogues their products apply, the
// operand layout their attention reads), beside those kernels. What each
// does, and where it runs in the pass list, is in runtime/pass_list.cpp.
#pragma once

#include "graph/passes/pass.h"

namespace opgraph {

void convolutions_1d_as_2d(PassContext& context);
void fuse_quantized_linears(PassContext& context);
void fuse_activations(PassContext& context);
void use_heads_second_attention(PassContext& context);
void use_nchwc_layout(PassContext& context);
void fuse_product_epilogues(PassContext& context);

}  // namespace opgraph
