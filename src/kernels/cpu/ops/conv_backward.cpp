// Gradients of convolutions: aten::convolution_backward (any of
// aten::convolution's, 1-D to 3-D, transposed or not, the gradients chosen by
// output_mask), opgraph::conv2d_backward (aten::conv2d's) and
// opgraph::conv2d_act_backward (opgraph::conv2d's, through its activation).
// Each returns the gradients of input, weight and bias; the bias gradient is
// computed whether or not the forward had a bias.
//
// float32 runs on oneDNN's backward-data and backward-weights primitives (the
// latter also sums the bias gradient), cached like the forward ones. float64
// and the reference visit the forward's taps in a plain loop. A transposed
// convolution is the adjoint of the convolution from its output to its
// input: its input gradient is that convolution of grad_output, and its
// weight gradient that convolution's, with the roles of input and gradient
// exchanged.

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <unordered_map>
#include <variant>

#include "kernels/cpu/engines/conv.h"
#include "kernels/cpu/onednn/conv_onednn.h"
#include "kernels/cpu/onednn/primitive_cache.h"
#include "kernels/cpu/util/output_mask.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {
namespace {

// The outputs, in schema order; undefined where not wanted.
struct ConvGradients {
  Tensor input, weight, bias;
};

// ---- Shape functions -------------------------------------------------------

std::vector<TensorMeta> gradients_meta(const TensorMeta& grad, const TensorMeta& input, const TensorMeta& weight,
                                       const TensorMeta* bias, const ConvParams& p) {
  const TensorMeta out = conv_output_meta(input, weight, bias, p);
  check_same_meta(grad, "grad_output", out, "the convolution's output");
  return {input, weight, TensorMeta{input.dtype, {out.shape[out.dim() - p.spatial - 1]}}};
}

std::vector<TensorMeta> conv2d_backward_shape(const TensorMeta& grad_output, const TensorMeta& input,
                                              const TensorMeta& weight, Ints stride, Ints padding, Ints dilation,
                                              int64_t groups) {
  return gradients_meta(grad_output, input, weight, nullptr, conv_params(stride, padding, dilation, groups, 2));
}

std::vector<TensorMeta> conv2d_act_backward_shape(const TensorMeta& grad_output, const TensorMeta& input,
                                                  const TensorMeta& weight, const TensorMeta* bias,
                                                  const TensorMeta& output, Ints stride, Ints padding, Ints dilation,
                                                  int64_t groups, std::string_view activation) {
  parse_activation(activation);
  const ConvParams p = conv_params(stride, padding, dilation, groups, 2);
  check_same_meta(output, "output", conv_output_meta(input, weight, bias, p), "the convolution's output");
  return gradients_meta(grad_output, input, weight, bias, p);
}

std::vector<TensorMeta> convolution_backward_shape(const TensorMeta& grad_output, const TensorMeta& input,
                                                   const TensorMeta& weight, std::optional<Ints> bias_sizes,
                                                   Ints stride, Ints padding, Ints dilation, bool transposed,
                                                   Ints output_padding, int64_t groups, Ints output_mask_given) {
  const ConvParams p = convolution_params(stride, padding, dilation, transposed, output_padding, groups, weight);
  const std::vector<TensorMeta> all = gradients_meta(grad_output, input, weight, nullptr, p);
  if (bias_sizes) {
    OPGRAPH_CHECK(std::ranges::equal(*bias_sizes, all[2].shape), "bias_sizes: expected None or ",
                  shape_str(all[2].shape), " (the output's channels), got ", shape_str(*bias_sizes));
  }
  const std::array<bool, 3> mask = output_mask(output_mask_given);
  return {unless_masked(mask[0], all[0]), unless_masked(mask[1], all[1]), unless_masked(mask[2], all[2])};
}

// ---- oneDNN ----------------------------------------------------------------

struct BackwardPlan {
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights weights;
  ConvOperand data_grad_output, data_weight, grad_input;        // backward data's operands
  ConvOperand weights_input, weights_grad_output, grad_weight;  // backward weights'
  dnnl::memory::desc grad_bias;
  dnnl::memory::desc data_scratchpad, weights_scratchpad;
};

PrimitiveCache<BackwardPlan>& backward_plans() {
  static PrimitiveCache<BackwardPlan> plans(64);
  return plans;
}

// `has_bias`: whether the weights primitive also sums the bias gradient.
BackwardPlan build_backward(const ConvDims& d, bool has_bias) {
  using dnnl::convolution_backward_data, dnnl::convolution_backward_weights, dnnl::convolution_forward;
  const auto any = dnnl::memory::format_tag::any;
  const auto direct = dnnl::algorithm::convolution_direct;
  const dnnl::engine& engine = onednn_engine();
  const dnnl::memory::desc bias = has_bias ? d.bias_md() : dnnl::memory::desc();
  // The forward primitive these are the gradients of: a hint oneDNN picks
  // the backward implementations and layouts by.
  const convolution_forward::primitive_desc forward(
      convolution_forward::desc(dnnl::prop_kind::forward_training, direct, d.src_md(any), d.weights_md(any), bias,
                                d.dst_md(any), d.strides, d.dilates, d.padding, d.padding_r),
      engine);
  const convolution_backward_data::primitive_desc data(
      convolution_backward_data::desc(direct, d.src_md(any), d.weights_md(any), d.dst_md(any), d.strides, d.dilates,
                                      d.padding, d.padding_r),
      with_caller_scratchpad(), engine, forward);
  const convolution_backward_weights::primitive_desc weights(
      convolution_backward_weights::desc(direct, d.src_md(any), d.weights_md(any), bias, d.dst_md(any), d.strides,
                                         d.dilates, d.padding, d.padding_r),
      with_caller_scratchpad(), engine, forward);
  const auto activations = d.plain_activations, plain_weights = d.plain_weights;
  return {convolution_backward_data(data),
          convolution_backward_weights(weights),
          ConvOperand::input(d.dst_md(activations), data.diff_dst_desc()),
          ConvOperand::input(d.weights_md(plain_weights), data.weights_desc()),
          ConvOperand::output(d.src_md(activations), data.diff_src_desc()),
          ConvOperand::input(d.src_md(activations), weights.src_desc()),
          ConvOperand::input(d.dst_md(activations), weights.diff_dst_desc()),
          ConvOperand::output(d.weights_md(plain_weights), weights.diff_weights_desc()),
          weights.diff_bias_desc(),
          data.scratchpad_desc(),
          weights.scratchpad_desc()};
}

// The wanted gradients of a convolution (not transposed); the bias gradient
// only along with the weight's (the caller sums it otherwise).
void onednn_conv_backward(const KernelContext& given_context, const Tensor& grad, const Tensor& input,
                          const Tensor& weight, const ConvGradients& out, const ConvParams& p) {
  const KernelContext context = context_for_work(given_context, conv_flops(weight, grad.shape()));
  const OneDnnStream stream(context);  // first: sets the thread count the plan is built for
  const bool has_bias = out.bias.defined();
  const auto plan = backward_plans().get(conv_key(context, input, weight, has_bias, p), [&] {
    return build_backward(conv_dims(p, input.shape(), weight.shape(), grad.shape()), has_bias);
  });
  const dnnl::memory grad_for_data = plan->data_grad_output.bring_in(grad.data(), stream);
  if (out.input.defined()) {
    const dnnl::memory grad_input = plan->grad_input.output_memory(out.input.data());
    execute_with_scratchpad(plan->data, stream,
                            {{DNNL_ARG_DIFF_DST, grad_for_data},
                             {DNNL_ARG_WEIGHTS, plan->data_weight.bring_in(weight.data(), stream)},
                             {DNNL_ARG_DIFF_SRC, grad_input}},
                            plan->data_scratchpad);
    plan->grad_input.take_out(grad_input, out.input.data(), stream);
  }
  if (out.weight.defined()) {
    // The gradient is converted once when both primitives chose the same layout.
    const bool shared_layout = plan->weights_grad_output.chosen == plan->data_grad_output.chosen;
    const dnnl::memory grad_for_weights =
        shared_layout ? grad_for_data : plan->weights_grad_output.bring_in(grad.data(), stream);
    const dnnl::memory grad_weight = plan->grad_weight.output_memory(out.weight.data());
    std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, plan->weights_input.bring_in(input.data(), stream)},
                                                  {DNNL_ARG_DIFF_DST, grad_for_weights},
                                                  {DNNL_ARG_DIFF_WEIGHTS, grad_weight}};
    if (has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, dnnl::memory(plan->grad_bias, onednn_engine(), out.bias.data()));
    execute_with_scratchpad(plan->weights, stream, args, plan->weights_scratchpad);
    plan->grad_weight.take_out(grad_weight, out.weight.data(), stream);
  }
  stream.wait();
}

