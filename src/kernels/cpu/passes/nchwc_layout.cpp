// Channel-blocked activations between convolutions, as ONNX Runtime's NCHWc
// transformer and OpenVINO keep them. A oneDNN convolution runs fastest on
// activations in blocks of a vector's width of channels (nChw16c); converting
// the plain NCHW tensors of a graph into and out of that layout around each
// convolution took a large share of MobileNetV2's and ResNet-50's time.
// This pass makes the convolutions of a chain opgraph::conv2d_nchwc, which
// writes the blocked layout (and reads it, or a plain input), runs the
// elementwise ops between them on the blocks as they are (and max pooling as
// opgraph::max_pool2d_nchwc), and converts back
// (opgraph::nchwc_to_nchw) only where another op or the caller reads a value.
//
// On AVX-512, where no convolution of the chains is grouped, the block is a
// tensor's every channel: channels-last, as OpenVINO runs ResNet. oneDNN's
// brgemm convolutions take only that layout, and run ResNet-50's
// convolutions faster than its kernels on blocks of 16 (the 3x3 ones most of
// all). Its depthwise kernels are faster on blocks of 16 (MobileNetV2 runs
// slower channels-last), and its AVX2 kernels have no brgemm form.
// Neither are they where activations outgrow the last-level cache: a brgemm
// 1x1 convolution that adds a residual then reads it from memory more slowly
// than the blocked kernel does (ResNet-50 at batch 8, whose first stage's
// activations take 25.7 MB, runs its convolutions faster on blocks of 16; at
// batch 4, 12.8 MB, slower).
// Such chains still run their wide convolutions with a kernel larger than
// 1x1 channels-last, converting the activations on the way in and out: see
// kWideChannels. Nor where a convolution is 3x3 with unit strides over
// enough pixels: on blocks of 16 oneDNN runs it with its Winograd kernels
// (kernels/cpu/engines/winograd.h), faster than the brgemm one, which makes
// all of ResNet-50 faster at batch 1 and batch 8.
//
// A Session that multiplies in bfloat16 (Precision::BFloat16) runs every
// chain channels-last: oneDNN's bfloat16 convolutions on AMX take no other
// layout, and on blocks of 16 fall back to AVX-512 kernels slower than
// float32's (a 3x3 convolution of 64 channels at 56x56 runs far faster
// channels-last than on blocks of 16, and there slower than in float32).
// A Session that quantizes its activations (WeightQuantization's
// int8_activations) runs every chain without a grouped convolution
// channels-last, on AVX2 too: oneDNN's int8 convolutions have jit kernels
// for that layout only (engines/int8_conv.h). Its grouped ones are no
// faster in int8 (a depthwise 3x3 one of 144 channels at 56x56 took three
// times as long channels-last in int8 as on blocks of 8 in float32, AMD
// Zen 3), so chains holding one keep the blocks and float32.
#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "graph/passes/rewrite.h"
#include "kernels/cpu/engines/winograd.h"
#include "kernels/cpu/passes/passes.h"
#include "opgraph/core/cpu_capability.h"

