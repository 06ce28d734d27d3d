// Rewrites that make a graph cheaper to run, as ONNX Runtime's default
// optimizations do when it loads a model. Each leaves every output the same
// up to float rounding. A Session makes them at load (SessionOptions::optimize).
#pragma once

#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"

namespace opgraph {

// - An inference batch norm after a 2-D convolution, with constant weight,
//   bias and statistics, is folded into the convolution's weight and bias
//   (new constants; the constants no node reads any more are dropped).
// - relu, gelu (erf form), sigmoid or tanh after a 2-D convolution or a
//   linear layer is applied by that op as it writes its output
//   (opgraph::conv2d, opgraph::linear), saving a pass over the tensor.
// Each only where the first op's output feeds nothing else and is not a
// graph output. The fused node keeps the first node's name. `registry`
// binds the nodes' attributes, defaults filled in.
void optimize(Graph& graph, Weights& weights, const Registry& registry = Registry::global());

}  // namespace opgraph
