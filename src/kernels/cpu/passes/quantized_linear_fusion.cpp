// The linear layers of a graph quantized by torchao or by a pt2e quantizer,
// which dequantize a constant weight into floats and multiply by them,
// become opgraph::quantized_linear, which multiplies by the integer levels as
// they are (engines/weight_panels.h). The forms torch.export leaves:
//
//   linear(x, dequantize_affine(q, [1, group], scale, zero_point), bias)
//     torchao's int-x weight-only and 8da4w / 8da8w configs: a scale per
//     output and group of inputs;
//   linear(x, dequantize_per_channel(q, scales, zero_points, axis=0), bias)
//     the X86Inductor and XNNPACK quantizers' weights: a scale per output;
//   mul(mm(x, _to_copy(t(q), float32)), view(scale))
//     its int8 weight-only config: the product by the levels, then a scale
//     per output.
//
// Levels in [-8, 7] are stored two to a byte, as int4; others as int8.
// uint8 levels (torchao's uint4 and uint8 asymmetric ones) become int8 ones
// less 8, or less 128, their zero points with them. Zero points become
// quantized_linear's (int8); a layer whose zero points are not integers
// that fit, or whose groups the panels cannot take (a multiple of 32
// inputs, or all of them), keeps its dequantization.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/weight_levels.h"
#include "graph/passes/rewrite.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

// A constant weight's levels, as quantized_linear takes them.
struct Levels {
  Tensor levels, scales;  // levels [n, k] int8 or [n, k / 2] uint8, scales float32 [n, k / group]
  Tensor zero_points;     // int8 [n, k / group]; undefined where all are 0
  int64_t bits, group;
};

// Element i of a contiguous tensor of integers or floats; nullopt for other dtypes.
std::optional<double> element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Int8: return t.data_ptr<const int8_t>()[i];
    case DType::UInt8: return t.data_ptr<const uint8_t>()[i];
    case DType::Int32: return t.data_ptr<const int32_t>()[i];
    case DType::Int64: return static_cast<double>(t.data_ptr<const int64_t>()[i]);
    case DType::Float32: return t.data_ptr<const float>()[i];
    case DType::Float64: return t.data_ptr<const double>()[i];
    default: return std::nullopt;
  }
}

// q [n, k] int8 or uint8, with a scale per output and group of `group`
// inputs (scale holds n * k / group of them, row-major) and, where defined,
// as many zero points; nullopt where quantized_linear cannot take them.
std::optional<Levels> levels_of(const Tensor& q, const Tensor& scale, const Tensor& zero_point, int64_t group) {
  if ((q.dtype() != DType::Int8 && q.dtype() != DType::UInt8) || q.dim() != 2 || scale.dtype() != DType::Float32) {
    return std::nullopt;
  }
  const int64_t n = q.size(0), k = q.size(1), groups = k / std::max<int64_t>(group, 1);
  if (group < 1 || k % group != 0 || (group % 32 != 0 && group != k) || scale.numel() != n * groups ||
      (zero_point.defined() && zero_point.numel() != n * groups)) {
    return std::nullopt;
  }
  // uint8 levels shift into int8's range, by 8 where they fit in 4 bits.
  const Tensor stored = q.contiguous();
  int shift = 0;
  if (q.dtype() == DType::UInt8) {
    const uint8_t* data = stored.data_ptr<const uint8_t>();
    shift = std::all_of(data, data + stored.numel(), [](uint8_t level) { return level <= 15; }) ? 8 : 128;
  }
  Levels result{Tensor::empty({n, k}, DType::Int8), scale.view({n, groups}), Tensor(), 8, group};
  int8_t* levels = result.levels.data_ptr<int8_t>();
  for (int64_t i = 0; i < n * k; ++i) levels[i] = static_cast<int8_t>(*element(stored, i) - shift);
  if (zero_point.defined() || shift != 0) {
    const Tensor zeros = zero_point.defined() ? zero_point.contiguous() : Tensor();
    result.zero_points = Tensor::empty({n, groups}, DType::Int8);
    bool any = false;
    for (int64_t i = 0; i < n * groups; ++i) {
      const std::optional<double> given = zeros.defined() ? element(zeros, i) : 0.0;
      if (!given || *given != std::trunc(*given) || *given - shift < -128 || *given - shift > 127) return std::nullopt;
      result.zero_points.data_ptr<int8_t>()[i] = static_cast<int8_t>(*given - shift);
      any = any || *given != shift;
    }
    if (!any) result.zero_points = Tensor();
  }
  const bool int4 =
      k % 2 == 0 && std::all_of(levels, levels + n * k, [](int8_t level) { return level >= -8 && level <= 7; });
  if (!int4) return result;
  const Tensor bytes = Tensor::empty({n, k / 2}, DType::UInt8);
  for (int64_t i = 0; i < n * k / 2; ++i) bytes.data_ptr<uint8_t>()[i] = int4_pair(levels[2 * i], levels[2 * i + 1]);
  result.levels = bytes;
  result.bits = 4;
  return result;
}

class QuantizedLinearFusion {
 public:
  explicit QuantizedLinearFusion(PassContext& context) : context_(context), rewriter_(context) {}