namespace opgraph {
namespace {

// Past this size of a chain's largest activation, blocks of 16 channels
// rather than channels-last (see above): half of a 32 MB last-level cache,
// which the system does not reliably report (a virtual machine's CPUID gives
// the host's).
constexpr int64_t kLargeActivationBytes = int64_t{16} << 20;

// From this many input channels, a dense convolution with a kernel larger
// than 1x1 in a chain on blocks of 16 runs channels-last: its multiply-adds
// per byte grow with its channels, and from 256 oneDNN's brgemm kernels save
// more than converting its input and output costs: ResNet-50's at batch 8
// with 256 channels (the strided one from 28x28 to 14x14 most of all) and
// with 512 run faster so; with 128 channels the conversions of its 6.4 MB of
// activations cost more than that. Only where its output rows have
// kChannelsLastRow pixels or more: the brgemm kernels run along a row, and
// ResNet-50's last stage (7 wide) gained too little to pay for the
// conversions (its 512-channel convolutions at 7x7 ran no faster, and the
// stage as a whole slower, channels-last).
constexpr int64_t kWideChannels = 256, kChannelsLastRow = 14;

// A value the pass keeps blocked: the blocked tensor's name, its channels
// and the channels of a block.
struct BlockedValue {
  std::string name;
  int64_t channels, block;
};

class NchwcLayout {
 public:
  // `block`: the channels of a block; `channels_last`: whether a graph without
  // grouped convolutions takes channels-last instead, and its wide
  // convolutions where it does not; `bfloat16`: whether its convolutions
  // multiply in bfloat16, whose fast kernels (AMX) take channels-last only;
  // `int8`: whether they quantize their activations, which oneDNN's int8
  // kernels take channels-last only.
  NchwcLayout(PassContext& context, int64_t block, bool channels_last, bool bfloat16, bool int8)
      : context_(context),
        graph_(context.graph),
        registry_(context.registry),
        block_(block),
        channels_last_kernels_(channels_last),
        channels_last_(channels_last),
        bfloat16_(bfloat16),
        int8_(int8),
        uses_(count_uses(context.graph)),
        values_(context.values()) {
    for (const ValueInfo& constant : graph_.constants) {
      constants_.emplace(constant.name, &constant);
      value_names_.insert(constant.name);
    }
    for (const ValueInfo& input : graph_.inputs) value_names_.insert(input.name);
    for (const Node& node : graph_.nodes) {
      node_names_.insert(node.name);
      for (const std::string& output : node.outputs) {
        producer_.emplace(output, &node);
        value_names_.insert(output);
      }
    }
  }

  void run() {
    for (const Node& node : graph_.nodes) {
      if (is_convolution(node)) convolutions_.insert(&node);
    }
    find_foldable_pads();
    find_chained_convolutions();
    // Blocks of 16 for a grouped or Winograd convolution, or past the cache;
    // bfloat16's kernels take channels-last whatever the chain holds, int8's
    // where it holds no grouped convolution.
    const bool needs_blocks = std::ranges::any_of(chained_, [&](const Node* conv) {
      const Attrs attrs = *bound_attrs(*conv, registry_);
      return attrs.get<int64_t>("groups") != 1 ||
             (!int8_ && (is_winograd(*conv, attrs) || activation_bytes(conv->outputs[0]) > kLargeActivationBytes));
    });
    channels_last_ = (channels_last_ || int8_) && (bfloat16_ || !needs_blocks);
    std::vector<Node> nodes;
    for (Node& node : graph_.nodes) {
      if (folded_pads_.contains(&node)) continue;
      if (chained_.contains(&node)) {
        nodes.push_back(blocked_convolution(node));
      } else if (runs_on_blocks(node)) {
        nodes.push_back(on_blocks(node));
      } else {
        for (const NodeInput& input : node.inputs) {
          for (const std::string& value : input.values) convert_back(value, nodes);
        }
        nodes.push_back(std::move(node));
      }
    }
    for (const std::string& output : graph_.outputs) convert_back(output, nodes);
    graph_.nodes = std::move(nodes);
  }

 private:
  // A 2-D convolution of a float32 [N, C, H, W] input by a constant weight
  // (and constant or no bias), as opgraph::conv2d_nchwc can run it.
  bool is_convolution(const Node& node) const {
    if (const OpDef* op = context_.op_of(node); op != conv2d_ && op != fused_conv2d_) return false;
    if (node.inputs.size() != 3 || node.outputs.size() != 1 || node.has_symbolic_attrs()) return false;
    const std::string* input = single_value(node.inputs[0]);
    const ValueInfo* weight = constant(node.inputs[1]);
    if (input == nullptr || weight == nullptr || weight->dtype != DType::Float32 || weight->shape.size() != 4) {
      return false;
    }
    if (!node.inputs[2].is_none() && constant(node.inputs[2]) == nullptr) return false;
    const ValueInfo& info = values_.at(*input);
    return info.dtype == DType::Float32 && info.shape.size() == 4 && bound_attrs(node, registry_).has_value();
  }

