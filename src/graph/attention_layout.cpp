// Multi-head attention as transformers write it (BERT, ViT, GPT-2, Whisper):
//
//   q = linear(x).view(B, L, H, E).transpose(1, 2)        (k and v alike)
//   o = scaled_dot_product_attention(q, k, v, mask)       [B, H, L, Ev]
//   y = o.transpose(1, 2).reshape(B, L, H * Ev)
//
// Each transpose is a copy of a whole activation: four per layer, a few
// percent of BERT's run. opgraph::attention_bshd reads q, k and v where the
// linear layers wrote them, [B, L, H, E], and writes its output as
// [B, L, H, Ev], which is what the transpose after it gave; the four
// transposes go. ONNX Runtime's MultiHeadAttention takes this BSNH layout too.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "graph/rewrite.h"

namespace opgraph {
namespace {

class AttentionLayout {
 public:
  AttentionLayout(Graph& graph, Weights& weights, const Registry& registry)
      : graph_(graph), registry_(registry), rewriter_(graph, weights), values_(infer_shapes(graph, registry)) {}

  void run() {
    rewriter_.for_each_node([&](size_t i) { rewrite(graph_.nodes[i]); });
    rewriter_.finish();
  }

 private:
  // At the transpose of the attention's output, once the whole pattern is in view.
  void rewrite(Node& output_transpose) {
    if (!swaps_sequence_and_heads(&output_transpose)) return;
    Node* attention = rewriter_.sole_producer(output_transpose.inputs[0]);
    // transformers views the output to its own shape before the transpose.
    Node* same_shape_view = keeps_shape(attention, registry_, values_) ? attention : nullptr;
    if (same_shape_view != nullptr) attention = rewriter_.sole_producer(same_shape_view->inputs[0]);
    if (attention == nullptr || attention->op_type != "aten::scaled_dot_product_attention") return;
    Node *operand_transposes[3], *operand_copies[3];
    for (size_t k = 0; k < 3; ++k) {
      if (attention->inputs.size() <= k) return;
      Node* producer = rewriter_.sole_producer(attention->inputs[k]);
      // Whisper makes each operand .contiguous() after its transpose.
      operand_copies[k] = keeps_shape(producer, registry_, values_) ? producer : nullptr;
      if (operand_copies[k] != nullptr) producer = rewriter_.sole_producer(producer->inputs[0]);
      operand_transposes[k] = producer;
      if (!swaps_sequence_and_heads(producer)) return;
    }
    attention->op_type = "opgraph::attention_bshd";
    for (size_t k = 0; k < 3; ++k) {
      attention->inputs[k] = operand_transposes[k]->inputs[0];
      rewriter_.remove(*operand_transposes[k]);
      if (operand_copies[k] != nullptr) rewriter_.remove(*operand_copies[k]);
    }
    attention->outputs[0] = output_transpose.outputs[0];
    if (same_shape_view != nullptr) rewriter_.remove(*same_shape_view);
    rewriter_.remove(output_transpose);
  }

  // aten::transpose.int(x, 1, 2) of a rank-4 x.
  bool swaps_sequence_and_heads(const Node* node) const {
    if (node == nullptr || node->op_type != "aten::transpose.int" || node->inputs.size() != 1) return false;
    const std::optional<Attrs> attrs = bound_attrs(*node, registry_);
    const std::string* input = single_value(node->inputs[0]);
    if (!attrs || input == nullptr || !values_.contains(*input) || values_.at(*input).shape.size() != 4) return false;
    int64_t dim0 = attrs->get<int64_t>("dim0"), dim1 = attrs->get<int64_t>("dim1");
    dim0 += dim0 < 0 ? 4 : 0;
    dim1 += dim1 < 0 ? 4 : 0;
    return std::min(dim0, dim1) == 1 && std::max(dim0, dim1) == 2;
  }

  Graph& graph_;
  const Registry& registry_;
  Rewriter rewriter_;
  std::unordered_map<std::string, ValueInfo> values_;
};

}  // namespace

void use_heads_second_attention(Graph& graph, Weights& weights, const Registry& registry) {
  AttentionLayout(graph, weights, registry).run();
}

}  // namespace opgraph
