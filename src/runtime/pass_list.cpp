// The pass list: every graph pass a Session makes at load, in order, in one
// table. Adding a pass takes its file (graph/passes/ for rewrites any device
// could use, beside the kernels whose rules it encodes otherwise, as
// kernels/cpu/passes/), its line here and its test.
#include "runtime/pass_list.h"

#include <algorithm>
#include <initializer_list>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/passes.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

struct Pass {
  const char* name;
  PassFn run;
  std::initializer_list<DeviceType> devices;
  const char* summary;
};

constexpr std::initializer_list<DeviceType> kCpu = {DeviceType::CPU};

// The order matters: each pass sees what the ones before it made (the
// activation fusion sees 2-D convolutions, the epilogue fusion blocked ones).
const Pass kPasses[] = {
    {"convolutions_as_conv2d", convolutions_as_conv2d, kCpu,
     "aten::convolution that is a 2-D convolution (not transposed, a constant 4-D weight) becomes aten::conv2d"},
    {"convolutions_1d_as_2d", convolutions_1d_as_2d, kCpu,
     "aten::conv1d of a 3-D input by a constant weight becomes aten::conv2d of its [N, C, 1, W] form, the "
     "activations after it running on the 4-D result too"},
    {"fold_batch_norms", fold_batch_norms, kCpu,
     "an inference batch norm after a 2-D convolution, with constant weight, bias and statistics, is folded into "
     "the convolution's weight and bias"},
    {"drop_empty_cat_operands", drop_empty_cat_operands, kCpu,
     "aten::cat drops operands with no elements (the empty key-value cache of a decoder exported with "
     "use_cache=True) and the views that made them for it; with one left, its producer computes the cat's output"},
    {"fuse_tanh_gelu", fuse_tanh_gelu, kCpu,
     "GELU's tanh form written out as eight elementwise nodes (GPT-2, Phi) becomes aten::gelu(approximate='tanh')"},
    {"fuse_rms_norms", fuse_rms_norms, kCpu,
     "x * rsqrt(mean(x^2, -1, keepdim=True) + eps), times a constant weight or not (Llama, Mistral, Qwen, T5), "
     "becomes aten::rms_norm"},
    {"fuse_rotary_embeddings", fuse_rotary_embeddings, kCpu,
     "x * cos + cat(-x2, x1) * sin over the halves of x's last dim (transformers' apply_rotary_pos_emb) becomes "
     "opgraph::rotary_embedding"},
    {"fuse_quantized_linears", fuse_quantized_linears, kCpu,
     "a linear layer by a constant weight that torchao or a pt2e quantizer dequantizes (dequantize_affine with a "
     "scale per output and group of inputs, dequantize_per_channel, or an int8 product scaled per output) becomes "
     "opgraph::quantized_linear on the integer levels"},
    {"fuse_activations", fuse_activations, kCpu,
     "relu, gelu, sigmoid, tanh, silu or relu6 after a 2-D convolution, a linear layer or an addmm with a constant "
     "bias and weight (through a reshape or not) is applied by it as it writes: opgraph::conv2d, opgraph::linear, "
     "opgraph::gemm"},
    {"use_heads_second_attention", use_heads_second_attention, kCpu,
     "scaled_dot_product_attention between transposes of dims 1 and 2 (repeat_kv and rotary embeddings included) "
     "becomes opgraph::attention_bshd on the tensors before them; the transposes go"},
    {"use_nchwc_layout", use_nchwc_layout, kCpu,
     "chains of float32 2-D convolutions with constant weights run on channel-blocked or channels-last "
     "activations (opgraph::conv2d_nchwc), with the elementwise ops and max pooling between them; values convert "
     "back where another node or the caller reads them"},
    {"fuse_product_epilogues", fuse_product_epilogues, kCpu,
     "add(product, shortcut) and an activation after it become the blocked convolution's or linear layer's "
     "residual and activation; mul(linear layer, gate) becomes the linear layer's multiplier (SwiGLU)"},
};

// The nodes of a graph by name, to tell what a pass changed.
std::unordered_map<std::string, Node> nodes_by_name(const Graph& graph) {
  std::unordered_map<std::string, Node> nodes;
  for (const Node& node : graph.nodes) nodes.emplace(node.name, node);
  return nodes;
}

PassReport report_change(const Pass& pass, const std::unordered_map<std::string, Node>& before, const Graph& after) {
  PassReport report;
  report.pass = pass.name;
  std::unordered_set<std::string> kept;
  for (const Node& node : after.nodes) {
    kept.insert(node.name);
    auto it = before.find(node.name);
    if (it == before.end() || !(it->second == node)) report.rewritten.push_back(node.name + ": " + node.op_type);
  }
  for (const auto& [name, node] : before) report.removed += kept.contains(name) ? 0 : 1;
  return report;
}

}  // namespace

void check_pass_names(const std::vector<std::string>& disabled) {
  for (const std::string& name : disabled) {
    const bool known = std::ranges::any_of(kPasses, [&](const Pass& pass) { return name == pass.name; });
    if (known) continue;
    std::string names;
    for (const Pass& pass : kPasses) names += (names.empty() ? "" : ", ") + std::string(pass.name);
    throw Error(detail::concat("disabled_passes: no pass is named '", name, "'; the passes are: ", names));
  }
}

const std::vector<PassInfo>& graph_passes() {
  static const std::vector<PassInfo> passes = [] {
    std::vector<PassInfo> infos;
    for (const Pass& pass : kPasses) infos.push_back({pass.name, pass.summary, pass.devices});
    return infos;
  }();
  return passes;
}

std::vector<PassReport> run_passes(PassContext& context, const PassOptions& options) {
  check_pass_names(options.disabled);
  std::vector<PassReport> reports;
  for (const Pass& pass : kPasses) {
    const bool disabled = std::ranges::find(options.disabled, pass.name) != options.disabled.end();
    if (disabled || std::ranges::find(pass.devices, options.device.type) == pass.devices.end()) {
      reports.push_back({.pass = pass.name, .rewritten = {}, .removed = 0, .skipped = true});
      continue;
    }
    const std::unordered_map<std::string, Node> before = nodes_by_name(context.graph);
    const size_t constants = context.graph.constants.size();
    context.pass = pass.name;
    pass.run(context);
    reports.push_back(report_change(pass, before, context.graph));
    if (reports.back().changed() || context.graph.constants.size() != constants) {
      context.graph_changed();
    } else {
      context.nodes_moved();
    }
  }
  context.pass = {};
  return reports;
}

std::vector<PassReport> optimize(Graph& graph, Weights& weights, const PassOptions& options, const Registry& registry) {
  PassContext context(graph, weights, registry, options.precision, options.weights);
  context.resolved();  // so that what is wrong with a graph is reported as it was given
  return run_passes(context, options);
}

}  // namespace opgraph
