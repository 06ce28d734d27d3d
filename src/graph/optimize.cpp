#include "opgraph/graph/optimize.h"

#include "graph/passes/rewrite.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace opgraph {
namespace {

// ---- convolutions as conv2d ---------------------------------------------------

// aten::convolution, as a decomposed graph has it, becomes aten::conv2d where
// it is one (not transposed, a constant 4-D weight), for the rewrites below.
void convolutions_as_conv2d(Graph& graph, const Registry& registry) {
  std::unordered_map<std::string, size_t> rank;  // of each constant
  for (const ValueInfo& constant : graph.constants) rank[constant.name] = constant.shape.size();
  for (Node& node : graph.nodes) {
    if (node.op_type != "aten::convolution" || node.inputs.size() != 3) continue;
    const std::string* weight = single_value(node.inputs[1]);
    if (weight == nullptr || !rank.contains(*weight) || rank[*weight] != 4) continue;
    const std::optional<Attrs> attrs = bound_attrs(node, registry);
    if (!attrs || attrs->get<bool>("transposed")) continue;
    node.op_type = "aten::conv2d";
    node.attrs.clear();
    for (const char* name : {"stride", "padding", "dilation", "groups"}) node.attrs.push_back({name, attrs->get(name)});
  }
}

// ---- empty operands of cat ---------------------------------------------------

// A slice or a reshape: a view of its input, which does nothing else.
bool is_view(const Node& node, const Registry& registry) {
  const OpDef* op = registry.find(node.op_type);
  return node.op_type == "aten::slice.Tensor" || (op != nullptr && op->reshapes_input);
}

// aten::cat drops operands with no elements: the empty key-value cache that a
// transformers decoder exported with use_cache=True concatenates its keys and
// values to. With one operand left, its producer computes the cat's output
// itself, and the rewrites after it see what feeds the attention.
void drop_empty_cat_operands(Graph& graph, Weights& weights, const Registry& registry) {
  const std::unordered_map<std::string, ValueInfo> values = infer_shapes(graph, registry);
  const auto empty = [&](const std::string& value) {
    const SymbolicShape& shape = values.at(value).shape;
    return std::any_of(shape.begin(), shape.end(), [](const Dim& d) { return !d.is_symbolic() && d.size == 0; });
  };
  Rewriter rewriter(graph, weights);
  rewriter.for_each_node([&](size_t i) {
    Node& cat = graph.nodes[i];
    if (cat.op_type != "aten::cat" || cat.inputs.empty() || !cat.inputs[0].is_list) return;
    std::vector<std::string>& operands = cat.inputs[0].values;
    const DType dtype = values.at(cat.outputs[0]).dtype;
    // Dropping an operand of another dtype could change the promoted result's.
    const bool one_dtype = std::all_of(operands.begin(), operands.end(),
                                       [&](const std::string& value) { return values.at(value).dtype == dtype; });
    const auto kept = std::count_if(operands.begin(), operands.end(), [&](const std::string& v) { return !empty(v); });
    if (!one_dtype || kept == 0 || kept == static_cast<std::ptrdiff_t>(operands.size())) return;
    for (const std::string& value : operands) {
      // A view that made the empty operand for the cat alone goes too: Phi-3
      // concatenates the rotated features to the slice of those it passes
      // through, none where it rotates them all, and that slice would keep
      // the attention rewrite from seeing q and k read once.
      const Node* producer = rewriter.producer(value);
      if (empty(value) && producer != nullptr && rewriter.uses(value) == 1 && producer->outputs.size() == 1 &&
          is_view(*producer, registry)) {
        rewriter.remove(*producer);
      }
    }
    std::erase_if(operands, empty);
    if (operands.size() != 1) return;
    Node* producer = rewriter.sole_producer(NodeInput::value(operands[0]));
    if (producer != nullptr && producer->outputs.size() == 1) rewriter.absorb(*producer, i);
  });
  rewriter.finish();
}

// ---- batch norm folding ----------------------------------------------------

// eps of an inference batch norm whose only used output is the normalized
// tensor; nullopt for any other node.
std::optional<double> inference_norm_eps(const Node& node, const Registry& registry, const Rewriter& rewriter) {
  const bool maybe_training = node.op_type == "aten::batch_norm";
  if (!maybe_training && node.op_type != "aten::_native_batch_norm_legit_no_training") return std::nullopt;
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

void fold_batch_norms(Graph& graph, Weights& weights, const Registry& registry) {
  Rewriter rewriter(graph, weights);
  rewriter.for_each_node([&](size_t i) {
    const Node& norm = graph.nodes[i];
    const std::optional<double> eps = inference_norm_eps(norm, registry, rewriter);
    if (!eps || norm.inputs.size() != 5) return;
    Node* conv = rewriter.sole_producer(norm.inputs[0]);
    if (conv == nullptr || conv->op_type != "aten::conv2d" || conv->inputs.size() != 3) return;
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

// ---- activation fusion -------------------------------------------------------

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

void fuse_activations(Graph& graph, Weights& weights, const Registry& registry) {
  Rewriter rewriter(graph, weights);
  rewriter.for_each_node([&](size_t i) {
    const Node& activation = graph.nodes[i];
    const std::optional<std::string> name = activation_of(activation, registry);
    if (!name || activation.inputs.size() != 1) return;
    Node* producer = rewriter.sole_producer(activation.inputs[0]);
    // An elementwise activation of a reshaped product is the reshaped
    // activated product (GPT-2's Conv1D views its addmm's rows back into
    // [batch, sequence, features] before the GELU).
    Node* reshape = nullptr;
    if (producer != nullptr && !producer->inputs.empty()) {
      const OpDef* op = registry.find(producer->op_type);
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
    } else if (!addmm_as_gemm(*producer, registry, rewriter)) {
      return;
    }
    producer->attrs.push_back({"activation", *name});
    rewriter.absorb(reshape != nullptr ? *reshape : *producer, i);
  });
  rewriter.finish();
}

}  // namespace

void optimize(Graph& graph, Weights& weights, const Registry& registry, Precision precision) {
  verify_structure(graph);  // so that what is wrong with a graph is reported as it was given
  convolutions_as_conv2d(graph, registry);
  convolutions_1d_as_2d(graph, weights, registry);
  fold_batch_norms(graph, weights, registry);
  drop_empty_cat_operands(graph, weights, registry);
  fuse_tanh_gelu(graph, weights, registry);
  fuse_rms_norms(graph, weights, registry);
  fuse_rotary_embeddings(graph, weights, registry);
  fuse_activations(graph, weights, registry);
  use_heads_second_attention(graph, weights, registry);
  use_nchwc_layout(graph, registry, precision);
  fuse_product_epilogues(graph, weights, registry);
}

}  // namespace opgraph
