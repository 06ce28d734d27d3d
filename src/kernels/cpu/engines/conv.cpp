// The forward convolution (engines/conv.h), which the convolution op
// families run.
//
// float32 runs on oneDNN (convolution and deconvolution primitives). Its
// primitives are built once per shape, parameters and thread count, and
// cached (primitive_cache.h). The caller's buffers are plain (NCHW, OIHW);
// the primitive reads and writes them in place where a fast implementation
// takes plain layouts, and otherwise works on converted copies (see
// build_forward). float64 and the reference use a plain loop.
#include "kernels/cpu/engines/conv.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/cpu/engines/winograd.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/onednn/primitive_cache.h"
#include "kernels/cpu/util/prepared_weights.h"

namespace opgraph::kernels {
namespace {

// ---- oneDNN ----------------------------------------------------------------

struct ForwardPlan {
  dnnl::convolution_forward conv;
  ConvOperand src, weights, dst;
  dnnl::memory::desc bias;  // zero when there is none
  dnnl::memory::desc scratchpad;
  bool reference = false;  // runs oneDNN's reference implementation
};

PrimitiveCache<ForwardPlan>& forward_plans() {
  static PrimitiveCache<ForwardPlan> plans(256);
  return plans;
}

// oneDNN's direct kernels are named "jit:<isa>" and, on channels-last
// activations, "brgconv:<isa>"; "gemm" (im2col + GEMM) and "ref" are its
// fallbacks for layouts those kernels do not take.
bool is_direct(const dnnl::convolution_forward::primitive_desc& pd) {
  const std::string_view name = pd.impl_info_str();
  return name.starts_with("jit") || name.starts_with("brg");
}

// A dense 3x3 convolution with unit strides and no dilation on blocks of 16
// channels runs oneDNN's Winograd kernels (F(2x2, 3x3) and F(4x4, 3x3),
// AVX-512), which do 2.25-4x fewer multiplications for a few transforms of
// their input, weights and output: ResNet-50's at batch 8 (1 thread) took
// 6.5-8.5 ms against 14-16 ms for the direct kernel (at batch 1 1.0-1.3 ms
// against 1.8-2.0), their results off the direct kernel's by 4e-7 to 2.3e-6
// of the largest output, which is float rounding for sums of 576 to 4608
// products. Where the output has few pixels, the direct kernel (winograd.h).
bool is_winograd_shape(const ConvDims& d) {
  if (d.src.size() != 4) return false;
  const int64_t groups = d.weights.size() == d.src.size() ? 1 : d.weights[0];
  dnnl::memory::dims dilations = d.dilates;
  for (int64_t& dilation : dilations) ++dilation;  // oneDNN counts none as 0
  return is_winograd_convolution(groups, std::span(d.weights).last(2), d.strides, dilations,
                                 d.dst[0] * d.dst[2] * d.dst[3]);
}

// The layouts the primitive runs on, chosen by timing ResNet-18's
// convolutions (bench/ops.py), conversions included:
// - A 1x1 convolution on plain layouts is the product of the weight matrix
//   and the channels-by-pixels input, which oneDNN runs as one GEMM: up to
//   2x faster than converting the activations for a direct kernel.
// - A direct kernel that reads the plain input in place (oneDNN has them for
//   few input channels, as in a network's first layer) saves converting it.
// - Otherwise, for a batch of one, oneDNN picks ("any"): brgemm kernels on
//   channels-last activations, 10-30% faster than the channel-blocked
//   kernels on ResNet's 3x3 layers, and one image converts cheaply.
// - For larger batches, converting to channels-last and back transposes
//   the whole tensor (2-4 ms for 6 MB, more than the brgemm kernels save);
//   channel blocks of a vector's width convert with contiguous copies in a
//   third of that time. This took those layers from 0.8-0.9x of PyTorch's
//   speed to 0.95-1.05x at batch 8.
// A residual is added by a sum post-op, which adds what the output buffer
// holds: oneDNN's fused residual connection, as OpenVINO runs ResNet's.
// With `bf16` the input and weights are converted to bfloat16 in the layouts
// chosen (a per call, the weights once), the output and bias stay float32.
ForwardPlan build_forward(const ConvDims& d, bool has_bias, bool adds_residual, Activation activation,
                          const std::optional<ConvLayouts>& layouts, bool bf16) {
  using tag = dnnl::memory::format_tag;
  dnnl::post_ops post_ops;
  if (adds_residual) post_ops.append_sum(1.0f);
  append_activation_post_op(post_ops, activation);
  dnnl::primitive_attr attr = with_caller_scratchpad();
  attr.set_post_ops(post_ops);
  const dnnl::memory::desc bias = has_bias ? d.bias_md() : dnnl::memory::desc();
  const auto operands = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  auto describe = [&](tag src, tag dst, dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct) {
    return dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, algorithm, d.src_md(src, operands),
                                        d.weights_md(tag::any, operands), bias, d.dst_md(dst), d.strides, d.dilates,
                                        d.padding, d.padding_r),
        attr, onednn_engine());
  };
  // The caller's layouts: plain, or the ones it keeps its activations in.
  const tag caller_src = layouts ? layouts->src : d.plain_activations;
  const tag caller_dst = layouts ? layouts->dst : d.plain_activations;
  auto plan = [&](const dnnl::convolution_forward::primitive_desc& pd) {
    return ForwardPlan{dnnl::convolution_forward(pd),
                       ConvOperand::input(d.src_md(caller_src), pd.src_desc()),
                       ConvOperand::input(d.weights_md(d.plain_weights), pd.weights_desc()),
                       ConvOperand::output(d.dst_md(caller_dst), pd.dst_desc()),
                       bias,
                       pd.scratchpad_desc(),
                       std::string_view(pd.impl_info_str()).starts_with("ref")};
  };
  if (layouts && layouts->src == d.blocked16 && layouts->dst == d.blocked16 && is_winograd_shape(d)) {
    try {
      return plan(describe(layouts->src, layouts->dst, dnnl::algorithm::convolution_winograd));
    } catch (const dnnl::error&) {
      // No Winograd kernel for this CPU, shape or post-ops: the direct one below.
    }
  }
  if (layouts) {
    // oneDNN has direct kernels from a plain input to blocks only for few
    // input channels; for more, the input is converted to the blocks.
    const auto caller_layouts = describe(layouts->src, layouts->dst);
    return plan(is_direct(caller_layouts) ? caller_layouts : describe(layouts->dst, layouts->dst));
  }
  const bool pointwise =
      std::all_of(d.weights.end() - (d.src.size() - 2), d.weights.end(), [](int64_t extent) { return extent == 1; });
  const auto plain_input = describe(d.plain_activations, pointwise ? d.plain_activations : tag::any);
  if (pointwise || is_direct(plain_input)) return plan(plain_input);
  if (d.src[0] > 1) {
    for (tag blocked : {d.blocked16, d.blocked8}) {
      const auto candidate = describe(blocked, blocked);
      if (is_direct(candidate)) return plan(candidate);
    }
  }
  return plan(describe(tag::any, tag::any));
}

