// The rotary position embedding written out, as transformers'
// apply_rotary_pos_emb computes it for q and k (Llama, Mistral, Qwen, Phi,
// GPT-NeoX):
//
//   x * cos + cat(-x[..., h:], x[..., :h]) * sin          (h: half of x's last dim)
//
// torch.export records seven nodes, each a pass over q or k; one
// opgraph::rotary_embedding computes the same in one.
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {
namespace {

class RotaryEmbeddings : RewritingPass {
 public:
  using RewritingPass::RewritingPass;

  void run() {
    rewriter_.for_each_node([&](size_t i) { rewrite(graph_.nodes[i]); });
    rewriter_.finish();
  }

 private:
  // At the add of the two products.
  void rewrite(Node& add) {
    if (op_of(add) != add_ || add.inputs.size() != 2) return;
    const std::optional<Attrs> attrs = bound_attrs(add, registry_);
    if (!attrs || scalar_attr(*attrs, "alpha") != 1.0) return;
    for (int rotated_side : {0, 1}) {
      matched_.clear();
      const Node* rotated_product = producer(add.inputs[rotated_side], mul_);
      const Node* plain_product = producer(add.inputs[1 - rotated_side], mul_);
      if (rotated_product == nullptr || plain_product == nullptr) continue;
      const size_t products = matched_.size();
      for (int x_side : {0, 1}) {
        matched_.resize(products);
        const std::string* x = single_value(plain_product->inputs[x_side]);
        const std::string* cos = single_value(plain_product->inputs[1 - x_side]);
        const std::string* sin = rotation_factor(*rotated_product, x);
        if (x == nullptr || cos == nullptr || sin == nullptr || !fits(*x, *cos, *sin, add.outputs[0])) continue;
        for (const Node* node : matched_) rewriter_.remove(*node);
        add.op_type = rotary_embedding_->name();
        add.inputs = {NodeInput::value(*x), NodeInput::value(*cos), NodeInput::value(*sin)};
        add.attrs.clear();
        return;
      }
    }
  }

  // The sin of mul(rotate_half(x), sin) either way round; null otherwise.
  const std::string* rotation_factor(const Node& product, const std::string* x) {
    if (x == nullptr) return nullptr;
    const size_t before = matched_.size();
    for (int rotated_side : {0, 1}) {
      if (is_rotate_half(product.inputs[rotated_side], *x)) return single_value(product.inputs[1 - rotated_side]);
      matched_.resize(before);
    }
    return nullptr;
  }

  // cat([neg(x[..., h:]), x[..., :h]], dim=-1), each read by the next alone.
  bool is_rotate_half(const NodeInput& input, const std::string& x) {
    const Node* cat = producer(input, cat_);
    if (cat == nullptr || cat->inputs.empty() || !cat->inputs[0].is_list || cat->inputs[0].values.size() != 2 ||
        !values_.contains(x)) {
      return false;
    }
    const SymbolicShape& shape = values_.at(x).shape;
    if (shape.empty() || shape.back().is_symbolic() || shape.back().size % 2 != 0) return false;
    const int64_t rank = static_cast<int64_t>(shape.size()), half = shape.back().size / 2;
    const std::optional<Attrs> cat_attrs = bound_attrs(*cat, registry_);
    if (!cat_attrs || !is_last(cat_attrs->get<int64_t>("dim"), rank)) return false;
    const Node* neg = producer(NodeInput::value(cat->inputs[0].values[0]), neg_);
    return neg != nullptr && is_slice(neg->inputs[0], x, half, 2 * half) &&
           is_slice(NodeInput::value(cat->inputs[0].values[1]), x, 0, half);
  }

  // x[..., begin:end] along the last dim; an end past the last feature
  // stands for the last.
  bool is_slice(const NodeInput& input, const std::string& x, int64_t begin, int64_t end) {
    const Node* slice = producer(input, slice_);
    if (slice == nullptr) return false;
    const std::string* sliced = single_value(slice->inputs[0]);
    const std::optional<Attrs> attrs = bound_attrs(*slice, registry_);
    if (sliced == nullptr || *sliced != x || !attrs) return false;
    const AttrValue &start = attrs->get("start"), &stop = attrs->get("end");
    const SymbolicShape& shape = values_.at(x).shape;
    const int64_t rank = static_cast<int64_t>(shape.size()), features = shape.back().size;
    const int64_t first = std::holds_alternative<int64_t>(start) ? std::get<int64_t>(start) : 0;
    const int64_t last = std::holds_alternative<int64_t>(stop) ? std::get<int64_t>(stop) : INT64_MAX;
    return is_last(attrs->get<int64_t>("dim"), rank) && attrs->get<int64_t>("step") == 1 && first == begin &&
           (last == end || (end == features && last > features));
  }

  // Whether the fused op computes what the nodes did: cos and sin of one
  // shape and x's dtype, with x's features, broadcasting to x's shape,
  // which is the sum's.
  bool fits(const std::string& x, const std::string& cos, const std::string& sin, const std::string& sum) const {
    for (const std::string* value : {&x, &cos, &sin, &sum}) {
      if (!values_.contains(*value)) return false;
    }
    const ValueInfo &input = values_.at(x), &c = values_.at(cos), &s = values_.at(sin);
    return c.dtype == input.dtype && s.dtype == input.dtype && c.shape == s.shape && !c.shape.empty() &&
           c.shape.back() == input.shape.back() && values_.at(sum).shape == input.shape &&
           values_.at(sum).dtype == input.dtype;
  }

  static bool is_last(int64_t dim, int64_t rank) { return dim == -1 || dim == rank - 1; }

  const Node* producer(const NodeInput& input, const OpDef* kind) {
    return rewriter_.sole_producer(input, kind, matched_);
  }

  const OpDef* const add_ = op("aten::add.Tensor");
  const OpDef* const mul_ = op("aten::mul.Tensor");
  const OpDef* const cat_ = op("aten::cat");
  const OpDef* const neg_ = op("aten::neg");
  const OpDef* const slice_ = op("aten::slice.Tensor");
  const OpDef* const rotary_embedding_ = op("opgraph::rotary_embedding");
  std::vector<const Node*> matched_;
};

}  // namespace

void fuse_rotary_embeddings(PassContext& context) { RotaryEmbeddings(context).run(); }

}  // namespace opgraph
