// Shape inference through a graph with the ops' shape functions, for given
// sizes of the symbolic dimensions or for the symbols themselves.
#include <optional>

#include "graph/resolved.h"

namespace opgraph {
namespace {

Shape concrete_shape(const ValueInfo& value, const DimBindings& dims) {
  Shape shape;
  shape.reserve(value.shape.size());
  for (const Dim& dim : value.shape) {
    if (!dim.is_symbolic()) {
      shape.push_back(dim.size);
      continue;
    }
    auto it = dims.find(dim.symbol);
    OPGRAPH_CHECK(it != dims.end(), "'", value.name, "' (", value.type_str(), "): no size given for dimension '",
                  dim.symbol, "'");
    shape.push_back(it->second);
  }
  return shape;
}

// Every value must fit in memory: a larger one can only come from a corrupt
// or hostile graph, and would overflow the memory plan's arithmetic.
template <typename Label>
void check_fits_in_memory(const TensorMeta& meta, Label&& label) {
  try {
    meta.nbytes();
  } catch (const Error& e) {
    throw Error(detail::concat(label(), ": ", e.what()));
  }
}

// Trial sizes for the symbols: distinct per symbol and per trial, and large,
// round numbers, so that shape functions accept them as they would the real
// sizes (spatial extents above any kernel, divisible by small factors).
DimBindings trial_sizes(const std::vector<std::string>& symbols, int64_t trial) {
  DimBindings dims;
  for (size_t i = 0; i < symbols.size(); ++i) dims[symbols[i]] = 64 * (2 * static_cast<int64_t>(i) + 3 + trial);
  return dims;
}

std::string bindings_str(const std::vector<std::string>& symbols, const DimBindings& dims) {
  std::string text;
  for (const std::string& symbol : symbols) {
    text += (text.empty() ? "" : ", ") + symbol + "=" + std::to_string(dims.at(symbol));
  }
  return text;
}

std::vector<TensorMeta> infer_trial(const Graph& graph, const ResolvedGraph& resolved, const DimBindings& dims) {
  try {
    return infer_metas(graph, resolved, dims);
  } catch (const Error& e) {
    if (resolved.symbols.empty()) throw;
    throw Error(detail::concat(e.what(), " (shapes inferred with trial sizes ", bindings_str(resolved.symbols, dims),
                               " for the symbolic dimensions)"));
  }
}

// The symbolic shape agreeing with both trials: a dimension equal in both is
// static, one equal to a symbol's size in both is that symbol, and any other
// (or any, when the ranks differ) depends on the symbols some other way: "?".
SymbolicShape merge_trials(const Shape& a, const Shape& b, const std::vector<std::string>& symbols,
                           const DimBindings& dims_a, const DimBindings& dims_b) {
  SymbolicShape shape(a.size(), Dim("?"));
  if (a.size() != b.size()) return shape;
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d] == b[d]) {
      shape[d] = Dim(a[d]);
      continue;
    }
    for (const std::string& symbol : symbols) {
      if (dims_a.at(symbol) == a[d] && dims_b.at(symbol) == b[d]) shape[d] = Dim(symbol);
    }
  }
  return shape;
}

}  // namespace

