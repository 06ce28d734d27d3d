#include "graph/passes/pass.h"

namespace opgraph {

const OpDef* PassContext::op(std::string_view name) const {
  try {
    return &registry.get(name);
  } catch (const Error& e) {
    throw Error(pass.empty() ? detail::concat("a graph pass: ", e.what())
                             : detail::concat("graph pass ", pass, ": ", e.what()));
  }
}

const ResolvedGraph& PassContext::resolved() {
  if (!resolved_) {
    resolved_ = resolve(graph, registry);
    types_ = infer_symbolic(graph, *resolved_);
    ++inferences_;
  }
  return *resolved_;
}

const std::vector<ValueInfo>& PassContext::types() {
  resolved();
  return types_;
}

const std::unordered_map<std::string, ValueInfo>& PassContext::values() {
  if (!values_) {
    values_.emplace();
    for (const ValueInfo& value : types()) values_->emplace(value.name, value);
  }
  return *values_;
}

void PassContext::graph_changed() {
  resolved_.reset();
  types_.clear();
  values_.reset();
}

void PassContext::nodes_moved() {
  if (!resolved_) return;
  for (size_t i = 0; i < resolved_->nodes.size(); ++i) resolved_->nodes[i].node = &graph.nodes[i];
}

}  // namespace opgraph
