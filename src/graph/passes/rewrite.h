// What the graph passes share: how they read a node's uses, attributes and
// arguments and the activation it computes, and the Rewriter that fuses
// nodes.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/passes/pass.h"
#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"
#include "opgraph/registry/registry.h"

namespace opgraph {

// How many times each value is read: as a node input, and as a graph output.
std::unordered_map<std::string, int> count_uses(const Graph& graph);

// A node's attributes bound to its op's schema, defaults filled in; nullopt
// when they do not bind, which the Session's checks then report as they
// would without the rewrites.
std::optional<Attrs> bound_attrs(const Node& node, const Registry& registry);

// The activations a product can apply as it writes (the activation
// attribute, see kernels/activation.h), by the ops that compute them.
class Activations {
 public:
  explicit Activations(const PassContext& context);

  // The activation attribute value a node computes ("relu", "gelu_tanh",
  // ...), or nullopt.
  std::optional<std::string> of(const Node& node) const;

 private:
  const PassContext& context_;
  // The activations without attributes, and the value each is.
  std::array<std::pair<const OpDef*, const char*>, 4> plain_;
  const OpDef *hardtanh_, *gelu_;
};

// The one value a tensor argument passes, if it passes exactly one.
const std::string* single_value(const NodeInput& input);

// Sets `node`'s attribute `name` to the fixed `value`, adding it where the
// node does not give it.
void set_attr(Node& node, std::string_view name, AttrValue value);

// Whether `node` reshapes its input to the input's own shape (a copy, such
// as the clone an exported dropout leaves), by the shapes `values` infer.
bool keeps_shape(const Node* node, const Registry& registry, const std::unordered_map<std::string, ValueInfo>& values);

// Rewrites node after node in graph order, the nodes a rewrite takes in
// marked and dropped at the end. The producer of each value follows the
// rewrites: a fused node produces the value its last node did.
class Rewriter {
 public:
  explicit Rewriter(PassContext& context)
      : context_(context), graph_(context.graph), weights_(context.weights), uses_(count_uses(graph_)) {
    for (const ValueInfo& constant : graph_.constants) constants_.insert(constant.name);
    for (const ValueInfo& input : graph_.inputs) taken_.insert(input.name);
    for (const Node& node : graph_.nodes) {
      taken_.insert(node.name);
      taken_.insert(node.outputs.begin(), node.outputs.end());
    }
    taken_.insert(constants_.begin(), constants_.end());
    removed_.assign(graph_.nodes.size(), false);
  }

  // How many times `value` is read in the graph as it was given.
  int uses(const std::string& value) const {
    auto it = uses_.find(value);
    return it == uses_.end() ? 0 : it->second;
  }

  // The node that computes `value` and nothing else reads, or null.
  Node* sole_producer(const NodeInput& input) {
    const std::string* value = single_value(input);
    return value == nullptr || uses(*value) != 1 ? nullptr : producer(*value);
  }

  // The same if it is an `op` node, which then joins `matched` (the nodes
  // of a pattern that a fused node replaces).
  const Node* sole_producer(const NodeInput& input, const OpDef* op, std::vector<const Node*>& matched) {
    const Node* node = sole_producer(input);
    if (node == nullptr || context_.op_of(*node) != op) return nullptr;
    matched.push_back(node);
    return node;
  }

  // The constant a tensor argument passes; undefined when it passes none;
  // nullopt when it passes something else.
  std::optional<Tensor> constant(const NodeInput& input) const {
    if (input.is_none()) return Tensor();
    const std::string* value = single_value(input);
    if (value == nullptr || !constants_.contains(*value)) return std::nullopt;
    auto it = weights_.find(*value);  // a missing weight is the Session's to report
    return it == weights_.end() ? std::nullopt : std::optional<Tensor>(it->second.contiguous());
  }

  // A value or node name that `base` makes unique.
  std::string fresh_name(const std::string& base) {
    std::string name = base;
    while (taken_.contains(name)) name += "_";
    taken_.insert(name);
    return name;
  }

