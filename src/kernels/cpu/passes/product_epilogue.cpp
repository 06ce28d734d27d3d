// What a product can do as it writes its output (oneDNN post-ops), where
// each was another pass over the tensor:
// - A residual connection, add(conv(x), shortcut) on channel blocks or
//   add(linear(x), shortcut), and the activation after it (ResNet's
//   bottleneck ends in relu(bn3(conv3(x)) + identity); a transformer layer
//   adds each sublayer's output projection to its input), becomes the
//   product's residual and activation: oneDNN adds the shortcut and applies
//   the activation as it writes each output block (a sum post-op), where the
//   add and the relu were a sizeable part of ResNet-50's time. A
//   Session writes such a product's output over the shortcut's memory when
//   nothing reads the shortcut after it (OpDef::in_place_input), as OpenVINO
//   does.
// - A gate, mul(linear(x), gate) either way round (a SwiGLU MLP, Llama's:
//   up_proj(x) * silu(gate_proj(x))), becomes the linear layer's multiplier
//   (a binary mul post-op).
//
// opgraph::conv2d_nchwc and opgraph::linear both take the residual as input
// 3; opgraph::linear the multiplier as input 4.
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "graph/passes/rewrite.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

class ProductEpilogues : RewritingPass {
 public:
  explicit ProductEpilogues(PassContext& context) : RewritingPass(context) {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      for (const std::string& output : graph_.nodes[i].outputs) position_[output] = i;
    }
  }

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      if (!fuse_add(i) && !fuse_gate(i)) fuse_activation(i);
    });
    rewriter_.finish();
  }

 private:
  // add(product, shortcut) with alpha 1, either way round, where the
  // product adds nothing yet, its output feeds the add alone (through a copy
  // of the same shape, as transformers' dropout exports), and the shortcut
  // has its shape and is a graph input, a constant or computed before it
  // (the product stays where it is in the graph).
  bool fuse_add(size_t i) {
    Node& add = graph_.nodes[i];
    if (op_of(add) != add_ || add.inputs.size() != 2) return false;
    const std::optional<Attrs> attrs = bound_attrs(add, registry_);
    if (!attrs || scalar_attr(*attrs, "alpha") != 1.0) return false;
    for (size_t side : {0, 1}) {
      Node* product = rewriter_.sole_producer(add.inputs[side]);
      Node* copy = keeps_shape(product, registry_, values_) ? product : nullptr;
      if (copy != nullptr) product = rewriter_.sole_producer(copy->inputs[0]);
      product = without_epilogue(product);
      const std::string* shortcut = single_value(add.inputs[1 - side]);
      if (product == nullptr || has_residual(*product) || !ready_for(shortcut, *product)) continue;
      if (op_of(*product) == linear_) as_fused_linear(*product);
      product->inputs[3] = add.inputs[1 - side];
      if (copy != nullptr) rewriter_.absorb(*product, static_cast<size_t>(copy - graph_.nodes.data()));
      if (side == 1) std::swap(add.inputs[0], add.inputs[1]);  // absorb() follows input 0
      rewriter_.absorb(*product, i);
      return true;
    }
    return false;
  }

  // mul(linear, gate), either way round, where the linear layer multiplies
  // by nothing yet, its output feeds the mul alone, and the gate has its
  // shape and is a graph input, a constant or computed before it.
  bool fuse_gate(size_t i) {
    Node& mul = graph_.nodes[i];
    if (op_of(mul) != mul_ || mul.inputs.size() != 2) return false;
    for (size_t side : {0, 1}) {
      Node* product = rewriter_.sole_producer(mul.inputs[side]);
      const OpDef* op = product == nullptr ? nullptr : op_of(*product);
      if ((op != linear_ && op != fused_linear_) || has_multiplier(*product) ||
          !ready_for(single_value(mul.inputs[1 - side]), *product)) {
        continue;
      }
      if (op == linear_) as_fused_linear(*product);
      product->inputs[4] = mul.inputs[1 - side];
      if (side == 1) std::swap(mul.inputs[0], mul.inputs[1]);  // absorb() follows input 0
      rewriter_.absorb(*product, i);
      return true;
    }
    return false;
  }

  // An activation after a product that adds a residual.
  void fuse_activation(size_t i) {
    const Node& node = graph_.nodes[i];
    const std::optional<std::string> activation = activations_.of(node);
    if (!activation || node.inputs.size() != 1) return;
    Node* product = without_epilogue(rewriter_.sole_producer(node.inputs[0]));
    if (product == nullptr || !has_residual(*product)) return;
    set_attr(*product, "activation", std::string(*activation));
    rewriter_.absorb(*product, i);
  }

  // Whether `value` can be read by `product` where it stands in the graph,
  // with the product's dtype and shape: a graph input, a constant or computed
  // before it.
  bool ready_for(const std::string* value, const Node& product) const {
    if (value == nullptr || !values_.contains(*value)) return false;
    if (position_.contains(*value) && position_.at(*value) >= position_.at(product.outputs[0])) return false;
    const ValueInfo &given = values_.at(*value), &output = values_.at(product.outputs[0]);
    return given.dtype == output.dtype && given.shape == output.shape;
  }

  void as_fused_linear(Node& linear) const {
    linear.op_type = fused_linear_->name();
    linear.inputs.resize(5);  // no residual, no multiplier
  }

  static bool has_residual(const Node& product) { return product.inputs.size() > 3 && !product.inputs[3].is_none(); }
  static bool has_multiplier(const Node& product) { return product.inputs.size() > 4 && !product.inputs[4].is_none(); }

  // `node` if it is a product that takes a residual, applies no activation
  // and multiplies by nothing: opgraph::conv2d_nchwc, or a linear layer.
  Node* without_epilogue(Node* node) const {
    const OpDef* op = node == nullptr ? nullptr : op_of(*node);
    if (op == linear_) return node;
    if (op == nullptr || (op != conv2d_nchwc_ && op != fused_linear_)) return nullptr;
    const std::optional<Attrs> attrs = bound_attrs(*node, registry_);
    return attrs && attrs->get<std::string>("activation") == "none" && !has_multiplier(*node) ? node : nullptr;
  }

  const Activations activations_{context_};
  const OpDef* const add_ = op("aten::add.Tensor");
  const OpDef* const mul_ = op("aten::mul.Tensor");
  const OpDef* const linear_ = op("aten::linear");
  const OpDef* const fused_linear_ = op("opgraph::linear");
  const OpDef* const conv2d_nchwc_ = op("opgraph::conv2d_nchwc");
  std::unordered_map<std::string, size_t> position_;  // by value: the node computing it
};

}  // namespace

void fuse_product_epilogues(PassContext& context) { ProductEpilogues(context).run(); }

}  // namespace opgraph