// ---- Plain loops -----------------------------------------------------------

// Every product input[i] * weight[k] that out[o] sums passes grad[o] back to
// both factors, in double; for the wanted gradients of input and weight.
template <typename T>
void plain_conv_backward(const Tensor& grad, const Tensor& input, const Tensor& weight, const ConvGradients& out,
                         const ConvParams& p) {
  const T* g = grad.data_ptr<T>();
  const T* x = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  const bool want_input = out.input.defined(), want_weight = out.weight.defined();
  std::vector<double> grad_input(want_input ? input.numel() : 0), grad_weight(want_weight ? weight.numel() : 0);
  for_each_tap(input.shape(), weight.shape(), grad.shape(), p, [&](int64_t o, int64_t i, int64_t k) {
    if (want_input) grad_input[i] += double(g[o]) * w[k];
    if (want_weight) grad_weight[k] += double(g[o]) * x[i];
  });
  auto store = [](const std::vector<double>& sums, const Tensor& t) {
    std::transform(sums.begin(), sums.end(), t.data_ptr<T>(), [](double v) { return static_cast<T>(v); });
  };
  if (want_input) store(grad_input, out.input);
  if (want_weight) store(grad_weight, out.weight);
}

// The bias gradient: grad summed over all but its channel dim, in double.
template <typename T>
void channel_sums(const Tensor& grad, const Tensor& out) {
  const DimLayout layout = layout_around(grad.shape(), 1);
  std::vector<double> sums(static_cast<size_t>(layout.size), 0.0);
  const T* g = grad.data_ptr<const T>();
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t c = 0; c < layout.size; ++c) {
      sums[c] += row_sum(g + (o * layout.size + c) * layout.inner, layout.inner);
    }
  }
  std::transform(sums.begin(), sums.end(), out.data_ptr<T>(), [](double v) { return static_cast<T>(v); });
}