// A plan's oneDNN memory objects and argument maps, kept per thread (see
// thread_call): about ten of them for a call made from scratch.
struct ForwardCall {
  std::shared_ptr<const ForwardPlan> plan;  // held, so that no other plan takes its address
  // The caller's buffers in plain layouts, and what the convolution reads and
  // writes: the same objects, or converted copies in the thread's scratch.
  dnnl::memory src, weights, dst, conv_src, conv_weights, conv_dst;
  std::unordered_map<int, dnnl::memory> args, convert_src, convert_weights, convert_dst;
  size_t weights_offset, dst_offset, scratchpad_offset, scratch_bytes;  // in the thread's scratch
  // Small weights keep their conversion: a call whose weights are the bytes
  // the previous call converted (a model's, run after run) skips converting
  // them again, for the cost of comparing them (a third of converting).
  static constexpr size_t kKeptWeightBytes = size_t{256} << 10;
  Tensor kept_weights;      // the conversion; undefined when the weights are not kept
  Tensor converted_values;  // the plain weights it was made from; undefined until then

  explicit ForwardCall(std::shared_ptr<const ForwardPlan> made) : plan(std::move(made)) {
    // The primitive's memory for an operand, and the conversion's arguments when it has one.
    auto operand = [&](const ConvOperand& op, const dnnl::memory& plain, std::unordered_map<int, dnnl::memory>& convert,
                       bool input) {
      if (!op.convert) return plain;
      dnnl::memory chosen = unbound_memory(op.chosen);
      convert = {{DNNL_ARG_FROM, input ? plain : chosen}, {DNNL_ARG_TO, input ? chosen : plain}};
      return chosen;
    };
    src = unbound_memory(plan->src.plain);
    weights = unbound_memory(plan->weights.plain);
    dst = unbound_memory(plan->dst.plain);
    conv_src = operand(plan->src, src, convert_src, true);
    conv_weights = operand(plan->weights, weights, convert_weights, true);
    conv_dst = operand(plan->dst, dst, convert_dst, false);
    args = {{DNNL_ARG_SRC, conv_src}, {DNNL_ARG_WEIGHTS, conv_weights}, {DNNL_ARG_DST, conv_dst}};
    if (!plan->bias.is_zero()) args.emplace(DNNL_ARG_BIAS, unbound_memory(plan->bias));
    if (plan->scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, unbound_memory(plan->scratchpad));
    if (plan->weights.convert && plan->weights.plain.get_size() <= kKeptWeightBytes) {
      kept_weights = Tensor::empty({static_cast<int64_t>(plan->weights.chosen.get_size())}, DType::UInt8);
    }
    weights_offset = aligned_size(plan->src.scratch_bytes());
    dst_offset = weights_offset + (kept_weights.defined() ? 0 : aligned_size(plan->weights.scratch_bytes()));
    scratchpad_offset = dst_offset + aligned_size(plan->dst.scratch_bytes());
    scratch_bytes = scratchpad_offset + plan->scratchpad.get_size();
  }