  // A new constant named after `base`, holding `tensor`.
  std::string add_constant(const std::string& base, const Tensor& tensor) {
    const std::string name = fresh_name(base);
    graph_.constants.push_back({name, tensor.dtype(), SymbolicShape(tensor.shape().begin(), tensor.shape().end())});
    weights_[name] = tensor;
    constants_.insert(name);
    return name;
  }

  // `into` now does what `node` did too and produces its output.
  void absorb(Node& into, size_t node) {
    into.outputs[0] = graph_.nodes[node].outputs[0];
    producer_[into.outputs[0]] = producer_.at(graph_.nodes[node].inputs[0].values[0]);
    removed_[node] = true;
  }

  // Drops `node` (of the graph's nodes), whose work another node took over.
  void remove(const Node& node) { removed_[index_of(node)] = true; }

  // Adds `node` to the graph right after `after` (of the graph's nodes), or
  // first where `after` is null; it joins the graph at finish(), unvisited.
  void insert_after(const Node* after, Node node) {
    inserted_.emplace(after == nullptr ? 0 : index_of(*after) + 1, std::move(node));
  }
  // The same, right before `before`.
  void insert_before(const Node& before, Node node) { inserted_.emplace(index_of(before), std::move(node)); }

  // The node computing `value`, at the point of the walk; null for a graph
  // input or a constant.
  Node* producer(const std::string& value) {
    auto it = producer_.find(value);
    return it == producer_.end() ? nullptr : &graph_.nodes[it->second];
  }

  template <typename Rewrite>
  void for_each_node(Rewrite&& rewrite) {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      rewrite(i);
      if (removed_[i]) continue;
      for (const std::string& output : graph_.nodes[i].outputs) producer_[output] = i;
    }
  }

  // Drops the absorbed nodes, and the constants no node reads any more.
  void finish() {
    std::vector<Node> kept;
    for (size_t i = 0; i <= graph_.nodes.size(); ++i) {
      for (auto [at, end] = inserted_.equal_range(i); at != end; ++at) kept.push_back(std::move(at->second));
      if (i < graph_.nodes.size() && !removed_[i]) kept.push_back(std::move(graph_.nodes[i]));
    }
    graph_.nodes = std::move(kept);
    const std::unordered_map<std::string, int> uses = count_uses(graph_);
    std::erase_if(graph_.constants, [&](const ValueInfo& constant) {
      if (uses.contains(constant.name)) return false;
      weights_.erase(constant.name);
      return true;
    });
  }

 private:
  const PassContext& context_;
  Graph& graph_;
  Weights& weights_;
  std::unordered_map<std::string, int> uses_;  // as the graph was given: rewrites move uses, never add any
  std::unordered_set<std::string> constants_;
  std::unordered_set<std::string> taken_;  // every value and node name
  std::unordered_map<std::string, size_t> producer_;
  std::vector<bool> removed_;
  std::multimap<size_t, Node> inserted_;  // before which of the graph's nodes, in the order inserted

  size_t index_of(const Node& node) const { return static_cast<size_t>(&node - graph_.nodes.data()); }
};

// What a pass that walks the graph with a Rewriter works with: the graph, the
// registry, the Rewriter and every value's type as the pass found them. A
// pass looks up the ops it names as members initialized with op(name).
class RewritingPass {
 public:
  explicit RewritingPass(PassContext& context)
      : context_(context),
        graph_(context.graph),
        registry_(context.registry),
        rewriter_(context),
        values_(context.values()) {}

 protected:
  const OpDef* op(std::string_view name) const { return context_.op(name); }
  const OpDef* op_of(const Node& node) const { return context_.op_of(node); }

  const PassContext& context_;
  Graph& graph_;
  const Registry& registry_;
  Rewriter rewriter_;
  const std::unordered_map<std::string, ValueInfo>& values_;
};

}  // namespace opgraph
