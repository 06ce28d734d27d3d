// What the commands that run a model share: the flags that load it and feed
// it, and turning them into a Session and its inputs.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "opgraph/runtime/session.h"

namespace opgraph::cli {

Flag package_path_flag();  // --package-path DIR
Flag threads_flag();       // --threads N
Flag precision_flag();     // --precision f32|bf16
Flag weights_flag();       // --weights f32|int8|int4
Flag group_size_flag();    // --group-size G
Flag activations_flag();   // --activations A
Flag products_flag();      // --products E
Flag disable_pass_flag();  // --disable-pass NAME
Flag input_flag();         // --input NAME=FILE
Flag dim_flag();           // --dim SYMBOL=SIZE

// Options from --threads, --precision, --weights, --group-size,
// --package-path and --disable-pass.
SessionOptions session_options(const Args& args);

// The session's inputs, in graph order: each --input read from its .npy file;
// the others, when `random_fill` is set, random tensors of the declared dtype
// and shape, their symbolic dimensions sized by --dim or by an input file
// with the same symbol. Throws opgraph::Error naming the input or flag.
std::vector<Tensor> model_inputs(const Session& session, const Args& args, bool random_fill);

// For a graph with state, a new state object for runs on `inputs`: its
// symbols sized by --dim or by the inputs; an undefined State otherwise.
State model_state(const Session& session, const Args& args, const std::vector<Tensor>& inputs);

}  // namespace opgraph::cli