std::vector<TensorMeta> infer_metas(const Graph& graph, const ResolvedGraph& resolved, const DimBindings& dims,
                                    std::vector<Attrs>* run_attrs) {
  if (run_attrs) run_attrs->assign(resolved.nodes.size(), Attrs());
  std::vector<TensorMeta> metas(resolved.values.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    metas[resolved.inputs[i]] = {graph.inputs[i].dtype, concrete_shape(graph.inputs[i], dims)};
    check_fits_in_memory(metas[resolved.inputs[i]], [&] { return "input '" + graph.inputs[i].name + "'"; });
  }
  for (size_t i = 0; i < graph.constants.size(); ++i) {
    metas[resolved.constants[i]] = {graph.constants[i].dtype, concrete_shape(graph.constants[i], dims)};
  }
  std::vector<const TensorMeta*> inputs;
  for (size_t n = 0; n < resolved.nodes.size(); ++n) {
    const ResolvedNode& node = resolved.nodes[n];
    inputs.clear();
    for (const std::optional<ValueId>& id : node.inputs) inputs.push_back(id ? &metas[*id] : nullptr);
    std::vector<TensorMeta> outputs;
    try {
      Attrs bound;
      if (node.symbolic_attrs) {
        bound = Attrs::bind(node.op->schema, node.node->named_attrs(dims), node.attrs.list_sizes());
      }
      outputs = node.op->shape_fn(inputs, node.symbolic_attrs ? bound : node.attrs);
      if (run_attrs) (*run_attrs)[n] = std::move(bound);
    } catch (...) {
      rethrow_in_node(*node.node);
    }
    OPGRAPH_CHECK(outputs.size() == node.outputs.size(), node_label(*node.node), ": the shape function returned ",
                  outputs.size(), " outputs, the node names ", node.outputs.size());
    for (size_t k = 0; k < outputs.size(); ++k) {
      check_fits_in_memory(outputs[k], [&] { return detail::concat(node_label(*node.node), ": output ", k); });
      metas[node.outputs[k]] = std::move(outputs[k]);
    }
  }
  return metas;
}

std::vector<ValueInfo> infer_symbolic(const Graph& graph, const ResolvedGraph& resolved) {
  const DimBindings dims_a = trial_sizes(resolved.symbols, 0), dims_b = trial_sizes(resolved.symbols, 1);
  const std::vector<TensorMeta> a = infer_trial(graph, resolved, dims_a);
  const std::vector<TensorMeta> b = resolved.symbols.empty() ? a : infer_trial(graph, resolved, dims_b);
  std::vector<ValueInfo> values(a.size());
  for (ValueId id = 0; id < a.size(); ++id) {
    values[id] = {resolved.values.names[id], a[id].dtype,
                  merge_trials(a[id].shape, b[id].shape, resolved.symbols, dims_a, dims_b)};
  }
  return values;
}

void check_state_updates(std::span<const StateInfo> states, const std::vector<ValueInfo>& types,
                         const ValueTable& values) {
  for (const StateInfo& state : states) {
    if (state.update.empty()) continue;
    const ValueInfo& update = types[*values.find(state.update)];
    OPGRAPH_CHECK(update.dtype == state.value.dtype && update.shape == state.value.shape, "state '", state.value.name,
                  "': its update '", state.update, "' is ", update.type_str(), ", the state is ",
                  state.value.type_str());
  }
}

void verify(const Graph& graph, const Registry& registry) { infer_shapes(graph, registry); }

std::unordered_map<std::string, ValueInfo> infer_shapes(const Graph& given, const Registry& registry) {
  std::optional<Graph> folded;
  const Graph& graph = given.states.empty() ? given : folded.emplace(with_states_as_inputs(given));
  const ResolvedGraph resolved = resolve(graph, registry);
  std::vector<ValueInfo> types = infer_symbolic(graph, resolved);
  check_state_updates(given.states, types, resolved.values);
  std::unordered_map<std::string, ValueInfo> by_name;
  for (ValueInfo& value : types) by_name.emplace(value.name, std::move(value));
  return by_name;
}

std::unordered_map<std::string, TensorMeta> infer_shapes(const Graph& given, const DimBindings& dims,
                                                         const Registry& registry) {
  std::optional<Graph> folded;
  const Graph& graph = given.states.empty() ? given : folded.emplace(with_states_as_inputs(given));
  const ResolvedGraph resolved = resolve(graph, registry);
  std::vector<TensorMeta> metas = infer_metas(graph, resolved, dims);
  std::unordered_map<std::string, TensorMeta> by_name;
  for (ValueId id = 0; id < metas.size(); ++id) by_name.emplace(resolved.values.names[id], std::move(metas[id]));
  return by_name;
}

}  // namespace opgraph
