// The graph IR's small helpers and its structural check (what needs no
// registry): names, and where each value is defined and used.
#include <algorithm>
#include <unordered_map>

#include "graph/dim_expression.h"
#include "graph/resolved.h"

namespace opgraph {

std::string symbolic_shape_str(const SymbolicShape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + shape[i].str();
  return text + "]";
}

Shape static_shape(const SymbolicShape& shape) {
  Shape sizes;
  sizes.reserve(shape.size());
  for (const Dim& dim : shape) {
    OPGRAPH_CHECK(!dim.is_symbolic(), "shape ", symbolic_shape_str(shape), " has the symbolic dimension '", dim.symbol,
                  "' where a static shape is needed");
    sizes.push_back(dim.size);
  }
  return sizes;
}

std::string ValueInfo::type_str() const { return std::string(dtype_name(dtype)) + symbolic_shape_str(shape); }

NamedAttrs Node::named_attrs() const {
  NamedAttrs named;
  named.reserve(attrs.size());
  for (const NodeAttr& attr : attrs) named.emplace_back(attr.name, attr.value);
  return named;
}

NamedAttrs Node::named_attrs(const DimBindings& dims) const {
  NamedAttrs named = named_attrs();
  for (size_t i = 0; i < attrs.size(); ++i) {
    const NodeAttr& attr = attrs[i];
    if (!attr.is_symbolic()) continue;
    if (std::holds_alternative<int64_t>(attr.value)) {
      named[i].second = evaluate_dim_expression(attr.expressions[0], dims);
      continue;
    }
    std::vector<int64_t> sizes = std::get<std::vector<int64_t>>(attr.value);
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (!attr.expressions[k].empty()) sizes[k] = evaluate_dim_expression(attr.expressions[k], dims);
    }
    named[i].second = std::move(sizes);
  }
  return named;
}

bool Node::has_symbolic_attrs() const {
  return std::any_of(attrs.begin(), attrs.end(), [](const NodeAttr& attr) { return attr.is_symbolic(); });
}

std::optional<ValueId> ValueTable::find(const std::string& name) const {
  auto it = ids.find(name);
  if (it == ids.end()) return std::nullopt;
  return it->second;
}

std::string node_label(const Node& node) { return "node '" + node.name + "' (" + node.op_type + ")"; }

void rethrow_in_node(const Node& node) {
  try {
    throw;
  } catch (const Error& e) {
    std::string_view message = e.what();
    const std::string op_prefix = node.op_type + ": ";
    if (message.starts_with(op_prefix)) message.remove_prefix(op_prefix.size());
    throw Error(detail::concat(node_label(node), ": ", message));
  } catch (const std::exception& e) {
    throw Error(detail::concat(node_label(node), ": ", e.what()));
  }
}

namespace {

void check_declared_shape(const ValueInfo& value, const char* kind, bool symbols_allowed) {
  OPGRAPH_CHECK(!value.name.empty(), "a graph ", kind, " has an empty name");
  for (const Dim& dim : value.shape) {
    OPGRAPH_CHECK(dim.is_symbolic() || dim.size >= 0, kind, " '", value.name, "': negative dimension in ",
                  value.type_str());
    OPGRAPH_CHECK(symbols_allowed || !dim.is_symbolic(), kind, " '", value.name, "': dimension '", dim.symbol,
                  "' is symbolic; ", kind, "s have static shapes (", value.type_str(), ")");
  }
}

// Adds values as they are defined, so that a lookup tells whether a value
// is defined yet; remembers who defined each one for error messages.
class TableBuilder {
 public:
  void define(const std::string& name, std::string definer) {
    OPGRAPH_CHECK(!name.empty(), definer, " has an empty name");
    auto [it, added] = definers_.emplace(name, definer);
    OPGRAPH_CHECK(added, "value '", name, "' is defined twice: by ", it->second, " and by ", definer);
    table_.names.push_back(name);
  }

  bool defined(const std::string& name) const { return definers_.count(name) > 0; }

