// A graph checked against the registry, with names turned into indices: the
// form the verifier, shape inference and the runtime work on.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "opgraph/graph/graph.h"

namespace opgraph {

using ValueId = size_t;

// Every value of a graph, numbered: graph inputs first, then constants, then
// node outputs in node order.
struct ValueTable {
  std::vector<std::string> names;
  std::unordered_map<std::string, ValueId> ids;

  std::optional<ValueId> find(const std::string& name) const;
  size_t size() const { return names.size(); }
};

struct ResolvedNode {
  const Node* node;  // in the graph the ResolvedGraph was made from
  const OpDef* op;   // stays valid: ops are never removed from a registry
  Attrs attrs;
  // The call's flat inputs (see registry.h): one per Tensor or Tensor?
  // argument (nullopt when omitted), and a Tensor[] argument's values one
  // after another, their count bound into attrs.list_sizes().
  std::vector<std::optional<ValueId>> inputs;
  std::vector<ValueId> outputs;
  // Attributes computed from the symbols (Node::has_symbolic_attrs): `attrs`
  // then holds placeholders, and each run's sizes bind them anew.
  bool symbolic_attrs = false;
};

struct ResolvedGraph {
  ValueTable values;
  std::vector<ValueId> inputs;     // graph.inputs, in order
  std::vector<ValueId> constants;  // graph.constants, in order
  std::vector<ValueId> outputs;    // graph.outputs, in order
  std::vector<ResolvedNode> nodes;
  std::vector<std::string> symbols;  // symbolic dimensions of the inputs, in order of appearance

  bool defined_by_node(ValueId id) const { return id >= inputs.size() + constants.size(); }
  bool is_constant(ValueId id) const { return id >= inputs.size() && !defined_by_node(id); }
};

// "node 'conv_0' (aten::conv2d)"
std::string node_label(const Node& node);
// Re-throws the exception being handled as an opgraph::Error that starts
// with the node's label (in place of the op's name the registry puts there).
[[noreturn]] void rethrow_in_node(const Node& node);

// The value table, after the checks of verify_structure().
ValueTable build_value_table(const Graph& graph);

// verify() without the shape check: structure, ops, arity, attributes.
ResolvedGraph resolve(const Graph& graph, const Registry& registry);

// The type of every value (by ValueId) for one run's symbol sizes. Errors
// from shape functions come back naming the node and op. `run_attrs`, when
// given, receives by node index the attributes bound for these sizes of the
// nodes with symbolic ones (and empty Attrs for the others).
std::vector<TensorMeta> infer_metas(const Graph& graph, const ResolvedGraph& resolved, const DimBindings& dims,
                                    std::vector<Attrs>* run_attrs = nullptr);

// Symbolic types of every value (by ValueId): see opgraph::infer_shapes.
std::vector<ValueInfo> infer_symbolic(const Graph& graph, const ResolvedGraph& resolved);

// Checks that each of a graph's states is updated to a value of its own type,
// by the types (by ValueId in `values`) inferred for with_states_as_inputs(graph).
void check_state_updates(std::span<const StateInfo> states, const std::vector<ValueInfo>& types,
                         const ValueTable& values);

}  // namespace opgraph
