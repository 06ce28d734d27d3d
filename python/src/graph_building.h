// Building an opgraph.Graph from Python: the checks and conversions behind
// Graph.add_input, add_constant, add_node and add_output. Attributes go
// through attr_from_python and Attrs::bind, the encoder every call of an op
// uses, so a graph built here holds exactly what a call would bind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "convert.h"

namespace opgraph::python {

// A ValueInfo from a name, a dtype (a name, NumPy or PyTorch dtype) and a
// shape (sizes, and names for symbolic dimensions); errors start with `where`.
ValueInfo value_info_from_python(const std::string& where, std::string name, nb::handle dtype, nb::handle shape);

// Appends a graph input or constant (a constant's shape must be static).
void add_graph_input(Graph& graph, ValueInfo info);
void add_graph_constant(Graph& graph, ValueInfo info);
// Its initial constant and its update are checked by verify(), once the
// nodes that compute the update are there.
void add_graph_state(Graph& graph, StateInfo state);
// Appends an output: a value the graph defines.
void add_graph_output(Graph& graph, const std::string& name);

struct NodeSpec {
  std::string op;
  nb::handle inputs;  // one entry per tensor argument: a value name, None, or a list of them
  std::optional<std::vector<std::string>> outputs;
  std::optional<std::string> name;
  std::string source;
};

// Appends a call of `spec.op` with `attrs` (Python values by argument name)
// and returns its output names. A registered op is checked against its
// schema (tensor inputs, attributes, number of outputs) and its attributes
// are bound, defaults filled in; an op the registry does not know yet (its
// package is loaded when the graph runs) is kept as given and checked by
// verify() and Session. Errors name the node, its op and the argument.
std::vector<std::string> add_graph_node(Graph& graph, const NodeSpec& spec, const nb::dict& attrs);

// An attribute as Python sees it: bool[] as bools, a symbolic size as its
// expression string ("(s0)*(4)").
nb::object node_attr_to_python(const NodeAttr& attr);

}  // namespace opgraph::python