  // `converted_weights`, when given, is `weight` already in the primitive's
  // layout; `residual`, when defined, the values the sum post-op adds.
  void run(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
           const void* converted_weights, dnnl::stream& stream) {
    // The thread keeps its scratch for the next call: a Winograd
    // convolution's transformed tiles take up to 87 MB (ResNet-50's 512
    // channels at 7x7, batch 8), and allocating them anew each call cost
    // their first touch of every page (at batch 8, 1 thread: 534 against 569
    // ms). A convolution's scratch past kKeptScratchBytes lives for its call
    // alone, so that a thread does not hold more for good.
    constexpr size_t kKeptScratchBytes = size_t{128} << 20;
    Tensor call_scratch;
    if (scratch_bytes > kKeptScratchBytes) {
      call_scratch = Tensor::empty({static_cast<int64_t>(scratch_bytes)}, DType::UInt8);
    }
    auto* scratch = static_cast<uint8_t*>(call_scratch.defined() ? call_scratch.data() : thread_scratch(scratch_bytes));
    src.set_data_handle(input.data());
    weights.set_data_handle(weight.data());
    dst.set_data_handle(out.data());
    if (plan->src.convert) conv_src.set_data_handle(scratch);
    // Every call points the converted weights anew: a Session's call before
    // this one may have pointed them at its own conversion, freed since.
    if (converted_weights != nullptr) {
      conv_weights.set_data_handle(const_cast<void*>(converted_weights));
    } else if (plan->weights.convert) {
      conv_weights.set_data_handle(kept_weights.defined() ? kept_weights.data() : scratch + weights_offset);
    }
    if (plan->dst.convert) conv_dst.set_data_handle(scratch + dst_offset);
    if (bias.defined()) args.at(DNNL_ARG_BIAS).set_data_handle(bias.data());
    if (plan->scratchpad.get_size() > 0) args.at(DNNL_ARG_SCRATCHPAD).set_data_handle(scratch + scratchpad_offset);
    if (plan->src.convert) plan->src.convert.execute(stream, convert_src);
    if (residual.defined() && residual.data() != out.data()) std::memcpy(out.data(), residual.data(), out.nbytes());
    if (plan->weights.convert && converted_weights == nullptr && !weights_already_converted(weight)) {
      plan->weights.convert.execute(stream, convert_weights);
    }
    plan->conv.execute(stream, args);
    if (plan->dst.convert) plan->dst.convert.execute(stream, convert_dst);
    stream.wait();
  }

  // Whether kept_weights holds `weight`'s conversion; if not, remembers
  // `weight` as the values about to be converted into it.
  bool weights_already_converted(const Tensor& weight) {
    if (!kept_weights.defined()) return false;
    if (converted_values.defined() && std::memcmp(converted_values.data(), weight.data(), weight.nbytes()) == 0) {
      return true;
    }
    converted_values = weight.clone();
    return false;
  }
};

// A Session's weight in the primitive's layout, converted on its first run
// and kept in the node's prepared weights (as ONNX Runtime prepacks at load):
// converting ResNet-18's 512-channel weights on every call took ten times
// as long as the convolutions themselves at batch 1. Null when the weight
// needs no conversion or may change between calls.
const void* converted_weights(const KernelContext& context, const std::shared_ptr<const ForwardPlan>& plan,
                              std::vector<int64_t> key, const Tensor& weight, dnnl::stream& stream) {
  if (!plan->weights.convert || !is_constant_input(context, 1)) return nullptr;
  key.push_back(reinterpret_cast<intptr_t>(weight.data()));
  const std::shared_ptr<const void> kept = prepared_weights(context)->derived(key, spanned_bytes(weight), [&] {
    auto converted =
        std::make_shared<Tensor>(Tensor::empty({static_cast<int64_t>(plan->weights.chosen.get_size())}, DType::UInt8));
    dnnl::memory plain(plan->weights.plain, onednn_engine(), weight.data());
    dnnl::memory chosen(plan->weights.chosen, onednn_engine(), converted->data());
    plan->weights.convert.execute(stream, plain, chosen);
    stream.wait();
    return std::shared_ptr<const void>(converted, converted->data());
  });
  return kept.get();
}

