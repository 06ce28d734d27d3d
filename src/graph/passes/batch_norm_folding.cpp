// An inference batch norm after a 2-D convolution, with constant weight,
// bias and statistics, is folded into the convolution's weight and bias.
#include <cmath>
#include <optional>
#include <utility>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace opgraph {
namespace {

// eps of a batch norm for inference whose only used output is the
// normalized tensor (`maybe_training`: aten::batch_norm, which says in its
// attributes whether it is one); nullopt otherwise.
std::optional<double> inference_norm_eps(const Node& node, bool maybe_training, const Registry& registry,
                                         const Rewriter& rewriter) {
  for (size_t k = 1; k < node.outputs.size(); ++k) {
    if (rewriter.uses(node.outputs[k]) > 0) return std::nullopt;
  }
  const std::optional<Attrs> attrs = bound_attrs(node, registry);
  if (!attrs || (maybe_training && attrs->get<bool>("training"))) return std::nullopt;
  return attrs->get<double>("eps");
}

// weight[o, ...] * scale[o] and (bias[o] - mean[o]) * scale[o] + shift[o],
// with scale = gamma / sqrt(var + eps) and shift = beta, in double.
template <typename T>
std::pair<Tensor, Tensor> fold(const Tensor& weight, const Tensor& bias, const Tensor& gamma, const Tensor& beta,
                               const Tensor& mean, const Tensor& var, double eps) {
  const int64_t channels = weight.size(0), per_channel = weight.numel() / std::max<int64_t>(channels, 1);
  Tensor folded_weight = Tensor::empty(weight.shape(), weight.dtype());
  Tensor folded_bias = Tensor::empty({channels}, weight.dtype());
  auto at = [](const Tensor& t, int64_t o, double absent) { return t.defined() ? double(t.data_ptr<T>()[o]) : absent; };
  for (int64_t o = 0; o < channels; ++o) {
    const double scale = at(gamma, o, 1.0) / std::sqrt(at(var, o, 0.0) + eps);
    for (int64_t i = o * per_channel; i < (o + 1) * per_channel; ++i) {
      folded_weight.data_ptr<T>()[i] = static_cast<T>(weight.data_ptr<T>()[i] * scale);
    }
    folded_bias.data_ptr<T>()[o] = static_cast<T>((at(bias, o, 0.0) - at(mean, o, 0.0)) * scale + at(beta, o, 0.0));
  }
  return {folded_weight, folded_bias};
}

// Whether every defined one of `params` is a vector of `channels` of `dtype`.
bool channel_vectors(std::initializer_list<const Tensor*> params, int64_t channels, DType dtype) {
  for (const Tensor* t : params) {
    if (t->defined() && (t->dtype() != dtype || t->shape() != Shape{channels})) return false;
  }
  return true;
}

}  // namespace

void fold_batch_norms(PassContext& context) {
  const OpDef* const batch_norm = context.op("aten::batch_norm");
  const OpDef* const inference_batch_norm = context.op("aten::_native_batch_norm_legit_no_training");
  const OpDef* const conv2d = context.op("aten::conv2d");
  Graph& graph = context.graph;
  Rewriter rewriter(context);
  rewriter.for_each_node([&](size_t i) {
    const Node& norm = graph.nodes[i];
    const OpDef* op = context.op_of(norm);
    if ((op != batch_norm && op != inference_batch_norm) || norm.inputs.size() != 5) return;
    const std::optional<double> eps = inference_norm_eps(norm, op == batch_norm, context.registry, rewriter);
    if (!eps) return;
    Node* conv = rewriter.sole_producer(norm.inputs[0]);
    if (conv == nullptr || context.op_of(*conv) != conv2d || conv->inputs.size() != 3) return;
    const std::optional<Tensor> weight = rewriter.constant(conv->inputs[1]), bias = rewriter.constant(conv->inputs[2]);
    const std::optional<Tensor> gamma = rewriter.constant(norm.inputs[1]), beta = rewriter.constant(norm.inputs[2]);
    const std::optional<Tensor> mean = rewriter.constant(norm.inputs[3]), var = rewriter.constant(norm.inputs[4]);
    if (!weight || !bias || !gamma || !beta || !mean || !var) return;
    if (!weight->defined() || !mean->defined() || !var->defined() || weight->dim() < 1) return;
    const DType dtype = weight->dtype();
    if ((dtype != DType::Float32 && dtype != DType::Float64) ||
        !channel_vectors({&*bias, &*gamma, &*beta, &*mean, &*var}, weight->size(0), dtype)) {
      return;  // left as it is: shape inference reports what is wrong with it
    }
    const auto [folded_weight, folded_bias] = dtype == DType::Float32
                                                  ? fold<float>(*weight, *bias, *gamma, *beta, *mean, *var, *eps)
                                                  : fold<double>(*weight, *bias, *gamma, *beta, *mean, *var, *eps);
    conv->inputs[1] = NodeInput::value(rewriter.add_constant(norm.outputs[0] + ".folded_weight", folded_weight));
    conv->inputs[2] = NodeInput::value(rewriter.add_constant(norm.outputs[0] + ".folded_bias", folded_bias));
    rewriter.absorb(*conv, i);
  });
  rewriter.finish();
}

}  // namespace opgraph