  // A convolution that oneDNN runs with its Winograd kernels on blocks of
  // 16 (kernels/cpu/engines/winograd.h). A dim of its output that is not known
  // (a symbolic batch or size) counts as 1.
  bool is_winograd(const Node& conv, const Attrs& attrs) const {
    const ValueInfo& weight = *constant(conv.inputs[1]);
    int64_t pixels = 1;
    for (size_t d : {0, 2, 3}) {
      const Dim& dim = values_.at(conv.outputs[0]).shape[d];
      pixels *= dim.is_symbolic() ? 1 : dim.size;
    }
    const std::array<int64_t, 2> kernel{weight.shape[2].size, weight.shape[3].size};
    return kernels::is_winograd_convolution(attrs.get<int64_t>("groups"), kernel,
                                            attrs.get<std::vector<int64_t>>("stride"),
                                            attrs.get<std::vector<int64_t>>("dilation"), pixels);
  }

  // The pad before a convolution that folds into its padding, if the
  // convolution is made blocked: aten::pad of the last two dims by zeros,
  // read by the convolution alone.
  void find_foldable_pads() {
    for (const Node& node : graph_.nodes) {
      if (!convolutions_.contains(&node)) continue;
      const Node* pad = sole_producer(node.inputs[0], pad_);
      if (pad == nullptr || pad->has_symbolic_attrs()) continue;
      const std::optional<Attrs> attrs = bound_attrs(*pad, registry_);
      if (!attrs || attrs->get<std::string>("mode") != "constant") continue;
      const AttrValue& fill = attrs->get("value");
      if (!std::holds_alternative<std::monostate>(fill) && scalar_attr(*attrs, "value") != 0.0) continue;
      const std::vector<int64_t>& sides = attrs->get<std::vector<int64_t>>("pad");  // left, right, top, bottom
      if (sides.size() != 4 || std::ranges::any_of(sides, [](int64_t side) { return side < 0; })) continue;
      const ValueInfo& padded = values_.at(pad->inputs[0].values[0]);
      if (padded.dtype != DType::Float32 || padded.shape.size() != 4) continue;
      foldable_pads_[&node] = {pad, {sides[2], sides[0], sides[3], sides[1]}};
    }
  }

  // What a convolution reads once its pad is folded.
  const std::string& convolution_input(const Node& node) const {
    const auto pad = foldable_pads_.find(&node);
    return pad == foldable_pads_.end() ? node.inputs[0].values[0] : pad->second.pad->inputs[0].values[0];
  }

  // The node producing the one value `input` passes, if it is an `op` node
  // and nothing else reads that value.
  const Node* sole_producer(const NodeInput& input, const OpDef* op) const {
    const std::string* value = single_value(input);
    if (value == nullptr || uses_.at(*value) != 1 || !producer_.contains(*value)) return nullptr;
    const Node* node = producer_.at(*value);
    return context_.op_of(*node) == op ? node : nullptr;
  }

  // The convolutions worth the blocked layout: those that read a value
  // another convolution wrote (through ops that run on blocks) or write one
  // that another reads. A lone convolution (a ViT's patch embedding) keeps
  // its plain input and output: converting them would cost what it saves.
  void find_chained_convolutions() {
    std::unordered_set<std::string> from_convolution, to_convolution;
    for (const Node& node : graph_.nodes) {
      if (convolutions_.contains(&node) || (may_run_on_blocks(node) && all_inputs_in(node, from_convolution))) {
        from_convolution.insert(node.outputs[0]);
      }
    }
    for (auto node = graph_.nodes.rbegin(); node != graph_.nodes.rend(); ++node) {
      if (convolutions_.contains(&*node)) {
        to_convolution.insert(convolution_input(*node));
      } else if (may_run_on_blocks(*node) && to_convolution.contains(node->outputs[0])) {
        for (const NodeInput& input : node->inputs) to_convolution.insert(input.values[0]);
      }
    }
    for (const Node& node : graph_.nodes) {
      if (convolutions_.contains(&node) &&
          (from_convolution.contains(convolution_input(node)) || to_convolution.contains(node.outputs[0]))) {
        chained_.insert(&node);
        if (const auto pad = foldable_pads_.find(&node); pad != foldable_pads_.end())
          folded_pads_.insert(pad->second.pad);
      }
    }
  }

