// A residual connection on channel blocks, add(conv(x), shortcut) and the
// activation after it (ResNet's bottleneck ends in relu(bn3(conv3(x)) +
// identity)), becomes the convolution's residual and activation: oneDNN adds
// the shortcut and applies the activation as it writes each output block
// (a sum post-op), where the add and the relu were each another pass over
// the tensor (a tenth of ResNet-50's time at two threads). A Session writes
// such a convolution's output over the shortcut's memory when nothing reads
// the shortcut after it (OpDef::in_place_input), as OpenVINO does.
#include <unordered_map>

#include "graph/rewrite.h"

namespace opgraph {
namespace {

class ResidualAdds {
 public:
  ResidualAdds(Graph& graph, Weights& weights, const Registry& registry)
      : graph_(graph), registry_(registry), rewriter_(graph, weights), values_(infer_shapes(graph, registry)) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      for (const std::string& output : graph.nodes[i].outputs) position_[output] = i;
    }
  }

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      if (!fuse_add(i)) fuse_activation(i);
    });
    rewriter_.finish();
  }

 private:
  // add(conv, shortcut) with alpha 1, either way round, where the
  // convolution adds nothing yet, its output feeds the add alone, and the
  // shortcut has its shape and is computed before it (the convolution stays
  // where it is in the graph).
  bool fuse_add(size_t i) {
    Node& add = graph_.nodes[i];
    if (add.op_type != "aten::add.Tensor" || add.inputs.size() != 2) return false;
    const std::optional<Attrs> attrs = bound_attrs(add, registry_);
    if (!attrs || scalar_attr(*attrs, "alpha") != 1.0) return false;
    for (size_t side : {0, 1}) {
      Node* conv = without_epilogue(rewriter_.sole_producer(add.inputs[side]));
      const std::string* shortcut = single_value(add.inputs[1 - side]);
      if (conv == nullptr || !conv->inputs[3].is_none() || shortcut == nullptr || !position_.contains(*shortcut) ||
          position_.at(*shortcut) >= position_.at(conv->outputs[0]) ||
          !same_type(values_.at(*shortcut), values_.at(conv->outputs[0]))) {
        continue;
      }
      conv->inputs[3] = add.inputs[1 - side];
      if (side == 1) std::swap(add.inputs[0], add.inputs[1]);  // absorb() follows input 0
      rewriter_.absorb(*conv, i);
      return true;
    }
    return false;
  }

  // An activation after such a convolution.
  void fuse_activation(size_t i) {
    const Node& node = graph_.nodes[i];
    const std::optional<std::string> activation = activation_of(node, registry_);
    if (!activation || node.inputs.size() != 1) return;
    Node* conv = without_epilogue(rewriter_.sole_producer(node.inputs[0]));
    if (conv == nullptr || conv->inputs[3].is_none()) return;
    attr(*conv, "activation") = *activation;
    rewriter_.absorb(*conv, i);
  }

  static bool same_type(const ValueInfo& a, const ValueInfo& b) { return a.dtype == b.dtype && a.shape == b.shape; }

  // `node` if it is an opgraph::conv2d_nchwc that applies no activation.
  Node* without_epilogue(Node* node) {
    if (node == nullptr || node->op_type != "opgraph::conv2d_nchwc") return nullptr;
    const AttrValue& activation = attr(*node, "activation");
    return std::get<std::string>(activation) == "none" ? node : nullptr;
  }

  // The layout pass gives opgraph::conv2d_nchwc every attribute.
  static AttrValue& attr(Node& node, std::string_view name) {
    for (NodeAttr& attr : node.attrs) {
      if (attr.name == name) return attr.value;
    }
    throw Error(detail::concat(node.name, ": no attribute '", name, "'"));
  }

  Graph& graph_;
  const Registry& registry_;
  Rewriter rewriter_;
  std::unordered_map<std::string, ValueInfo> values_;
  std::unordered_map<std::string, size_t> position_;  // by value: the node computing it
};

}  // namespace

void fuse_residual_adds(Graph& graph, Weights& weights, const Registry& registry) {
  ResidualAdds(graph, weights, registry).run();
}

}  // namespace opgraph
