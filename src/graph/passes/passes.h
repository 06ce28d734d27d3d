// The graph passes any device could use, each in its own file; those that
// encode the CPU kernels' rules are in kernels/cpu/passes/. What each does,
// the order a Session makes them in and the devices they are for are in the
// pass list (runtime/pass_list.cpp).
#pragma once

#include "graph/passes/pass.h"

namespace opgraph {

void convolutions_as_conv2d(PassContext& context);
void fold_batch_norms(PassContext& context);
void drop_empty_cat_operands(PassContext& context);
void fuse_tanh_gelu(PassContext& context);
void fuse_rms_norms(PassContext& context);
void fuse_rotary_embeddings(PassContext& context);

}  // namespace opgraph