// ---- Kernels ---------------------------------------------------------------

void conv_backward(const KernelContext& context, const Tensor& grad, const Tensor& input, const Tensor& weight,
                   const ConvGradients& out, const ConvParams& p, bool reference) {
  if (p.transposed) {
    // The convolution from the transposed one's output to its input: grad_output is its input, and the input
    // the gradient of its output.
    ConvParams adjoint = p;
    adjoint.transposed = false;
    if (out.input.defined()) {
      // The forward's context with this op's inputs, whose weight is not input 1.
      const KernelContext forward{context.pool};
      conv_forward(forward, grad, weight, Tensor(), out.input, adjoint, Activation::None, reference);
    }
    if (out.weight.defined()) {
      conv_backward(context, input, grad, weight, {Tensor(), out.weight, Tensor()}, adjoint, reference);
    }
  } else {
    // oneDNN computes float32 only, and not over empty operands.
    const bool empty = grad.numel() == 0 || input.numel() == 0 || weight.numel() == 0;
    if (!reference && !empty && input.dtype() == DType::Float32) {
      if (out.input.defined() || out.weight.defined()) {
        // The weights primitive sums the bias gradient on the way.
        const Tensor bias = out.weight.defined() ? out.bias : Tensor();
        onednn_conv_backward(context, grad, input, weight, {out.input, out.weight, bias}, p);
        if (bias.defined()) return;
      }
    } else if (out.input.defined() || out.weight.defined()) {
      dispatch_floating(input.dtype(), "input",
                        [&](auto zero) { plain_conv_backward<decltype(zero)>(grad, input, weight, out, p); });
    }
  }
  if (out.bias.defined()) {
    dispatch_floating(grad.dtype(), "grad_output", [&](auto zero) { channel_sums<decltype(zero)>(grad, out.bias); });
  }
}

ConvGradients batched_gradients(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  return {batched(grad_input, 4), grad_weight, grad_bias};
}

template <bool Reference>
void convolution_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& input,
                              const Tensor& weight, std::optional<Ints>, Ints stride, Ints padding, Ints dilation,
                              bool transposed, Ints output_padding, int64_t groups, Ints output_mask_given,
                              const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  const ConvParams p = convolution_params(stride, padding, dilation, transposed, output_padding, groups, weight.meta());
  const int64_t rank = p.spatial + 2;
  const std::array<bool, 3> mask = output_mask(output_mask_given);
  const ConvGradients gradients{mask[0] ? batched(grad_input, rank) : Tensor(), mask[1] ? grad_weight : Tensor(),
                                mask[2] ? grad_bias : Tensor()};
  conv_backward(context, batched(grad_output, rank), batched(input, rank), weight, gradients, p, Reference);
}

template <bool Reference>
void conv2d_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& input,
                         const Tensor& weight, Ints stride, Ints padding, Ints dilation, int64_t groups,
                         const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias) {
  conv_backward(context, batched(grad_output, 4), batched(input, 4), weight,
                batched_gradients(grad_input, grad_weight, grad_bias),
                conv_params(stride, padding, dilation, groups, 2), Reference);
}