  ValueTable finish() && {
    for (ValueId id = 0; id < table_.names.size(); ++id) table_.ids.emplace(table_.names[id], id);
    return std::move(table_);
  }

 private:
  ValueTable table_;
  std::unordered_map<std::string, std::string> definers_;
};

}  // namespace

ValueTable build_value_table(const Graph& graph) {
  TableBuilder table;
  for (const ValueInfo& input : graph.inputs) {
    check_declared_shape(input, "input", /*symbols_allowed=*/true);
    table.define(input.name, "graph input '" + input.name + "'");
  }
  for (const ValueInfo& constant : graph.constants) {
    check_declared_shape(constant, "constant", /*symbols_allowed=*/false);
    table.define(constant.name, "constant '" + constant.name + "'");
  }
  // Where each node output is defined, to tell a value used too early (the
  // nodes are out of order, or form a cycle) from one never defined.
  std::unordered_map<std::string_view, size_t> defined_by_node;
  std::unordered_map<std::string_view, size_t> node_index;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    OPGRAPH_CHECK(!node.name.empty(), "node ", i, " (", node.op_type, ") has an empty name");
    OPGRAPH_CHECK(!node.op_type.empty(), "node '", node.name, "' has an empty op_type");
    auto [it, added] = node_index.emplace(node.name, i);
    OPGRAPH_CHECK(added, "node name '", node.name, "' is used by nodes ", it->second, " and ", i);
    for (const std::string& output : node.outputs) defined_by_node.emplace(output, i);
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    for (size_t slot = 0; slot < node.inputs.size(); ++slot) {
      for (const std::string& value : node.inputs[slot].values) {
        if (value.empty() || table.defined(value)) continue;  // empty: a None element of a list
        auto later = defined_by_node.find(value);
        if (later == defined_by_node.end()) {
          throw Error(detail::concat(node_label(node), ": input ", slot, " uses value '", value,
                                     "', which no graph input, constant or node defines"));
        }
        const std::string definer =
            later->second == i ? std::string("this node") : "node '" + graph.nodes[later->second].name + "'";
        throw Error(detail::concat(node_label(node), ": input ", slot, " uses value '", value, "' before ", definer,
                                   " defines it; nodes must be in topological order and form no cycle"));
      }
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      table.define(node.outputs[k], "output " + std::to_string(k) + " of " + node_label(node));
    }
  }
  OPGRAPH_CHECK(!graph.outputs.empty(), "the graph has no outputs");
  for (const std::string& output : graph.outputs) {
    OPGRAPH_CHECK(table.defined(output), "graph output '", output, "' is not a graph input, constant or node output");
  }
  return std::move(table).finish();
}

Graph with_states_as_inputs(const Graph& graph) {
  Graph folded = graph;
  folded.states.clear();
  std::unordered_map<std::string_view, const ValueInfo*> constants;
  for (const ValueInfo& constant : graph.constants) constants.emplace(constant.name, &constant);
  for (const StateInfo& state : graph.states) {
    const ValueInfo& value = state.value;
    OPGRAPH_CHECK(!value.name.empty(), "a graph state has an empty name");
    check_declared_shape(value, "state", /*symbols_allowed=*/true);
    if (!state.initial.empty()) {
      auto it = constants.find(state.initial);
      OPGRAPH_CHECK(it != constants.end(), "state '", value.name, "': its initial value '", state.initial,
                    "' is not a constant of the graph");
      OPGRAPH_CHECK(it->second->dtype == value.dtype && it->second->shape == value.shape, "state '", value.name,
                    "': expected an initial value of type ", value.type_str(), ", constant '", state.initial, "' is ",
                    it->second->type_str());
    }
    OPGRAPH_CHECK(state.update != value.name, "state '", value.name,
                  "': its update is the state itself; a state that never changes has no update");
    folded.inputs.push_back(value);
    if (!state.update.empty()) folded.outputs.push_back(state.update);
  }
  return folded;
}

void verify_structure(const Graph& graph) {
  build_value_table(graph.states.empty() ? graph : with_states_as_inputs(graph));
}

}  // namespace opgraph
