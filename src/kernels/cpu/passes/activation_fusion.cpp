// An activation after a 2-D convolution, a linear layer or an addmm with a
// constant bias and weight is applied by that product as it writes its
// output (opgraph::conv2d, opgraph::linear, opgraph::gemm), saving a pass
// over the tensor.
#include <optional>
#include <string>

#include "graph/passes/rewrite.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

// Reads no value's type, so that a graph changed by the passes before it
// is not inferred again for it.
class ActivationFusion {
 public:
  explicit ActivationFusion(PassContext& context) : context_(context), rewriter_(context) {}

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      const Node& activation = context_.graph.nodes[i];
      const std::optional<std::string> name = activations_.of(activation);
      if (!name || activation.inputs.size() != 1) return;
      Node* producer = rewriter_.sole_producer(activation.inputs[0]);
      // An elementwise activation of a reshaped product is the reshaped
      // activated product (GPT-2's Conv1D views its addmm's rows back into
      // [batch, sequence, features] before the GELU).
      Node* reshape = nullptr;
      if (producer != nullptr && !producer->inputs.empty()) {
        const OpDef* op = context_.op_of(*producer);
        if (op != nullptr && op->reshapes_input) {
          reshape = producer;
          producer = rewriter_.sole_producer(reshape->inputs[0]);
        }
      }
      if (producer == nullptr) return;
      const OpDef* product = context_.op_of(*producer);
      if (product == conv2d_) {
        producer->op_type = fused_conv2d_->name();
      } else if (product == linear_) {
        producer->op_type = fused_linear_->name();
        producer->inputs.resize(5);  // no residual, no multiplier
      } else if (product != addmm_ || !addmm_as_gemm(*producer)) {
        return;
      }
      producer->attrs.push_back({"activation", *name});
      rewriter_.absorb(reshape != nullptr ? *reshape : *producer, i);
    });
    rewriter_.finish();
  }

 private:
  // aten::addmm(bias, x, w) adding a constant vector to each row of x @ w
  // (beta and alpha 1), as GPT-2's Conv1D layers do, becomes
  // opgraph::gemm(x, w, bias), which can apply an activation as it writes;
  // false where the addmm is not that.
  bool addmm_as_gemm(Node& node) const {
    if (node.inputs.size() != 3) return false;
    const std::optional<Attrs> attrs = bound_attrs(node, context_.registry);
    if (!attrs || scalar_attr(*attrs, "beta") != 1.0 || scalar_attr(*attrs, "alpha") != 1.0) return false;
    const std::optional<Tensor> bias = rewriter_.constant(node.inputs[0]), weight = rewriter_.constant(node.inputs[2]);
    if (!bias || !weight || !bias->defined() || !weight->defined() || bias->dim() != 1 || weight->dim() != 2 ||
        bias->size(0) != weight->size(1)) {
      return false;
    }
    node.op_type = gemm_->name();
    node.inputs = {node.inputs[1], node.inputs[2], node.inputs[0]};
    node.attrs.clear();
    return true;
  }

  const PassContext& context_;
  Rewriter rewriter_;
  const Activations activations_{context_};
  const OpDef* const conv2d_ = context_.op("aten::conv2d");
  const OpDef* const linear_ = context_.op("aten::linear");
  const OpDef* const addmm_ = context_.op("aten::addmm");
  const OpDef* const fused_conv2d_ = context_.op("opgraph::conv2d");
  const OpDef* const fused_linear_ = context_.op("opgraph::linear");
  const OpDef* const gemm_ = context_.op("opgraph::gemm");
};

}  // namespace

void fuse_activations(PassContext& context) { ActivationFusion(context).run(); }

}  // namespace opgraph
