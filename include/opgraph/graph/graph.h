// The graph IR: nodes that call registered ops, over named values.
//
// A graph has inputs (fed at each run), constants (weights, stored with the
// graph), nodes in topological order, and outputs (names of values). Every
// value is defined exactly once: as a graph input, a constant or a node
// output. The Python front ends build a Graph through the bindings; JSON is
// the form of graph files and the command line (src/graph/json.cpp):
//
//   {"name": "model",
//    "inputs":    [{"name": "x", "dtype": "float32", "shape": ["N", 3, 8, 8]}],
//    "outputs":   [{"name": "y"}],
//    "constants": [{"name": "w0", "dtype": "float32", "shape": [16, 3, 3, 3]}],
//    "nodes": [{"name": "conv_0", "op_type": "aten::conv2d", "inputs": ["x", "w0", null],
//               "outputs": ["y"], "attrs": {"groups": {"type": "int", "value": 1}}}],
//    "packages": ["mylib"]}
//
// A graph may also declare state: values that persist from one run to the
// next (a KV cache, a recurrent carry, running statistics), which nodes read
// by name as they read inputs; see StateInfo.
//
// A dimension is an int or a symbol ("N"): a size fixed for one run, the same
// wherever the symbol appears.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "opgraph/core/tensor.h"
#include "opgraph/registry/registry.h"

namespace opgraph {

// One dimension of a declared shape: a size, or a symbol bound per run.
struct Dim {
  int64_t size = 0;    // meaningful when symbol is empty
  std::string symbol;  // "N"

  // Implicit, so that shapes read as they are written: {"N", 3, 8, 8}.
  Dim(int64_t size = 0) : size(size) {}
  Dim(std::string symbol) : symbol(std::move(symbol)) {}
  template <size_t K>
  Dim(const char (&symbol)[K]) : symbol(symbol) {}

  bool is_symbolic() const { return !symbol.empty(); }
  std::string str() const { return is_symbolic() ? symbol : std::to_string(size); }
  bool operator==(const Dim&) const = default;
};
using SymbolicShape = std::vector<Dim>;

std::string symbolic_shape_str(const SymbolicShape& shape);  // "[N, 3, 8, 8]"
// The sizes of a shape without symbols; throws opgraph::Error for a symbol.
Shape static_shape(const SymbolicShape& shape);

// A named tensor with a type: a graph input or constant as declared, or any
// value as shape inference finds it.
struct ValueInfo {
  std::string name;
  DType dtype = DType::Float32;
  SymbolicShape shape;

  std::string type_str() const;  // "float32[N, 3, 8, 8]"
  bool operator==(const ValueInfo&) const = default;
};

// Sizes for the symbolic dimensions of one run: {"N": 17}.
using DimBindings = std::unordered_map<std::string, int64_t>;

// What a node passes for one tensor argument of its op's schema: a value, a
// list of values (a Tensor[] argument), or nothing (an omitted Tensor?).
struct NodeInput {
  std::vector<std::string> values;
  bool is_list = false;

  static NodeInput none() { return {}; }
  static NodeInput value(std::string name) { return {{std::move(name)}, false}; }
  static NodeInput list(std::vector<std::string> names) { return {std::move(names), true}; }
  bool is_none() const { return !is_list && values.empty(); }
  bool operator==(const NodeInput&) const = default;
};

// An attribute as a node stores it. AttrValue keeps bool[] values as ints
// (as the registry binds them), so `bool_list` remembers how to write them.
// A size computed from the graph's symbolic dimensions (view's `size` with a
// dynamic batch) keeps its expressions ("4*s0", see src/graph/dim_expression.h):
// one for an int, one per item for an int[] ("" for a fixed item), evaluated
// for each run's sizes; `value` then holds 0 where an expression stands.
struct NodeAttr {
  std::string name;
  AttrValue value;
  bool bool_list = false;
  std::vector<std::string> expressions = {};
  bool is_symbolic() const { return !expressions.empty(); }
  bool operator==(const NodeAttr&) const = default;
};

struct Node {
  std::string name;
  std::string op_type;  // qualified op name: "aten::conv2d"
  // One per tensor argument of the schema, in order; trailing optional ones
  // may be left out (None).
  std::vector<NodeInput> inputs;
  std::vector<std::string> outputs;
  std::vector<NodeAttr> attrs;
  // Where the node comes from in the model's source ("model.py:42 x = self.fc(x)"),
  // as extraction found it; empty when unknown. Only read by people.
  std::string source = {};

  NamedAttrs named_attrs() const;  // views into attrs, for Attrs::bind
  // The attributes for one run's symbol sizes: symbolic ones evaluated.
  NamedAttrs named_attrs(const DimBindings& dims) const;
  bool has_symbolic_attrs() const;
  bool operator==(const Node&) const = default;
};

// A value that persists between runs. A run reads it as the previous run
// left it (at first `initial`'s value, or zeros); when the run succeeds the
// state holds `update`'s value, the way a mutated buffer of torch.export's
// ExportedProgram or OpenVINO's ReadValue/Assign pair carries a KV cache.
// The values live in a Session's state objects (Session::new_state), one per
// sequence or stream, not in the graph or the Session.
struct StateInfo {
  ValueInfo value;           // its name, as nodes read it; symbols are sized per state object
  std::string initial = {};  // a constant of the same type; empty: zeros
  std::string update = {};   // the value the state holds after a run; empty: the state never changes
  bool operator==(const StateInfo&) const = default;
};

struct Graph {
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<std::string> outputs;
  std::vector<ValueInfo> constants;   // static shapes; the data travels beside the graph
  std::vector<Node> nodes;            // topological order
  std::vector<std::string> packages;  // op packages the nodes need (names or paths)
  std::vector<StateInfo> states = {};

  // Throws opgraph::Error naming the field for JSON that is malformed or does
  // not follow the schema above.
  static Graph from_json(std::string_view json);
  // `indent` < 0 writes one line.
  std::string to_json(int indent = -1) const;
  bool operator==(const Graph&) const = default;
};

// Checks what needs no registry: names are non-empty and unique, every value
// is defined exactly once and before it is used (so nodes are in topological
// order and there are no cycles), outputs exist, constants have static shapes,
// and each state's initial value is a constant of its type and its update a
// value of the graph.
void verify_structure(const Graph& graph);

// The graph as the verifier, shape inference and the runtime see it: each
// state a graph input after the declared ones, each state's update a graph
// output after the declared ones (so that nothing that updates a state looks
// unused). Checks what verify_structure() checks of the states.
Graph with_states_as_inputs(const Graph& graph);

// verify_structure(), then against the registry: every op is known (all the
// missing ones are reported at once), every node has one input per tensor
// argument and one output per return, attributes bind to the schema, and the
// shape functions accept the shapes flowing through the graph. Symbolic
// dimensions are given trial sizes for that last check (see infer_shapes).
// Each error names the node, its op and the argument.
void verify(const Graph& graph, const Registry& registry = Registry::global());

// The dtype and shape of every value (inputs, constants, node outputs), by
// name. A dimension that follows a symbol through the shape functions keeps
// the symbol; one that depends on symbols some other way (N * 16 after a
// flatten) is reported as the symbol "?".
std::unordered_map<std::string, ValueInfo> infer_shapes(const Graph& graph,
                                                        const Registry& registry = Registry::global());

// The concrete type of every value for one run's dimension sizes.
std::unordered_map<std::string, TensorMeta> infer_shapes(const Graph& graph, const DimBindings& dims,
                                                         const Registry& registry = Registry::global());

}  // namespace opgraph
