// GELU's tanh form written out, as transformers' NewGELUActivation (GPT-2,
// GPT-J, CodeGen, Phi) computes it:
//
//   0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//
// which torch.export records as eight elementwise nodes, each a pass over the
// MLP's widest tensor (a twentieth of GPT-2's time). One aten::gelu with
// approximate="tanh" computes the same in one pass.
#include <cmath>
#include <numbers>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {
namespace {

class TanhGelu {
 public:
  TanhGelu(const PassContext& context, Rewriter& rewriter) : context_(context), rewriter_(rewriter) {}

  // The x that `node`, a mul.Tensor, computes the tanh GELU of, with the
  // pattern's other nodes in `matched`; nullopt if it does not.
  std::optional<std::string> match(const Node& node) {
    matched_.clear();
    if (context_.op_of(node) != mul_ || node.inputs.size() != 2) return std::nullopt;
    for (int first : {0, 1}) {
      const std::string* x = half_of(node.inputs[first]);
      if (x != nullptr && is_tanh_term(node.inputs[1 - first], *x)) return *x;
      matched_.clear();
    }
    return std::nullopt;
  }

  const std::vector<const Node*>& matched() const { return matched_; }

  // What the pattern becomes.
  const OpDef* gelu() const { return gelu_; }

 private:
  const Node* producer(const NodeInput& input, const OpDef* kind) {
    return rewriter_.sole_producer(input, kind, matched_);
  }

  // The tensor of a binary node whose other operand is a 0-d constant equal
  // to `value` (to float32's precision); null otherwise.
  const std::string* times_constant(const Node* node, double value) const {
    if (node == nullptr || node->inputs.size() != 2 || !has_unit_alpha(*node)) return nullptr;
    for (int tensor : {0, 1}) {
      const std::optional<Tensor> constant = rewriter_.constant(node->inputs[1 - tensor]);
      if (!constant || !constant->defined() || constant->numel() != 1 || constant->dtype() != DType::Float32) continue;
      if (std::abs(constant->data_ptr<float>()[0] - value) <= 1e-6 * std::abs(value)) {
        return single_value(node->inputs[tensor]);
      }
    }
    return nullptr;
  }

  // add.Tensor's alpha is 1 (mul.Tensor has none).
  bool has_unit_alpha(const Node& node) const {
    if (context_.op_of(node) != add_) return true;
    const std::optional<Attrs> attrs = bound_attrs(node, context_.registry);
    return attrs && scalar_attr(*attrs, "alpha") == 1.0;
  }

  // 0.5 * x
  const std::string* half_of(const NodeInput& input) { return times_constant(producer(input, mul_), 0.5); }

  // 1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))
  bool is_tanh_term(const NodeInput& input, const std::string& x) {
    const std::string* tanh_value = times_constant(producer(input, add_), 1.0);
    if (tanh_value == nullptr) return false;
    const Node* tanh = producer(NodeInput::value(*tanh_value), tanh_);
    if (tanh == nullptr) return false;
    const double sqrt_2_over_pi = std::numbers::sqrt2 / std::sqrt(std::numbers::pi);
    const std::string* sum = times_constant(producer(tanh->inputs[0], mul_), sqrt_2_over_pi);
    if (sum == nullptr) return false;
    const Node* add = producer(NodeInput::value(*sum), add_);
    if (add == nullptr || add->inputs.size() != 2 || !has_unit_alpha(*add)) return false;
    for (int x_side : {0, 1}) {
      const std::string* plain = single_value(add->inputs[x_side]);
      if (plain == nullptr || *plain != x) continue;
      const std::string* cube = times_constant(producer(add->inputs[1 - x_side], mul_), 0.044715);
      return cube != nullptr && is_cube_of(*cube, x);
    }
    return false;
  }

  // x^3, as pow.Tensor_Scalar(x, 3)
  bool is_cube_of(const std::string& value, const std::string& x) {
    const Node* pow = producer(NodeInput::value(value), pow_);
    if (pow == nullptr || pow->inputs.size() != 1) return false;
    const std::string* base = single_value(pow->inputs[0]);
    if (base == nullptr || *base != x) return false;
    const std::optional<Attrs> attrs = bound_attrs(*pow, context_.registry);
    return attrs && scalar_attr(*attrs, "exponent") == 3.0;
  }

  const PassContext& context_;
  Rewriter& rewriter_;
  const OpDef* const mul_ = context_.op("aten::mul.Tensor");
  const OpDef* const add_ = context_.op("aten::add.Tensor");
  const OpDef* const tanh_ = context_.op("aten::tanh");
  const OpDef* const pow_ = context_.op("aten::pow.Tensor_Scalar");
  const OpDef* const gelu_ = context_.op("aten::gelu");
  std::vector<const Node*> matched_;
};

}  // namespace

void fuse_tanh_gelu(PassContext& context) {
  Graph& graph = context.graph;
  Rewriter rewriter(context);
  TanhGelu pattern(context, rewriter);
  rewriter.for_each_node([&](size_t i) {
    Node& node = graph.nodes[i];
    const std::optional<std::string> x = pattern.match(node);
    if (!x) return;
    for (const Node* matched : pattern.matched()) rewriter.remove(*matched);
    node.op_type = pattern.gelu()->name();
    node.inputs = {NodeInput::value(*x)};
    node.attrs = {{"approximate", std::string("tanh")}};
  });
  rewriter.finish();
}

}  // namespace opgraph