  // Elementwise ops that give the same result on blocks, zeros in the padding
  // channels included (f(0) = 0), when every tensor they read is blocked
  // alike; and max pooling.
  bool may_run_on_blocks(const Node& node) const {
    if (node.outputs.size() != 1 || node.has_symbolic_attrs() ||
        !std::ranges::all_of(node.inputs, [](const NodeInput& input) { return single_value(input) != nullptr; })) {
      return false;
    }
    const OpDef* op = context_.op_of(node);
    if (op == max_pool2d_) return blocked_pooling(node).has_value();
    if (std::ranges::find(zero_preserving_, op) != zero_preserving_.end()) return node.inputs.size() == 1;
    if (op == hardtanh_) {
      const std::optional<Attrs> attrs = bound_attrs(node, registry_);
      return node.inputs.size() == 1 && attrs && scalar_attr(*attrs, "min_val") <= 0.0 &&
             scalar_attr(*attrs, "max_val") >= 0.0;
    }
    return std::ranges::find(binary_, op) != binary_.end() && node.inputs.size() == 2;
  }

  // The size of a float32 value; 0 where a dim is symbolic.
  int64_t activation_bytes(const std::string& value) const {
    int64_t bytes = sizeof(float);
    for (const Dim& dim : values_.at(value).shape) bytes *= dim.is_symbolic() ? 0 : dim.size;
    return bytes;
  }

  static bool all_inputs_in(const Node& node, const std::unordered_set<std::string>& values) {
    return std::ranges::all_of(node.inputs, [&](const NodeInput& input) { return values.contains(input.values[0]); });
  }

  // Whether the node's inputs are all blocked alike.
  bool runs_on_blocks(const Node& node) const {
    if (!may_run_on_blocks(node)) return false;
    const auto first = blocked_.find(node.inputs[0].values[0]);
    return first != blocked_.end() && std::ranges::all_of(node.inputs, [&](const NodeInput& input) {
             const auto it = blocked_.find(input.values[0]);
             return it != blocked_.end() && it->second.channels == first->second.channels &&
                    it->second.block == first->second.block;
           });
  }

  // The block of a chained convolution's output: all of its channels where
  // the chains run channels-last, or where it is wide (kWideChannels) with
  // long rows.
  int64_t output_block(const Node& conv, const Attrs& attrs) const {
    const ValueInfo& weight = *constant(conv.inputs[1]);
    const int64_t channels = weight.shape[0].size;
    const bool wide = attrs.get<int64_t>("groups") == 1 && weight.shape[1].size >= kWideChannels &&
                      (weight.shape[2].size > 1 || weight.shape[3].size > 1) && !is_winograd(conv, attrs);
    const Dim& width = values_.at(conv.outputs[0]).shape[3];
    const bool long_rows = !width.is_symbolic() && width.size >= kChannelsLastRow;
    return channels_last_ || (channels_last_kernels_ && wide && long_rows) ? channels : block_;
  }

