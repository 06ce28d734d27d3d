// 1-D convolutions as 2-D ones of height 1, as OpenVINO runs them: an
// [N, C, W] input is an [N, C, 1, W] one and a [O, C, K] weight an
// [O, C, 1, K] one. What the rewrites after this one do for 2-D convolutions
// then applies: activations fused into them, and the channel-blocked layout
// between convolutions that read each other's outputs. Whisper's encoder
// opens with two convolutions of 384 channels over 3000 and 1500 frames;
// converting their [N, C, W] tensors to oneDNN's channels-last and back around
// each took a visible share of its time.
//
// An activation of a converted convolution's output runs on the 4-D tensor
// too, so that the chain of convolutions stays 4-D; a squeeze gives the 3-D
// value to whatever else reads it.
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "graph/passes/rewrite.h"
#include "kernels/cpu/passes/passes.h"

namespace opgraph {
namespace {

class Conv1dAsConv2d : RewritingPass {
 public:
  using RewritingPass::RewritingPass;

  void run() {
    rewriter_.for_each_node([&](size_t i) {
      Node& node = graph_.nodes[i];
      if (const std::optional<Attrs> attrs = convolution_attrs(node)) {
        as_conv2d(node, *attrs);
      } else if (const std::string* input = node.inputs.size() == 1 ? single_value(node.inputs[0]) : nullptr;
                 input != nullptr && height_one_.contains(*input) && activations_.of(node) &&
                 node.outputs.size() == 1) {
        node.inputs[0] = NodeInput::value(height_one_.at(*input));
        keep_height_one(node);
      } else {
        for (const NodeInput& input : node.inputs) {
          for (const std::string& value : input.values) squeeze(value);
        }
      }
    });
    for (const std::string& output : graph_.outputs) squeeze(output);
    rewriter_.finish();
  }

 private:
  // The attributes of aten::conv1d of a 3-D input by a constant 3-D weight,
  // if they are static; nullopt for any other node.
  std::optional<Attrs> convolution_attrs(const Node& node) const {
    if (op_of(node) != conv1d_ || node.has_symbolic_attrs() || node.inputs.size() != 3) return std::nullopt;
    const std::string* input = single_value(node.inputs[0]);
    const std::optional<Tensor> weight = rewriter_.constant(node.inputs[1]);
    if (input == nullptr || !values_.contains(*input) || values_.at(*input).shape.size() != 3 || !weight ||
        !weight->defined() || weight->dim() != 3) {
      return std::nullopt;
    }
    return bound_attrs(node, registry_);
  }

  void as_conv2d(Node& conv, const Attrs& attrs) {
    const std::string& input = conv.inputs[0].values[0];
    std::string input_2d;
    if (const auto converted = height_one_.find(input); converted != height_one_.end()) {
      input_2d = converted->second;
    } else {
      input_2d = rewriter_.fresh_name(input + "_2d");
      rewriter_.insert_before(conv, reshape_node(unsqueeze_, input, input_2d));
    }
    const Tensor weight = *rewriter_.constant(conv.inputs[1]);
    const Tensor weight_2d = weight.view({weight.size(0), weight.size(1), 1, weight.size(2)});
    conv.op_type = conv2d_->name();
    conv.inputs[0] = NodeInput::value(input_2d);
    conv.inputs[1] = NodeInput::value(rewriter_.add_constant(conv.inputs[1].values[0] + "_2d", weight_2d));
    // (height, width) from a 1-D attribute; an empty one is the default, which is the height's.
    const auto height_one = [&](const char* name, int64_t height) {
      const auto& widths = attrs.get<std::vector<int64_t>>(name);
      return NodeAttr{name, std::vector<int64_t>{height, widths.empty() ? height : widths[0]}};
    };
    conv.attrs = {height_one("stride", 1),
                  height_one("padding", 0),
                  height_one("dilation", 1),
                  {"groups", attrs.get<int64_t>("groups")}};
    keep_height_one(conv);
  }

  // The node writes its output's [N, C, 1, W] form, under a new name.
  void keep_height_one(Node& node) {
    const std::string output = node.outputs[0];
    node.outputs[0] = rewriter_.fresh_name(output + "_2d");
    height_one_[output] = node.outputs[0];
  }

  // Makes `value` where a node or the caller reads it as it was: the squeeze
  // of its height-1 form, right after that form's producer.
  void squeeze(const std::string& value) {
    const auto converted = height_one_.find(value);
    if (converted == height_one_.end() || squeezed_.contains(value)) return;
    squeezed_.insert(value);
    rewriter_.insert_after(rewriter_.producer(converted->second), reshape_node(squeeze_, converted->second, value));
  }

  Node reshape_node(const OpDef* reshape, const std::string& input, const std::string& output) {
    return Node{.name = rewriter_.fresh_name(output),
                .op_type = reshape->name(),
                .inputs = {NodeInput::value(input)},
                .outputs = {output},
                .attrs = {{"dim", int64_t{2}}}};
  }

  const Activations activations_{context_};
  const OpDef* const conv1d_ = op("aten::conv1d");
  const OpDef* const conv2d_ = op("aten::conv2d");
  const OpDef* const unsqueeze_ = op("aten::unsqueeze");
  const OpDef* const squeeze_ = op("aten::squeeze.dim");
  std::unordered_map<std::string, std::string> height_one_;  // a 3-D value and its [N, C, 1, W] form
  std::unordered_set<std::string> squeezed_;
};

}  // namespace

void convolutions_1d_as_2d(PassContext& context) { Conv1dAsConv2d(context).run(); }

}  // namespace opgraph
