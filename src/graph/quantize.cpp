#include "opgraph/graph/quantize.h"

#include <fnmatch.h>

#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/weight_levels.h"
#include "graph/passes/rewrite.h"

namespace opgraph {
namespace {

// A weight's levels, scales and (not symmetric) zero points, as
// opgraph::quantized_linear takes them.
struct QuantizedWeight {
  Tensor levels, scales, zero_points;
};

// The [n, k] float32 weight w quantized, row j's inputs `input_stride`
// elements apart and its rows `row_stride` apart.
QuantizedWeight quantized(const float* w, int64_t n, int64_t k, int64_t row_stride, int64_t input_stride,
                          const WeightQuantization& format, int64_t group) {
  const int bits = format.bits;
  const int64_t groups = k / group;
  Tensor levels = bits == 8 ? Tensor::empty({n, k}, DType::Int8) : Tensor::empty({n, k / 2}, DType::UInt8);
  Tensor scales = Tensor::empty({n, groups}, DType::Float32);
  Tensor zero_points = format.symmetric ? Tensor() : Tensor::empty({n, groups}, DType::Int8);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* values = w + j * row_stride + g * group * input_stride;
      const WeightLevels of = WeightLevels::of_group(bits, format.symmetric, values, group, input_stride);
      scales.data_ptr<float>()[j * groups + g] = of.scale;
      if (zero_points.defined()) zero_points.data_ptr<int8_t>()[j * groups + g] = static_cast<int8_t>(of.zero_point);
      for (int64_t q = 0; q < group; q += bits == 8 ? 1 : 2) {
        const int64_t input = g * group + q;
        const int level = of.level(values[q * input_stride]);
        if (bits == 8) {
          levels.data_ptr<int8_t>()[j * k + input] = static_cast<int8_t>(level);
        } else {
          levels.data_ptr<uint8_t>()[(j * k + input) / 2] = int4_pair(level, of.level(values[(q + 1) * input_stride]));
        }
      }
    }
  }
  return {levels, scales, zero_points};
}

bool matches_any(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& pattern : patterns) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

class WeightQuantizer {
 public:
  WeightQuantizer(PassContext& context, const QuantizeOptions& options)
      : context_(context), graph_(context.graph), rewriter_(context), options_(options) {}

  QuantizeReport run() {
    rewriter_.for_each_node([&](size_t i) { visit(graph_.nodes[i]); });
    rewriter_.finish();
    return std::move(report_);
  }

 private:
  // A product by a constant matrix, as quantized_linear takes it, or an
  // embedding's table (its rows as a linear layer's outputs).
  struct Layer {
    NodeInput input, weight, bias;
    bool transposed;  // the weight is [k, n] (matmul's), not [n, k] (linear's)
    bool embedding = false;
  };

  std::optional<Layer> layer_of(const Node& node) {
    const OpDef* called = context_.op_of(node);
    if (called == embedding_ && options_.embeddings && node.inputs.size() == 2) {
      return Layer{node.inputs[1], node.inputs[0], NodeInput::none(), false, true};
    }
    if (called == linear_ && node.inputs.size() == 3)
      return Layer{node.inputs[0], node.inputs[1], node.inputs[2], false};
    if ((called == matmul_ || called == mm_) && node.inputs.size() == 2) {
      return Layer{node.inputs[0], node.inputs[1], NodeInput::none(), true};
    }
    if (called != addmm_ || node.inputs.size() != 3) return std::nullopt;
    const std::optional<Attrs> attrs = bound_attrs(node, context_.registry);
    if (!attrs || scalar_attr(*attrs, "alpha") != 1.0 || scalar_attr(*attrs, "beta") != 1.0) return std::nullopt;
    // A bias vector, one per output; a broadcast matrix is not quantized_linear's.
    const std::string* bias = single_value(node.inputs[0]);
    if (!types_) types_ = infer_shapes(graph_);
    const auto type = bias ? types_->find(*bias) : types_->end();
    if (type == types_->end() || type->second.shape.size() != 1) return std::nullopt;
    return Layer{node.inputs[1], node.inputs[2], node.inputs[0], true};
  }

