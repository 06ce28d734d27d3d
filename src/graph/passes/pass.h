// A graph pass: a rewrite a Session makes at load (the list is
// runtime/pass_list.cpp), and the context every pass runs in.
//
// Shape inference over a whole graph is the costly part of a load, and most
// passes read the types it gives. The context infers them once and keeps
// them until a pass changes the graph, so that a load infers once at the
// start and once more after each pass that rewrote something and before the
// next one that reads them.
//
// A pass recognises nodes by the op they call, as the registry's OpDef
// (which never moves), not by comparing op names: it looks up each op it
// names once, when it starts, and a name the registry does not hold (a
// misspelling) fails every load there, naming the pass and the op, where a
// comparison of names would silently never match.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/resolved.h"
#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"
#include "opgraph/registry/registry.h"

namespace opgraph {

class PassContext {
 public:
  PassContext(Graph& graph, Weights& weights, const Registry& registry, Precision precision = Precision::Float32,
              WeightQuantization quantization = {})
      : graph(graph), weights(weights), registry(registry), precision(precision), quantization(quantization) {}

  Graph& graph;
  Weights& weights;  // one tensor per constant of `graph`
  const Registry& registry;
  // What the Session's float32 products with a weight multiply in.
  const Precision precision;
  // How it keeps its products' weights, and whether it quantizes their inputs.
  const WeightQuantization quantization;
  // The pass running (the pass list sets it), which op()'s errors name.
  std::string_view pass;

  // The op registered as `name`, for a pass to recognise nodes by
  // (op_of(node) == op) or to make (node.op_type = op->name()); throws
  // opgraph::Error naming the pass and the op when the registry holds none.
  const OpDef* op(std::string_view name) const;
  // The op `node` calls as it stands (a pass may have changed it); null for
  // a name the registry does not hold.
  const OpDef* op_of(const Node& node) const { return registry.find(node.op_type); }

  // The graph resolved against the registry, and the type of every value (by
  // ValueId, and by name), as the graph stands. Resolving also checks the
  // graph, so the first call reports what is wrong with a graph as given.
  const ResolvedGraph& resolved();
  const std::vector<ValueInfo>& types();
  const std::unordered_map<std::string, ValueInfo>& values();

  // The graph changed: what was inferred no longer holds.
  void graph_changed();
  // The graph's nodes moved to new storage unchanged (a pass rebuilt the
  // list as it was): what was inferred holds, pointing at them anew.
  void nodes_moved();
  // How many times the graph was resolved and its types inferred.
  size_t inferences() const { return inferences_; }

 private:
  std::optional<ResolvedGraph> resolved_;
  std::vector<ValueInfo> types_;
  std::optional<std::unordered_map<std::string, ValueInfo>> values_;
  size_t inferences_ = 0;
};

// A pass rewrites context.graph (and context.weights) in place, leaving every
// output the same up to float rounding.
using PassFn = void (*)(PassContext& context);

}  // namespace opgraph
