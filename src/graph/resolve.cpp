// Checking a graph against the registry: every op known, every node's inputs,
// outputs and attributes matching its op's schema.
#include <algorithm>

#include "graph/resolved.h"

namespace opgraph {
namespace {

// Appends the flat inputs one tensor argument gives the call (see registry.h):
// one value, nullopt for an omitted Tensor?, or a Tensor[]'s values in order.
// Returns how many it appended.
size_t resolve_tensor_argument(const Node& node, const Argument& arg, const NodeInput& input, const ValueTable& values,
                               std::vector<std::optional<ValueId>>& flat) {
  const bool list_argument = arg.type.is_tensor_list();
  if (input.is_list) {
    OPGRAPH_CHECK(list_argument, node_label(node), ": argument '", arg.name, "' is a ", arg.type.str(),
                  ", got a list of ", input.values.size(), " values");
    for (const std::string& value : input.values) {
      OPGRAPH_CHECK(!value.empty() || arg.type.optional_elements, node_label(node), ": argument '", arg.name, "' is a ",
                    arg.type.str(), ", whose elements cannot be null");
      flat.push_back(value.empty() ? std::nullopt : values.find(value));
    }
    return input.values.size();
  }
  OPGRAPH_CHECK(!list_argument, node_label(node), ": argument '", arg.name, "' is a ", arg.type.str(),
                "; give it a list of values");
  if (input.is_none()) {
    OPGRAPH_CHECK(arg.type.optional, node_label(node), ": argument '", arg.name, "' is a required ", arg.type.str(),
                  ", got null");
    flat.push_back(std::nullopt);
  } else {
    flat.push_back(values.find(input.values[0]));  // build_value_table() has checked it exists
  }
  return 1;
}

// An optional tensor argument a node leaves out.
const NodeInput kOmitted = NodeInput::none();

std::string argument_names(const std::vector<Argument>& arguments, const std::vector<size_t>& positions) {
  std::string names;
  for (size_t i = 0; i < positions.size(); ++i) names += (i ? ", " : "") + arguments[positions[i]].name;
  return names;
}

ResolvedNode resolve_node(const Node& node, const OpDef& op, const ValueTable& values) {
  ResolvedNode resolved{&node, &op, {}, {}, {}};
  const std::vector<size_t>& tensor_arguments = op.tensor_arguments();
  // Optional tensor arguments after the node's inputs are None, so that a
  // graph written before an op's schema gained one still loads.
  const auto omitted_are_optional = [&] {
    for (size_t i = node.inputs.size(); i < tensor_arguments.size(); ++i) {
      const Argument& arg = op.schema.arguments[tensor_arguments[i]];
      if (!arg.type.optional || arg.type.is_tensor_list()) return false;
    }
    return node.inputs.size() <= tensor_arguments.size();
  };
  OPGRAPH_CHECK(node.inputs.size() == tensor_arguments.size() || omitted_are_optional(), node_label(node),
                ": expected ", tensor_arguments.size(), " tensor inputs (",
                argument_names(op.schema.arguments, tensor_arguments), "), got ", node.inputs.size());
  std::vector<size_t> list_sizes;  // the length of each Tensor[] argument, bound into the attributes
  for (size_t i = 0; i < tensor_arguments.size(); ++i) {
    const Argument& arg = op.schema.arguments[tensor_arguments[i]];
    const NodeInput& input = i < node.inputs.size() ? node.inputs[i] : kOmitted;
    const size_t count = resolve_tensor_argument(node, arg, input, values, resolved.inputs);
    if (arg.type.is_tensor_list()) list_sizes.push_back(count);
  }
  // A Tensor[] return has the length the node names; the shape function checks it.
  OPGRAPH_CHECK(op.returns_list() || node.outputs.size() == op.num_outputs(), node_label(node), ": the op returns ",
                op.num_outputs(), " tensors, the node names ", node.outputs.size(), " outputs");
  for (const std::string& output : node.outputs) resolved.outputs.push_back(*values.find(output));
  try {
    resolved.attrs = Attrs::bind(op.schema, node.named_attrs(), list_sizes);
    resolved.symbolic_attrs = node.has_symbolic_attrs();
  } catch (const Error&) {
    rethrow_in_node(node);
  }
  return resolved;
}

// Every node's op, or an error listing all the unknown ones at once. An ATen
// op opgraph has no kernel for is told apart from an op of a package: the
// first goes away when the model is extracted again (extraction decomposes
// every ATen op without a kernel), the second when its package is loaded.
std::vector<const OpDef*> find_ops(const Graph& graph, const Registry& registry) {
  std::vector<const OpDef*> ops;
  std::string missing_aten, missing_package;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    ops.push_back(registry.find(node.op_type));
    if (ops.back()) continue;
    std::string& missing = node.op_type.starts_with("aten::") ? missing_aten : missing_package;
    missing += detail::concat(missing.empty() ? "" : ", ", "[", i, "] ", node.op_type, " (node ", node.name, ")");
  }
  if (missing_aten.empty() && missing_package.empty()) return ops;
  std::string message = "missing ops: ";
  if (!missing_aten.empty()) {
    message += missing_aten +
               "; opgraph has no kernel for these ATen ops: extract the model again with opgraph.ir.extract_ir, "
               "which decomposes every ATen op without a kernel into ops that have one (decompose='auto')";
  }
  if (!missing_package.empty()) {
    std::string packages;
    for (const std::string& package : graph.packages) packages += (packages.empty() ? "" : ", ") + package;
    message += detail::concat(missing_aten.empty() ? "" : "; and ", missing_package,
                              "; load the op packages that provide them (the graph lists ",
                              packages.empty() ? std::string("no packages") : "packages: " + packages, ")");
  }
  throw Error(message);
}

}  // namespace

ResolvedGraph resolve(const Graph& graph, const Registry& registry) {
  OPGRAPH_CHECK(graph.states.empty(), "graph '", graph.name,
                "': resolve its states as inputs and outputs first (with_states_as_inputs)");
  ResolvedGraph resolved;
  resolved.values = build_value_table(graph);
  auto ids_of = [&](const auto& names, auto name_of) {
    std::vector<ValueId> ids;
    for (const auto& item : names) ids.push_back(*resolved.values.find(name_of(item)));
    return ids;
  };
  resolved.inputs = ids_of(graph.inputs, [](const ValueInfo& v) { return v.name; });
  resolved.constants = ids_of(graph.constants, [](const ValueInfo& v) { return v.name; });
  resolved.outputs = ids_of(graph.outputs, [](const std::string& name) { return name; });
  for (const ValueInfo& input : graph.inputs) {
    for (const Dim& dim : input.shape) {
      if (dim.is_symbolic() &&
          std::find(resolved.symbols.begin(), resolved.symbols.end(), dim.symbol) == resolved.symbols.end()) {
        resolved.symbols.push_back(dim.symbol);
      }
    }
  }
  const std::vector<const OpDef*> ops = find_ops(graph, registry);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    resolved.nodes.push_back(resolve_node(graph.nodes[i], *ops[i], resolved.values));
  }
  return resolved;
}

}  // namespace opgraph
