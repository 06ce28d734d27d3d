// RMS normalization written out, as transformers' LlamaRMSNorm (Llama,
// Mistral, Qwen, SmolLM) and T5LayerNorm compute it, and as PyTorch
// decomposes torch.nn.RMSNorm:
//
//   x * rsqrt(mean(x^2, dim=-1, keepdim=True) + eps)      [* weight]
//
// torch.export records five or six nodes, each a pass over the hidden state,
// twice per decoder layer; one aten::rms_norm does it in one.
#include <cmath>
#include <optional>
#include <unordered_map>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {
namespace {

class RmsNorms : RewritingPass {
 public:
  using RewritingPass::RewritingPass;

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      Node& mul = graph_.nodes[i];
      if (op_of(mul) != mul_ || mul.inputs.size() != 2) return;
      if (!take_weight(mul, i)) normalize(mul);
    });
    rewriter_.finish();
  }

 private:
  // mul(x, rsqrt(...)) becomes aten::rms_norm(x) over x's last dim.
  void normalize(Node& mul) {
    for (int x_side : {0, 1}) {
      const std::string* x = single_value(mul.inputs[x_side]);
      if (x == nullptr || !values_.contains(*x)) continue;
      const ValueInfo& info = values_.at(*x);
      if ((info.dtype != DType::Float32 && info.dtype != DType::Float64) || info.shape.empty() ||
          info.shape.back().is_symbolic()) {
        continue;
      }
      std::vector<const Node*> matched;
      const std::optional<double> eps = inverse_rms_eps(mul.inputs[1 - x_side], *x, matched);
      if (!eps) continue;
      for (const Node* node : matched) rewriter_.remove(*node);
      mul.op_type = rms_norm_->name();
      mul.inputs = {NodeInput::value(*x), NodeInput::none()};
      mul.attrs = {{"normalized_shape", std::vector<int64_t>{info.shape.back().size}}, {"eps", *eps}};
      return;
    }
  }

  // mul(weight, rms_norm(x)) either way round, with a constant weight of
  // the normalized shape and x's dtype, becomes the norm's weight.
  bool take_weight(Node& mul, size_t i) {
    for (int norm_side : {0, 1}) {
      Node* norm = rewriter_.sole_producer(mul.inputs[norm_side]);
      if (norm == nullptr || op_of(*norm) != rms_norm_ || !norm->inputs[1].is_none()) continue;
      const std::optional<Attrs> norm_attrs = bound_attrs(*norm, registry_);
      if (!norm_attrs || norm_attrs->get<std::vector<int64_t>>("normalized_shape").size() != 1) continue;
      const std::optional<Tensor> weight = rewriter_.constant(mul.inputs[1 - norm_side]);
      const ValueInfo& x = values_.at(norm->inputs[0].values[0]);
      if (!weight || !weight->defined() || weight->dtype() != x.dtype || weight->dim() != 1 ||
          weight->size(0) != x.shape.back().size) {
        continue;
      }
      norm->inputs[1] = mul.inputs[1 - norm_side];
      std::swap(mul.inputs[0], mul.inputs[norm_side]);  // absorb() follows the first input to the norm
      rewriter_.absorb(*norm, i);
      return true;
    }
    return false;
  }

  // The eps of rsqrt(mean(pow(x, 2), [-1], keepdim=True) + eps), each node
  // read by the next alone, which go into `matched`; nullopt if `input` is
  // not that.
  std::optional<double> inverse_rms_eps(const NodeInput& input, const std::string& x,
                                        std::vector<const Node*>& matched) {
    const Node* rsqrt = rewriter_.sole_producer(input, rsqrt_, matched);
    const Node* add = rsqrt == nullptr ? nullptr : rewriter_.sole_producer(rsqrt->inputs[0], add_, matched);
    if (add == nullptr || add->inputs.size() != 2) return std::nullopt;
    const std::optional<Attrs> add_attrs = bound_attrs(*add, registry_);
    if (!add_attrs || scalar_attr(*add_attrs, "alpha") != 1.0) return std::nullopt;
    for (int mean_side : {0, 1}) {
      const std::optional<double> eps = scalar_constant(add->inputs[1 - mean_side]);
      if (eps && is_mean_square(add->inputs[mean_side], x, matched)) return eps;
    }
    return std::nullopt;
  }

  // mean.dim(pow(x, 2), [-1 or the last], keepdim=True, dtype=None)
  bool is_mean_square(const NodeInput& input, const std::string& x, std::vector<const Node*>& matched) {
    const Node* mean = rewriter_.sole_producer(input, mean_, matched);
    if (mean == nullptr) return false;
    const std::optional<Attrs> mean_attrs = bound_attrs(*mean, registry_);
    const int64_t rank = static_cast<int64_t>(values_.at(x).shape.size());
    if (!mean_attrs || !mean_attrs->get<bool>("keepdim") ||
        !std::holds_alternative<std::monostate>(mean_attrs->get("dtype"))) {
      return false;
    }
    const auto& dims = mean_attrs->get<std::vector<int64_t>>("dim");
    if (dims.size() != 1 || (dims[0] != -1 && dims[0] != rank - 1)) return false;
    const Node* pow = rewriter_.sole_producer(mean->inputs[0], pow_, matched);
    if (pow == nullptr) return false;
    const std::string* base = single_value(pow->inputs[0]);
    const std::optional<Attrs> pow_attrs = bound_attrs(*pow, registry_);
    return base != nullptr && *base == x && pow_attrs && scalar_attr(*pow_attrs, "exponent") == 2.0;
  }

  // The value of a one-element floating constant.
  std::optional<double> scalar_constant(const NodeInput& input) const {
    const std::optional<Tensor> constant = rewriter_.constant(input);
    if (!constant || !constant->defined() || constant->numel() != 1) return std::nullopt;
    if (constant->dtype() == DType::Float32) return constant->data_ptr<float>()[0];
    if (constant->dtype() == DType::Float64) return constant->data_ptr<double>()[0];
    return std::nullopt;
  }

  const OpDef* const mul_ = op("aten::mul.Tensor");
  const OpDef* const add_ = op("aten::add.Tensor");
  const OpDef* const rsqrt_ = op("aten::rsqrt");
  const OpDef* const mean_ = op("aten::mean.dim");
  const OpDef* const pow_ = op("aten::pow.Tensor_Scalar");
  const OpDef* const rms_norm_ = op("aten::rms_norm");
};

}  // namespace

void fuse_rms_norms(PassContext& context) { RmsNorms(context).run(); }

}  // namespace opgraph
