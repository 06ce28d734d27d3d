// What the graph rewrites share.
#include "graph/passes/rewrite.h"

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
    std::vector<size_t> list_sizes;  // of each Tensor[] argument, as the schema expects them bound
    for (const NodeInput& input : node.inputs) {
      if (input.is_list) list_sizes.push_back(input.values.size());
    }
    return Attrs::bind(op->schema, node.named_attrs(), list_sizes);
  } catch (const Error&) {
    return std::nullopt;
  }
}

Activations::Activations(const PassContext& context)
    : context_(context),
      plain_{{{context.op("aten::relu"), "relu"},
              {context.op("aten::sigmoid"), "sigmoid"},
              {context.op("aten::tanh"), "tanh"},
              {context.op("aten::silu"), "silu"}}},
      hardtanh_(context.op("aten::hardtanh")),
      gelu_(context.op("aten::gelu")) {}

std::optional<std::string> Activations::of(const Node& node) const {
  const OpDef* op = context_.op_of(node);
  if (op == nullptr) return std::nullopt;
  for (const auto& [activation, value] : plain_) {
    if (op == activation) return value;
  }
  if (op != hardtanh_ && op != gelu_) return std::nullopt;
  const std::optional<Attrs> attrs = bound_attrs(node, context_.registry);
  if (!attrs) return std::nullopt;
  if (op == hardtanh_) {
    if (scalar_attr(*attrs, "min_val") != 0.0 || scalar_attr(*attrs, "max_val") != 6.0) return std::nullopt;
    return "relu6";
  }
  const std::string& approximate = attrs->get<std::string>("approximate");
  if (approximate == "none") return "gelu";
  if (approximate == "tanh") return "gelu_tanh";
  return std::nullopt;
}

const std::string* single_value(const NodeInput& input) {
  return !input.is_list && input.values.size() == 1 ? &input.values[0] : nullptr;
}

void set_attr(Node& node, std::string_view name, AttrValue value) {
  for (NodeAttr& attr : node.attrs) {
    if (attr.name == name) {
      attr = NodeAttr{std::string(name), std::move(value)};
      return;
    }
  }
  node.attrs.push_back({std::string(name), std::move(value)});
}

bool keeps_shape(const Node* node, const Registry& registry, const std::unordered_map<std::string, ValueInfo>& values) {
  if (node == nullptr || node->inputs.empty() || node->outputs.size() != 1) return false;
  const OpDef* op = registry.find(node->op_type);
  const std::string* input = single_value(node->inputs[0]);
  return op != nullptr && op->reshapes_input && input != nullptr && values.contains(*input) &&
         values.contains(node->outputs[0]) && values.at(*input).shape == values.at(node->outputs[0]).shape;
}

}  // namespace opgraph