  void visit(Node& node) {
    const std::optional<Layer> layer = layer_of(node);
    if (!layer) return;
    const std::optional<Tensor> weight = rewriter_.constant(layer->weight);
    if (!weight || !weight->defined()) return;
    const std::string& weight_name = layer->weight.values[0];
    if (weight->dtype() != DType::Float32 || weight->dim() != 2) {
      report_.kept.emplace_back(
          node.name, "its weight is " + TensorMeta{weight->dtype(), weight->shape()}.str() + ", not a float32 matrix");
      return;
    }
    if (matches_any(options_.exclude, node.name) || matches_any(options_.exclude, weight_name)) {
      report_.kept.emplace_back(node.name, "excluded");
      return;
    }
    const int64_t n = weight->size(layer->transposed ? 1 : 0), k = weight->size(layer->transposed ? 0 : 1);
    const int bits = options_.weights.bits;
    const int64_t group = options_.weights.group_size == 0 ? k : options_.weights.group_size;
    const auto where = [&] {
      return detail::concat("layer '", node.name, "' (weight '", weight_name, "', ", n, " outputs of ", k, " inputs)");
    };
    OPGRAPH_CHECK(k % group == 0, where(), ": the group size ", group, " does not divide its ", k,
                  " inputs; exclude it or choose another group size");
    OPGRAPH_CHECK(group % 32 == 0 || group == k, where(), ": the group size ", group,
                  " is neither a multiple of 32 nor all of its inputs");
    OPGRAPH_CHECK(bits == 8 || k % 2 == 0, where(), ": int4 packs inputs in pairs, and it has an odd count of them; ",
                  "exclude it or quantize to int8");
    auto [entry, first] = packed_.try_emplace({weight_name, layer->transposed});
    if (first) {
      const int64_t row_stride = layer->transposed ? 1 : k, input_stride = layer->transposed ? n : 1;
      const QuantizedWeight q =
          quantized(weight->data_ptr<const float>(), n, k, row_stride, input_stride, options_.weights, group);
      entry->second = {NodeInput::value(rewriter_.add_constant(weight_name + ".levels", q.levels)),
                       NodeInput::value(rewriter_.add_constant(weight_name + ".scales", q.scales)),
                       q.zero_points.defined()
                           ? NodeInput::value(rewriter_.add_constant(weight_name + ".zero_points", q.zero_points))
                           : NodeInput::none()};
    }
    const auto& [levels, scales, zero_points] = entry->second;
    if (layer->embedding) {
      node.op_type = quantized_embedding_->name();
      node.inputs = {levels, scales, layer->input};
    } else {
      node.op_type = quantized_linear_->name();
      node.inputs = {layer->input, levels, scales, layer->bias};
    }
    // Both ops take zero_point last; symmetric layers leave it out (None).
    if (!zero_points.is_none()) node.inputs.push_back(zero_points);
    node.attrs = {{"bits", int64_t{bits}}, {"group_size", group}};
    report_.quantized.push_back({node.name, weight_name, k, n});
  }

  PassContext& context_;
  Graph& graph_;
  Rewriter rewriter_;
  const QuantizeOptions& options_;
  const OpDef* const linear_ = context_.op("aten::linear");
  const OpDef* const matmul_ = context_.op("aten::matmul");
  const OpDef* const mm_ = context_.op("aten::mm");
  const OpDef* const addmm_ = context_.op("aten::addmm");
  const OpDef* const embedding_ = context_.op("aten::embedding");
  const OpDef* const quantized_linear_ = context_.op("opgraph::quantized_linear");
  const OpDef* const quantized_embedding_ = context_.op("opgraph::quantized_embedding");
  // Every value's type, inferred where a layer needs it (graphs with
  // states, which the Session's passes see as inputs, included).
  std::optional<std::unordered_map<std::string, ValueInfo>> types_;
  // By weight and layout: the constants its levels, scales and zero points went into.
  std::map<std::pair<std::string, bool>, std::tuple<NodeInput, NodeInput, NodeInput>> packed_;
  QuantizeReport report_;
};

}  // namespace

QuantizeReport quantize_weights(Graph& graph, Weights& weights, const QuantizeOptions& options,
                                const Registry& registry) {
  const int bits = options.weights.bits;
  OPGRAPH_CHECK(bits == 8 || bits == 4, "quantize: expected 8 or 4 bits, got ", bits);
  OPGRAPH_CHECK(options.weights.group_size >= 0, "quantize: expected a group size of 0 (all of a layer's inputs) or ",
                "more, got ", options.weights.group_size);
  PassContext context(graph, weights, registry);
  context.pass = "quantize";
  return WeightQuantizer(context, options).run();
}

}  // namespace opgraph
