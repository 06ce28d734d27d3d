// What the graph rewrites share.
#include "graph/rewrite.h"

namespace opgraph {

std::unordered_map<std::string, int> count_uses(const Graph& graph) {
  std::unordered_map<std::string, int> uses;
  for (const Node& node : graph.nodes) {
    for (const NodeInput& input : node.inputs) {
      for (const std::string& value : input.values) ++uses[value];
    }
  }
  for (const std::string& output : graph.outputs) ++uses[output];
  return uses;
}

std::optional<Attrs> bound_attrs(const Node& node, const Registry& registry) {
  const OpDef* op = registry.find(node.op_type);
  if (op == nullptr) return std::nullopt;
  try {
    return Attrs::bind(op->schema, node.named_attrs());
  } catch (const Error&) {
    return std::nullopt;
  }
}

const std::string* single_value(const NodeInput& input) {
  return !input.is_list && input.values.size() == 1 ? &input.values[0] : nullptr;
}

}  // namespace opgraph