// A convolution pays for threads from 2 MFLOP when it sums over 16 or more
// input channels or has unit strides: ResNet-18 at batch 1 on 32x32 pixels
// (3x3 convolutions of 2.4 to 4.7 MFLOP) went from 0.51 to 0.34-0.39 ms on
// two threads, and bench/models.py's CNN at batch 32 (a 3-channel first
// layer) from 0.091 to 0.060 ms. A strided one over few channels (a patch
// embedding) keeps kSmallWorkFlops: ViT's at batch 32 (6.3 MFLOP) made the
// whole model 15-20% slower on two threads.
constexpr int64_t kSmallWideConvFlops = 2'000'000;
// A depthwise convolution (one input channel per group) does a few
// multiply-adds per byte it moves, and its time is in the bytes: it pays for
// threads from 250 KFLOP. Each of MobileNetV2's 17, from 0.5 to 5.4 MFLOP,
// took 0.5-0.65x its time on two threads (576 channels, 14x14 -> 7x7: 10.0
// -> 5.1 us; 96 channels, 112x112 -> 56x56: 86 -> 55 us).
constexpr int64_t kSmallDepthwiseConvFlops = 250'000;

// `input` and `out` hold tensors of `input_dims` and `out_dims` in the
// caller's `layouts` (plain ones when not given).
// A `residual` comes with `layouts` alone, in which the output is not converted.
void onednn_conv(const KernelContext& given_context, const Tensor& input, const Shape& input_dims, const Tensor& weight,
                 const Tensor& bias, const Tensor& residual, const Tensor& out, const Shape& out_dims,
                 const ConvParams& p, Activation activation, const std::optional<ConvLayouts>& layouts = std::nullopt) {
  const bool unit_stride = std::all_of(p.stride.begin(), p.stride.end(), [](int64_t s) { return s == 1; });
  const int64_t bound = weight.size(1) == 1 && p.groups > 1   ? kSmallDepthwiseConvFlops
                        : weight.size(1) >= 16 || unit_stride ? kSmallWideConvFlops
                                                              : kSmallWorkFlops;
  const KernelContext context = context_for_work(given_context, conv_flops(weight, out_dims), bound);
  const OneDnnStream stream(context);  // first: sets the thread count the plan is built for
  const bool bf16 = weight_precision(context) == Precision::BFloat16 && is_constant_input(context, 1);
  std::vector<int64_t> key = conv_key(context, input, weight, bias.defined(), p);
  key.insert(key.end(), {static_cast<int64_t>(activation), residual.defined(), bf16});
  if (layouts) key.insert(key.end(), {static_cast<int64_t>(layouts->src), static_cast<int64_t>(layouts->dst)});
  const auto plan = forward_plans().get(key, [&] {
    const ConvDims dims = conv_dims(p, input_dims, weight.shape(), out_dims);
    if (bf16) {
      // Where oneDNN has only its reference kernel for bfloat16 (some
      // grouped shapes), float32's fast ones win.
      ForwardPlan low = build_forward(dims, bias.defined(), residual.defined(), activation, layouts, true);
      if (!low.reference) return low;
    }
    return build_forward(dims, bias.defined(), residual.defined(), activation, layouts, false);
  });
  OPGRAPH_CHECK(!residual.defined() || !plan->dst.convert, "a residual is added in the output's layout only");
  const void* kept_weights = converted_weights(context, plan, key, weight, stream);
  thread_call<ForwardCall>(plan).run(input, weight, bias, residual, out, kept_weights, stream);
}

// ---- oneDNN, transposed ---------------------------------------------------------
// A deconvolution primitive on layouts of oneDNN's choosing, the operands
// converted to and from them per call.

struct DeconvPlan {
  dnnl::deconvolution_forward deconv;
  ConvOperand src, weights, dst;
  dnnl::memory::desc bias;  // zero when there is none
  dnnl::memory::desc scratchpad;
};

PrimitiveCache<DeconvPlan>& deconv_plans() {
  static PrimitiveCache<DeconvPlan> plans(64);
  return plans;
}