  Node blocked_convolution(Node& node) {
    const Attrs attrs = *bound_attrs(node, registry_);
    std::vector<int64_t> padding = attrs.get<std::vector<int64_t>>("padding");
    padding.resize(2, padding[0]);
    std::vector<int64_t> padding_end = padding;
    if (const auto pad = foldable_pads_.find(&node); pad != foldable_pads_.end()) {
      for (size_t d = 0; d < 2; ++d) {
        padding[d] += pad->second.sides[d];
        padding_end[d] += pad->second.sides[2 + d];
      }
      node.inputs[0] = pad->second.pad->inputs[0];
    }
    const std::string activation =
        context_.op_of(node) == fused_conv2d_ ? attrs.get<std::string>("activation") : "none";
    const int64_t channels = constant(node.inputs[1])->shape[0].size, block = output_block(node, attrs);
    Node conv = std::move(node);
    conv.op_type = conv2d_nchwc_->name();
    conv.inputs.push_back(NodeInput::none());  // no residual (see product_epilogue.cpp)
    conv.attrs = {{"stride", attrs.get("stride")}, {"padding", padding},
                  {"padding_end", padding_end},    {"dilation", attrs.get("dilation")},
                  {"groups", attrs.get("groups")}, {"block", block},
                  {"activation", activation}};
    if (const auto input = blocked_.find(conv.inputs[0].values[0]); input != blocked_.end()) {
      conv.inputs[0] = NodeInput::value(input->second.name);
    }
    keep_blocked(conv, channels, block);
    return conv;
  }

  // The attributes of opgraph::max_pool2d_nchwc for an aten::max_pool2d of a
  // float32 [N, C, H, W] with fixed H and W and no dilation: its window, and
  // the padding at the end that gives the output size the graph's shapes
  // say (ceil mode's partial last window included); nullopt for any other
  // pooling.
  std::optional<std::vector<NodeAttr>> blocked_pooling(const Node& node) const {
    const std::optional<Attrs> attrs = bound_attrs(node, registry_);
    const ValueInfo &input = values_.at(node.inputs[0].values[0]), &output = values_.at(node.outputs[0]);
    if (!attrs || input.dtype != DType::Float32 || input.shape.size() != 4) return std::nullopt;
    auto pair = [](std::vector<int64_t> values, int64_t otherwise) {
      if (values.empty()) values = {otherwise};
      values.resize(2, values[0]);
      return values;
    };
    const std::vector<int64_t> kernel = pair(attrs->get<std::vector<int64_t>>("kernel_size"), 0);
    const std::vector<int64_t> stride = pair(attrs->get<std::vector<int64_t>>("stride"), kernel[0]);
    const std::vector<int64_t> padding = pair(attrs->get<std::vector<int64_t>>("padding"), 0);
    const std::vector<int64_t> dilation = pair(attrs->get<std::vector<int64_t>>("dilation"), 1);
    std::vector<int64_t> padding_end(2);
    for (size_t d = 0; d < 2; ++d) {
      const Dim &size = input.shape[2 + d], &out = output.shape[2 + d];
      if (size.is_symbolic() || out.is_symbolic() || dilation[d] != 1 || padding[d] >= kernel[d]) return std::nullopt;
      // The blocked pooling's size, (size + padding + padding_end - kernel) / stride + 1, rounds down.
      padding_end[d] = std::max<int64_t>(0, (out.size - 1) * stride[d] + kernel[d] - size.size - padding[d]);
      if (padding_end[d] >= kernel[d]) return std::nullopt;
    }
    return std::vector<NodeAttr>{
        {"kernel_size", kernel}, {"stride", stride}, {"padding", padding}, {"padding_end", padding_end}};
  }

  Node on_blocks(Node& node) {
    const BlockedValue input = blocked_.at(node.inputs[0].values[0]);
    if (context_.op_of(node) == max_pool2d_) {
      node.attrs = *blocked_pooling(node);
      node.op_type = max_pool2d_nchwc_->name();
    }
    for (NodeInput& value : node.inputs) value = NodeInput::value(blocked_.at(value.values[0]).name);
    keep_blocked(node, input.channels, input.block);
    return std::move(node);
  }

  // Renames the node's output to its blocked form, remembered under the old name.
  void keep_blocked(Node& node, int64_t channels, int64_t block) {
    std::string name = node.outputs[0] + ".nchwc";
    while (!value_names_.insert(name).second) name += "_";
    blocked_[node.outputs[0]] = {name, channels, block};
    node.outputs[0] = name;
  }

