// Multi-head attention as transformers write it (BERT, ViT, GPT-2, Whisper,
// Llama):
//
//   q = linear(x).view(B, L, H, E).transpose(1, 2)        (k and v alike)
//   q = rotary_embedding(q, cos, sin)                     (Llama: q and k)
//   k = repeat_kv(k)                                      (grouped-query: k and v)
//   o = scaled_dot_product_attention(q, k, v, mask)       [B, H, L, Ev]
//   y = o.transpose(1, 2).reshape(B, L, H * Ev)
//
// Each transpose is a copy of a whole activation: four per layer, a part of
// BERT's run worth saving. opgraph::attention_bshd reads q, k and v where the
// linear layers wrote them, [B, L, H, E], and writes its output as
// [B, L, H, Ev], which is what the transpose after it gave; the four
// transposes go. ONNX Runtime's MultiHeadAttention takes this BSNH layout too.
// A rotary embedding between a transpose and the attention runs before the
// transpose instead, on cos and sin transposed alike (tensors of one head).
// repeat_kv (unsqueeze, expand, a copy, a reshape) copies k and v once per
// query head of their group; the attention reads the groups' heads where they
// are, with enable_gqa.
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "graph/passes/rewrite.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

class AttentionLayout : RewritingPass {
 public:
  using RewritingPass::RewritingPass;

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      Node& node = graph_.nodes[i];
      if (op_of(node) == attention_) {
        share_key_value_heads(node);
      } else {
        rewrite(node);
      }
    });
    rewriter_.finish();
  }

 private:
  // k and v that repeat_kv gave q's heads become what it repeated, and the
  // attention groups q's heads over them (enable_gqa).
  void share_key_value_heads(Node& attention) {
    if (attention.inputs.size() < 3) return;
    std::vector<const Node*> repeats;
    const std::string *key = repeated(attention.inputs[1], repeats), *value = repeated(attention.inputs[2], repeats);
    if (key == nullptr || value == nullptr || values_.at(*key).shape[1] != values_.at(*value).shape[1]) return;
    for (const Node* node : repeats) rewriter_.remove(*node);
    attention.inputs[1] = NodeInput::value(*key);
    attention.inputs[2] = NodeInput::value(*value);
    set_attr(attention, "enable_gqa", true);
  }

  // The [B, G, S, E] tensor t of reshape(expand(t.unsqueeze(2), [B, G, N,
  // S, E]), [B, G * N, S, E]) (through a same-shape copy before the reshape),
  // each read by the next alone, which go into `nodes`; null otherwise.
  const std::string* repeated(const NodeInput& input, std::vector<const Node*>& nodes) {
    Node* reshape = rewriter_.sole_producer(input);
    const OpDef* op = reshape == nullptr ? nullptr : op_of(*reshape);
    if (op == nullptr || !op->reshapes_input || reshape->inputs.empty()) return nullptr;
    Node* copy = rewriter_.sole_producer(reshape->inputs[0]);
    Node* expand = keeps_shape(copy, registry_, values_) ? rewriter_.sole_producer(copy->inputs[0]) : copy;
    if (expand == nullptr || op_of(*expand) != expand_) return nullptr;
    Node* unsqueeze = rewriter_.sole_producer(expand->inputs[0]);
    if (unsqueeze == nullptr || op_of(*unsqueeze) != unsqueeze_) return nullptr;
    const std::optional<Attrs> attrs = bound_attrs(*unsqueeze, registry_);
    if (!attrs || attrs->get<int64_t>("dim") != 2) return nullptr;
    const std::string* shared = single_value(unsqueeze->inputs[0]);
    if (shared == nullptr || !values_.contains(*shared) || !values_.contains(expand->outputs[0])) return nullptr;
    const SymbolicShape &from = values_.at(*shared).shape, &expanded = values_.at(expand->outputs[0]).shape,
                        &to = values_.at(reshape->outputs[0]).shape;
    if (from.size() != 4 || expanded.size() != 5 || to.size() != 4 || from[1].is_symbolic() ||
        expanded[2].is_symbolic() || to[1].is_symbolic()) {
      return nullptr;
    }
    const SymbolicShape unsqueezed = {from[0], from[1], expanded[2], from[2], from[3]};
    if (expanded != unsqueezed || to != SymbolicShape{from[0], from[1].size * expanded[2].size, from[2], from[3]}) {
      return nullptr;
    }
    nodes.insert(nodes.end(), {reshape, expand, unsqueeze});
    if (copy != expand) nodes.push_back(copy);
    return shared;
  }

  // At the transpose of the attention's output, once the whole pattern is in view.
  void rewrite(Node& output_transpose) {
    if (!swaps_sequence_and_heads(&output_transpose)) return;
    Node* attention = rewriter_.sole_producer(output_transpose.inputs[0]);
    // transformers views the output to its own shape before the transpose.
    Node* same_shape_view = keeps_shape(attention, registry_, values_) ? attention : nullptr;
    if (same_shape_view != nullptr) attention = rewriter_.sole_producer(same_shape_view->inputs[0]);
    if (attention == nullptr || op_of(*attention) != attention_) return;
    Node *operand_transposes[3], *operand_copies[3], *rotations[3];
    for (size_t k = 0; k < 3; ++k) {
      if (attention->inputs.size() <= k) return;
      Node* producer = rewriter_.sole_producer(attention->inputs[k]);
      rotations[k] = rotates_heads(producer) ? producer : nullptr;
      if (rotations[k] != nullptr) producer = rewriter_.sole_producer(producer->inputs[0]);
      // Whisper makes each operand .contiguous() after its transpose.
      operand_copies[k] = keeps_shape(producer, registry_, values_) ? producer : nullptr;
      if (operand_copies[k] != nullptr) producer = rewriter_.sole_producer(producer->inputs[0]);
      operand_transposes[k] = producer;
      if (!swaps_sequence_and_heads(producer)) return;
    }
    attention->op_type = attention_bshd_->name();
    for (size_t k = 0; k < 3; ++k) {
      if (rotations[k] != nullptr) {
        rotations[k]->inputs = {operand_transposes[k]->inputs[0], heads_second(rotations[k]->inputs[1]),
                                heads_second(rotations[k]->inputs[2])};
      } else {
        attention->inputs[k] = operand_transposes[k]->inputs[0];
      }
      rewriter_.remove(*operand_transposes[k]);
      if (operand_copies[k] != nullptr) rewriter_.remove(*operand_copies[k]);
    }
    attention->outputs[0] = output_transpose.outputs[0];
    if (same_shape_view != nullptr) rewriter_.remove(*same_shape_view);
    rewriter_.remove(output_transpose);
  }

  // opgraph::rotary_embedding with rank-4 cos and sin, which transpose as
  // its input does.
  bool rotates_heads(const Node* node) const {
    if (node == nullptr || op_of(*node) != rotary_embedding_) return false;
    for (size_t k : {1, 2}) {
      const std::string* trig = single_value(node->inputs[k]);
      if (trig == nullptr || !values_.contains(*trig) || values_.at(*trig).shape.size() != 4) return false;
    }
    return true;
  }

  // transpose(value, 1, 2), one node per value, right after value's producer.
  NodeInput heads_second(const NodeInput& input) {
    const std::string& value = input.values[0];
    auto [it, added] = transposed_.try_emplace(value);
    if (added) {
      it->second = rewriter_.fresh_name(value + "_heads_second");
      rewriter_.insert_after(rewriter_.producer(value), Node{.name = it->second,
                                                             .op_type = transpose_->name(),
                                                             .inputs = {input},
                                                             .outputs = {it->second},
                                                             .attrs = {{"dim0", int64_t{1}}, {"dim1", int64_t{2}}}});
    }
    return NodeInput::value(it->second);
  }

  // aten::transpose.int(x, 1, 2) of a rank-4 x.
  bool swaps_sequence_and_heads(const Node* node) const {
    if (node == nullptr || op_of(*node) != transpose_ || node->inputs.size() != 1) return false;
    const std::optional<Attrs> attrs = bound_attrs(*node, registry_);
    const std::string* input = single_value(node->inputs[0]);
    if (!attrs || input == nullptr || !values_.contains(*input) || values_.at(*input).shape.size() != 4) return false;
    int64_t dim0 = attrs->get<int64_t>("dim0"), dim1 = attrs->get<int64_t>("dim1");
    dim0 += dim0 < 0 ? 4 : 0;
    dim1 += dim1 < 0 ? 4 : 0;
    return std::min(dim0, dim1) == 1 && std::max(dim0, dim1) == 2;
  }

  const OpDef* const attention_ = op("aten::scaled_dot_product_attention");
  const OpDef* const transpose_ = op("aten::transpose.int");
  const OpDef* const expand_ = op("aten::expand");
  const OpDef* const unsqueeze_ = op("aten::unsqueeze");
  const OpDef* const rotary_embedding_ = op("opgraph::rotary_embedding");
  const OpDef* const attention_bshd_ = op("opgraph::attention_bshd");
  std::unordered_map<std::string, std::string> transposed_;  // cos and sin, and their transposes
};

}  // namespace

void use_heads_second_attention(PassContext& context) { AttentionLayout(context).run(); }

}  // namespace opgraph
