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

// aten::addmm(bias, x, w) adding a constant vector to each row of x @ w (beta
// and alpha 1), as GPT-2's Conv1D layers do, becomes opgraph::gemm(x, w,
// bias), which can apply an activation as it writes; false for any other node.
bool addmm_as_gemm(Node& node, const Registry& registry, const Rewriter& rewriter) {
  if (node.op_type != "aten::addmm" || node.inputs.size() != 3) return false;
  const std::optional<Attrs> attrs = bound_attrs(node, registry);
  if (!attrs || scalar_attr(*attrs, "beta") != 1.0 || scalar_attr(*attrs, "alpha") != 1.0) return false;
  const std::optional<Tensor> bias = rewriter.constant(node.inputs[0]), weight = rewriter.constant(node.inputs[2]);
  if (!bias || !weight || !bias->defined() || !weight->defined() || bias->dim() != 1 || weight->dim() != 2 ||
      bias->size(0) != weight->size(1)) {
    return false;
  }
  node.op_type = "opgraph::gemm";
  node.inputs = {node.inputs[1], node.inputs[2], node.inputs[0]};
  node.attrs.clear();
  return true;
}

}  // namespace

void fuse_activations(PassContext& context) {
  Rewriter rewriter(context.graph, context.weights);
  rewriter.for_each_node([&](size_t i) {
    const Node& activation = context.graph.nodes[i];
    const std::optional<std::string> name = activation_of(activation, context.registry);
    if (!name || activation.inputs.size() != 1) return;
    Node* producer = rewriter.sole_producer(activation.inputs[0]);
    // An elementwise activation of a reshaped product is the reshaped
    // activated product (GPT-2's Conv1D views its addmm's rows back into
    // [batch, sequence, features] before the GELU).
    Node* reshape = nullptr;
    if (producer != nullptr && !producer->inputs.empty()) {
      const OpDef* op = context.registry.find(producer->op_type);
      if (op != nullptr && op->reshapes_input) {
        reshape = producer;
        producer = rewriter.sole_producer(reshape->inputs[0]);
      }
    }
    if (producer == nullptr) return;
    if (producer->op_type == "aten::conv2d") {
      producer->op_type = "opgraph::conv2d";
    } else if (producer->op_type == "aten::linear") {
      producer->op_type = "opgraph::linear";
      producer->inputs.resize(5);  // no residual, no multiplier
    } else if (!addmm_as_gemm(*producer, context.registry, rewriter)) {
      return;
    }
    producer->attrs.push_back({"activation", *name});
    rewriter.absorb(reshape != nullptr ? *reshape : *producer, i);
  });
  rewriter.finish();
}

}  // namespace opgraph
