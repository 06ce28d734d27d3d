// aten::convolution, as a decomposed graph has it, becomes aten::conv2d where
// it is one (not transposed, a constant 4-D weight), for the passes after it
// that work on 2-D convolutions.
#include <optional>
#include <string>
#include <unordered_map>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {

void convolutions_as_conv2d(PassContext& context) {
  const OpDef* const convolution = context.op("aten::convolution");
  const OpDef* const conv2d = context.op("aten::conv2d");
  std::unordered_map<std::string, size_t> rank;  // of each constant
  for (const ValueInfo& constant : context.graph.constants) rank[constant.name] = constant.shape.size();
  for (Node& node : context.graph.nodes) {
    if (context.op_of(node) != convolution || node.inputs.size() != 3) continue;
    const std::string* weight = single_value(node.inputs[1]);
    if (weight == nullptr || !rank.contains(*weight) || rank[*weight] != 4) continue;
    const std::optional<Attrs> attrs = bound_attrs(node, context.registry);
    if (!attrs || attrs->get<bool>("transposed")) continue;
    node.op_type = conv2d->name();
    node.attrs.clear();
    for (const char* name : {"stride", "padding", "dilation", "groups"}) node.attrs.push_back({name, attrs->get(name)});
  }
}

}  // namespace opgraph
