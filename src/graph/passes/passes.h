// The graph passes, each in its own file. What each does, the order a
// Session makes them in and the devices they are for are in the pass list
// (runtime/passes.cpp).
#pragma once

#include "graph/passes/pass.h"

namespace opgraph {

void convolutions_as_conv2d(PassContext& context);
void convolutions_1d_as_2d(PassContext& context);
void fold_batch_norms(PassContext& context);
void drop_empty_cat_operands(PassContext& context);
void fuse_tanh_gelu(PassContext& context);
void fuse_rms_norms(PassContext& context);
void fuse_rotary_embeddings(PassContext& context);
void fuse_activations(PassContext& context);
void use_heads_second_attention(PassContext& context);
void use_nchwc_layout(PassContext& context);
void fuse_product_epilogues(PassContext& context);

}  // namespace opgraph