  // Appends the conversion of `value` back to the plain layout, if it is
  // blocked and not converted yet.
  void convert_back(const std::string& value, std::vector<Node>& nodes) {
    const auto it = blocked_.find(value);
    if (it == blocked_.end() || !converted_.insert(value).second) return;
    std::string name = value + ".to_nchw";
    while (!node_names_.insert(name).second) name += "_";
    nodes.push_back({.name = std::move(name),
                     .op_type = nchwc_to_nchw_->name(),
                     .inputs = {NodeInput::value(it->second.name)},
                     .outputs = {value},
                     .attrs = {{"channels", it->second.channels}}});
  }

  const ValueInfo* constant(const NodeInput& input) const {
    const std::string* value = single_value(input);
    const auto it = value ? constants_.find(*value) : constants_.end();
    return it == constants_.end() ? nullptr : it->second;
  }

  const PassContext& context_;
  Graph& graph_;
  const Registry& registry_;
  const OpDef* const conv2d_ = context_.op("aten::conv2d");
  const OpDef* const fused_conv2d_ = context_.op("opgraph::conv2d");
  const OpDef* const conv2d_nchwc_ = context_.op("opgraph::conv2d_nchwc");
  const OpDef* const pad_ = context_.op("aten::pad");
  const OpDef* const max_pool2d_ = context_.op("aten::max_pool2d");
  const OpDef* const max_pool2d_nchwc_ = context_.op("opgraph::max_pool2d_nchwc");
  const OpDef* const nchwc_to_nchw_ = context_.op("opgraph::nchwc_to_nchw");
  // Activations with f(0) = 0, whatever their attributes.
  const std::array<const OpDef*, 5> zero_preserving_ = {context_.op("aten::relu"), context_.op("aten::silu"),
                                                        context_.op("aten::gelu"), context_.op("aten::hardswish"),
                                                        context_.op("aten::leaky_relu")};
  const OpDef* const hardtanh_ = context_.op("aten::hardtanh");
  const std::array<const OpDef*, 3> binary_ = {context_.op("aten::add.Tensor"), context_.op("aten::sub.Tensor"),
                                               context_.op("aten::mul.Tensor")};
  int64_t block_;
  bool channels_last_kernels_;  // whether oneDNN has fast kernels on channels-last
  bool channels_last_;          // whether the chains run channels-last
  bool bfloat16_;               // whether the convolutions multiply in bfloat16
  bool int8_;                   // whether they quantize their activations to int8
  std::unordered_map<std::string, int> uses_;
  const std::unordered_map<std::string, ValueInfo>& values_;
  std::unordered_map<std::string, const ValueInfo*> constants_;
  std::unordered_map<std::string, const Node*> producer_;
  std::unordered_set<std::string> node_names_, value_names_;  // every name taken
  struct FoldablePad {
    const Node* pad;
    std::array<int64_t, 4> sides;  // top, left, bottom, right
  };
  std::unordered_map<const Node*, FoldablePad> foldable_pads_;  // by convolution
  std::unordered_set<const Node*> convolutions_, folded_pads_, chained_;
  std::unordered_map<std::string, BlockedValue> blocked_;  // by the plain value's name
  std::unordered_set<std::string> converted_;              // blocked values converted back
};

}  // namespace

void use_nchwc_layout(PassContext& context) {
  const CpuCapability capability = cpu_capability();
  if (capability == CpuCapability::Default) return;  // oneDNN's blocked kernels need AVX2 or AVX-512
  const bool avx512 = capability == CpuCapability::Avx512;
  NchwcLayout(context, avx512 ? 16 : 8, /*channels_last=*/avx512,
              /*bfloat16=*/avx512 && context.precision == Precision::BFloat16,
              /*int8=*/context.quantization.int8_activations)
      .run();
}

}  // namespace opgraph