DeconvPlan build_deconv(const ConvDims& d, bool has_bias, Activation activation) {
  const auto any = dnnl::memory::format_tag::any;
  dnnl::post_ops post_ops;
  append_activation_post_op(post_ops, activation);
  dnnl::primitive_attr attr = with_caller_scratchpad();
  attr.set_post_ops(post_ops);
  const dnnl::memory::desc bias = has_bias ? d.bias_md() : dnnl::memory::desc();
  const dnnl::deconvolution_forward::primitive_desc pd(
      dnnl::deconvolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        d.src_md(any), d.weights_md(any), bias, d.dst_md(any), d.strides, d.dilates,
                                        d.padding, d.padding_r),
      attr, onednn_engine());
  return {dnnl::deconvolution_forward(pd),
          ConvOperand::input(d.src_md(d.plain_activations), pd.src_desc()),
          ConvOperand::input(d.weights_md(d.plain_weights), pd.weights_desc()),
          ConvOperand::output(d.dst_md(d.plain_activations), pd.dst_desc()),
          bias,
          pd.scratchpad_desc()};
}

void onednn_deconv(const KernelContext& given_context, const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Tensor& out, const ConvParams& p, Activation activation) {
  const KernelContext context = context_for_work(given_context, conv_flops(weight, input.shape()));
  const OneDnnStream stream(context);  // first: sets the thread count the plan is built for
  std::vector<int64_t> key = conv_key(context, input, weight, bias.defined(), p);
  key.push_back(static_cast<int64_t>(activation));
  const auto plan = deconv_plans().get(key, [&] {
    return build_deconv(conv_dims(p, input.shape(), weight.shape(), out.shape()), bias.defined(), activation);
  });
  const dnnl::memory dst = plan->dst.output_memory(out.data());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, plan->src.bring_in(input.data(), stream)},
                                                {DNNL_ARG_WEIGHTS, plan->weights.bring_in(weight.data(), stream)},
                                                {DNNL_ARG_DST, dst}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, dnnl::memory(plan->bias, onednn_engine(), bias.data()));
  execute_with_scratchpad(plan->deconv, stream, args, plan->scratchpad);
  plan->dst.take_out(dst, out.data(), stream);
  stream.wait();
}

// ---- Plain loops ----------------------------------------------------------------

// out[n, o, ...] = activation(bias[o] + sums over the taps of input * weight),
// in double. A transposed convolution walks the taps of the convolution from
// its output to its input, and adds each product where that one would read.
template <typename T>
void plain_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out, const ConvParams& p,
                Activation activation) {
  const T* x = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  std::vector<double> sums(static_cast<size_t>(out.numel()), 0.0);
  if (p.transposed) {
    for_each_tap(out.shape(), weight.shape(), input.shape(), p,
                 [&](int64_t i, int64_t o, int64_t k) { sums[o] += double(x[i]) * w[k]; });
  } else {
    for_each_tap(input.shape(), weight.shape(), out.shape(), p,
                 [&](int64_t o, int64_t i, int64_t k) { sums[o] += double(x[i]) * w[k]; });
  }
  const int64_t out_channels = out.size(1), plane = out.numel() / (out.size(0) * out_channels);
  T* y = out.data_ptr<T>();
  for (int64_t o = 0; o < out.numel(); ++o) {
    const double added = bias.defined() ? double(bias.data_ptr<T>()[o / plane % out_channels]) : 0.0;
    y[o] = static_cast<T>(activation_reference(activation, sums[o] + added));
  }
}

}  // namespace

void conv_forward(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& out, const ConvParams& p, Activation activation, bool reference) {
  if (out.numel() == 0) return;
  // oneDNN computes float32 only, and no sums over empty channels.
  if (!reference && input.dtype() == DType::Float32 && weight.numel() > 0) {
    if (p.transposed) return onednn_deconv(context, input, weight, bias, out, p, activation);
    return onednn_conv(context, input, input.shape(), weight, bias, Tensor(), out, out.shape(), p, activation);
  }
  dispatch_floating(input.dtype(), "input",
                    [&](auto zero) { plain_conv<decltype(zero)>(input, weight, bias, out, p, activation); });
}

void conv_forward_in_layouts(const KernelContext& context, const Tensor& input, const Shape& input_dims,
                             const Tensor& weight, const Tensor& bias, const Tensor& residual, const Tensor& out,
                             const Shape& out_dims, const ConvParams& p, Activation activation, ConvLayouts layouts) {
  onednn_conv(context, input, input_dims, weight, bias, residual, out, out_dims, p, activation, layouts);
}

}  // namespace opgraph::kernels
