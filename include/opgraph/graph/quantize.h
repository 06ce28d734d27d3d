// Quantizing a graph's linear layers ahead of time (`opgraph quantize`,
// opgraph.quantize): each product with a constant float32 weight becomes an
// opgraph::quantized_linear whose weight is stored as integer levels and
// float32 scales, a quarter (int8) or an eighth (int4) of the bytes, and
// whose kernel unpacks them in registers. A Session quantizing at load
// (SessionOptions::weights) computes the same levels.
#pragma once

#include <string>
#include <vector>

#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"
#include "opgraph/registry/registry.h"

namespace opgraph {

struct QuantizeOptions {
  // bits 8 or 4; group_size 0 takes all of a layer's inputs as one group
  // (default_group_size).
  WeightQuantization weights;
  // Glob patterns (fnmatch): a layer whose node or weight name matches one
  // is left as it is.
  std::vector<std::string> exclude;
  // Whether each aten::embedding by a constant table becomes an
  // opgraph::quantized_embedding too, its rows quantized as a linear layer's
  // (an embedding tied to the LM head then shares the head's levels).
  bool embeddings = false;
};

struct QuantizeReport {
  struct Layer {
    std::string node, weight;
    int64_t inputs = 0, outputs = 0;
  };
  std::vector<Layer> quantized;
  // Layers with a constant weight left as they are, and why.
  std::vector<std::pair<std::string, std::string>> kept;
};

// Rewrites aten::linear, and aten::matmul, aten::mm and aten::addmm (alpha
// and beta 1, a bias vector) by a constant float32 matrix, and with
// `embeddings` aten::embedding, in place; a weight several layers share is
// quantized once. Throws opgraph::Error
// naming the layer where the group size does not divide its inputs, or an
// int4 layer has an odd count of them.
QuantizeReport quantize_weights(Graph& graph, Weights& weights, const QuantizeOptions& options,
                                const Registry& registry = Registry::global());

}  // namespace opgraph