  void run() {
    Graph& graph = context_.graph;
    rewriter_.for_each_node([&](size_t i) {
      Node& node = graph.nodes[i];
      const OpDef* op = context_.op_of(node);
      if (op == linear_ && node.inputs.size() == 3) {
        fuse_dequantized_weight(node);
      } else if (op == mul_ && node.inputs.size() == 2) {
        fuse_scaled_product(node, i);
      }
    });
    rewriter_.finish();
  }

 private:
  // linear(x, dequantize_affine(q, [1, group], scale, zero_point), bias), or
  // linear(x, dequantize_per_channel(q, scales, zero_points, axis=0), bias).
  void fuse_dequantized_weight(Node& linear) {
    Node* dequantize = rewriter_.sole_producer(linear.inputs[1]);
    const OpDef* op = dequantize ? context_.op_of(*dequantize) : nullptr;
    if ((op != dequantize_affine_ && op != dequantize_per_channel_) || dequantize->inputs.size() != 3) return;
    const std::optional<Tensor> q = rewriter_.constant(dequantize->inputs[0]);
    const std::optional<Tensor> scale = rewriter_.constant(dequantize->inputs[1]);
    const std::optional<Tensor> zero_point = rewriter_.constant(dequantize->inputs[2]);
    const std::optional<Attrs> attrs = bound_attrs(*dequantize, context_.registry);
    if (!q || !scale || !zero_point || !q->defined() || !scale->defined() || !attrs || q->dim() != 2) return;
    int64_t group = q->size(1);  // per channel: one group of all the inputs
    if (op == dequantize_affine_) {
      const auto& block = attrs->get<std::vector<int64_t>>("block_size");
      if (block.size() != 2 || block[0] != 1) return;
      group = block[1];
    } else if (attrs->get<int64_t>("axis") != 0) {
      return;
    }
    const std::optional<Levels> levels = levels_of(*q, *scale, *zero_point, group);
    if (!levels) return;
    replace(linear, linear.inputs[0], linear.inputs[2], *levels, dequantize->inputs[0].values[0]);
    rewriter_.remove(*dequantize);
  }

  // mul(mm(x, _to_copy(t(q), float32)), view(scale)): a scale per output.
  void fuse_scaled_product(Node& mul, size_t index) {
    std::vector<const Node*> matched;
    Node* product = rewriter_.sole_producer(mul.inputs[0]);
    if (product == nullptr || context_.op_of(*product) != mm_) return;
    const Node* widen = rewriter_.sole_producer(product->inputs[1], to_copy_, matched);
    const Node* transpose = widen ? rewriter_.sole_producer(widen->inputs[0], t_, matched) : nullptr;
    const Node* view = rewriter_.sole_producer(mul.inputs[1], view_, matched);
    if (transpose == nullptr || view == nullptr) return;
    const std::optional<Tensor> q = rewriter_.constant(transpose->inputs[0]);
    const std::optional<Tensor> scale = rewriter_.constant(view->inputs[0]);
    if (!q || !scale || !q->defined() || !scale->defined() || q->dim() != 2) return;
    // The scale must broadcast along the product's rows: one per column.
    const auto type = context_.values().find(view->outputs[0]);
    const SymbolicShape& scale_shape = type->second.shape;
    const bool per_column =
        scale_shape.size() <= 2 && scale->numel() == q->size(0) && (scale_shape.size() < 2 || scale_shape[0] == Dim(1));
    const auto output = context_.values().find(widen->outputs[0]);
    if (!per_column || output->second.dtype != DType::Float32) return;
    const std::optional<Levels> levels = levels_of(*q, *scale, Tensor(), q->size(1));
    if (!levels) return;
    replace(*product, product->inputs[0], NodeInput::none(), *levels, transpose->inputs[0].values[0]);
    rewriter_.absorb(*product, index);
    for (const Node* node : matched) rewriter_.remove(*node);
  }

  // `node` becomes quantized_linear(input, levels, scales, bias[, zero_points]).
  void replace(Node& node, const NodeInput& input, const NodeInput& bias, const Levels& levels,
               const std::string& named_after) {
    node.op_type = quantized_linear_->name();
    node.inputs = {input, NodeInput::value(rewriter_.add_constant(named_after + ".levels", levels.levels)),
                   NodeInput::value(rewriter_.add_constant(named_after + ".scales", levels.scales.contiguous())), bias};
    if (levels.zero_points.defined()) {
      node.inputs.push_back(NodeInput::value(rewriter_.add_constant(named_after + ".zero_points", levels.zero_points)));
    }
    node.attrs = {{"bits", levels.bits}, {"group_size", levels.group}};
  }

  PassContext& context_;
  Rewriter rewriter_;
  const OpDef* const linear_ = context_.op("aten::linear");
  const OpDef* const mm_ = context_.op("aten::mm");
  const OpDef* const mul_ = context_.op("aten::mul.Tensor");
  const OpDef* const to_copy_ = context_.op("aten::_to_copy");
  const OpDef* const t_ = context_.op("aten::t");
  const OpDef* const view_ = context_.op("aten::view");
  const OpDef* const dequantize_affine_ = context_.op("torchao::dequantize_affine");
  const OpDef* const dequantize_per_channel_ = context_.op("quantized_decomposed::dequantize_per_channel");
  const OpDef* const quantized_linear_ = context_.op("opgraph::quantized_linear");
};

}  // namespace

void fuse_quantized_linears(PassContext& context) { QuantizedLinearFusion(context).run(); }

}  // namespace opgraph