// The fused op's tensors the activation's gradient reads.
struct ActivationOperands {
  const Tensor& input;
  const Tensor& weight;
  Tensor bias;  // undefined for None
  const Tensor& output;
};

// The fused op's forward kept only the activation's output y. relu', sigmoid'
// and tanh' follow from y; gelu' does not, since gelu is not one-to-one (it
// dips below zero and comes back), so the pre-activation z is computed again
// by the convolution without its activation.
void apply_activation_grad(const KernelContext& context, const Tensor& grad, const ActivationOperands& in,
                           const ConvParams& p, Activation activation) {
  const Tensor &input = in.input, &weight = in.weight, &bias = in.bias, &output = in.output;
  Tensor pre_activation;
  if (derivative_needs_pre_activation(activation)) {
    pre_activation = Tensor::empty(grad.meta());
    // The forward's context with this op's inputs, whose weight is not input 1.
    const KernelContext forward{context.pool};
    conv_forward(forward, batched(input, 4), weight, bias, pre_activation, p, Activation::None, false);
  }
  dispatch_floating(grad.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    multiply_by_activation_grad<T>(activation, grad.data_ptr<T>(), output.data_ptr<const T>(),
                                   pre_activation.defined() ? pre_activation.data_ptr<const T>() : nullptr,
                                   grad.numel(), *context.pool);
  });
}

// The reference computes z for every activation, and f'(z) from its definition.
void apply_activation_grad_reference(const KernelContext& context, const Tensor& grad, const ActivationOperands& in,
                                     const ConvParams& p, Activation activation) {
  const Tensor pre_activation = Tensor::empty(grad.meta());
  conv_forward(context, batched(in.input, 4), in.weight, in.bias, pre_activation, p, Activation::None, true);
  dispatch_floating(grad.dtype(), "grad_output", [&](auto zero) {
    using T = decltype(zero);
    T* g = grad.data_ptr<T>();
    const T* z = pre_activation.data_ptr<const T>();
    for (int64_t i = 0; i < grad.numel(); ++i) {
      g[i] = static_cast<T>(g[i] * activation_derivative_reference(activation, z[i]));
    }
  });
}

// The activation's gradient goes into a scratch copy of grad_output, then
// through the convolution.
template <bool Reference>
void conv2d_act_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& input,
                             const Tensor& weight, const Tensor* bias, const Tensor& output, Ints stride, Ints padding,
                             Ints dilation, int64_t groups, std::string_view activation_name, const Tensor& grad_input,
                             const Tensor& grad_weight, const Tensor& grad_bias) {
  const ConvParams p = conv_params(stride, padding, dilation, groups, 2);
  const Activation activation = parse_activation(activation_name);
  const Tensor grad = batched(grad_output, 4).clone();
  const ActivationOperands operands{input, weight, bias ? *bias : Tensor(), output};
  if (Reference) {
    apply_activation_grad_reference(context, grad, operands, p, activation);
  } else {
    apply_activation_grad(context, grad, operands, p, activation);
  }
  conv_backward(context, grad, batched(input, 4), weight, batched_gradients(grad_input, grad_weight, grad_bias), p,
                Reference);
}

}  // namespace

void register_conv_backward_ops(BuiltinOps& builtins) {
  define(builtins,
         {.schema = "aten::convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
                    "SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, "
                    "SymInt[] output_padding, SymInt groups, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
          .shape = convolution_backward_shape,
          OPGRAPH_CPU_AND_REFERENCE(convolution_backward_cpu),
          .prepare = prepare_weights});
  define(builtins,
         {.schema = "opgraph::conv2d_backward(Tensor grad_output, Tensor input, Tensor weight, int[2] stride=1, "
                    "int[2] padding=0, int[2] dilation=1, int groups=1) "
                    "-> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
          .shape = conv2d_backward_shape,
          OPGRAPH_CPU_AND_REFERENCE(conv2d_backward_cpu),
          .prepare = prepare_weights});
  define(builtins,
         {.schema = "opgraph::conv2d_act_backward(Tensor grad_output, Tensor input, Tensor weight, Tensor? bias, "
                    "Tensor output, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1, *, "
                    "str activation=\"none\") -> (Tensor grad_input, Tensor grad_weight, Tensor grad_bias)",
          .shape = conv2d_act_backward_shape,
          OPGRAPH_CPU_AND_REFERENCE(conv2d_act_backward_cpu),
          .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
