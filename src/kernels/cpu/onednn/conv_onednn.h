// How the convolution kernels run on oneDNN: the operands' dims and plain
// layouts, the key their primitives are cached under, and the conversions
// between the caller's plain buffers and the layouts a primitive chose.
#pragma once

#include <vector>

#include "kernels/cpu/onednn/onednn.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {

// The operands' dims as oneDNN takes them: weights as [O, I, k...], grouped
// ones with a leading group dim ([G, O/G, I/G, k...]), O being the output's
// channels also for a transposed convolution (a deconvolution, whose caller's
// weights are [I, O/G, k...]); dilation counts the gaps between taps.
struct ConvDims {
  dnnl::memory::dims src, weights, dst, bias, strides, dilates, padding, padding_r;
  dnnl::memory::format_tag plain_activations, plain_weights;  // the caller's layouts: nchw, oihw, ...
  dnnl::memory::format_tag blocked16, blocked8;               // activations in blocks of 16 or 8 channels: nChw16c, ...

  using data_type = dnnl::memory::data_type;
  dnnl::memory::desc src_md(dnnl::memory::format_tag tag, data_type type = data_type::f32) const {
    return describe(src, tag, type);
  }
  dnnl::memory::desc weights_md(dnnl::memory::format_tag tag, data_type type = data_type::f32) const {
    return describe(weights, tag, type);
  }
  dnnl::memory::desc dst_md(dnnl::memory::format_tag tag) const { return describe(dst, tag); }
  dnnl::memory::desc bias_md() const { return describe(bias, dnnl::memory::format_tag::x); }

  static dnnl::memory::desc describe(const dnnl::memory::dims& dims, dnnl::memory::format_tag tag,
                                     data_type type = data_type::f32) {
    return dnnl::memory::desc(dims, type, tag);
  }
};

ConvDims conv_dims(const ConvParams& p, const Shape& input, const Shape& weight, const Shape& out);

// Twice the multiply-adds of a convolution with this weight and output (its
// input gradient and weight gradient cost as much each): what decides
// whether it is worth threads (context_for_work). A transposed convolution
// costs as much for its input in place of `out`.
inline int64_t conv_flops(const Tensor& weight, const Shape& out) {
  return 2 * shape_numel(out) * (weight.numel() / weight.size(0));
}

// What a convolution's primitives are cached under: the thread count, the
// operand shapes and the parameters.
std::vector<int64_t> conv_key(const KernelContext& context, const Tensor& input, const Tensor& weight, bool has_bias,
                              const ConvParams& p);

// An operand in the caller's plain layout and in the one a primitive chose.
// When they differ the data goes through a scratch buffer, converted by a
// reorder built once along with the primitive.
struct ConvOperand {
  dnnl::memory::desc plain, chosen;
  dnnl::reorder convert;  // plain -> chosen for an input, back for an output; empty when they are the same

  static ConvOperand input(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen);
  static ConvOperand output(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen);

  // Bytes of scratch the conversion needs (0 when there is none).
  size_t scratch_bytes() const { return convert ? chosen.get_size() : 0; }
  // The primitive's memory for an input at `data`: that buffer, or a converted copy.
  dnnl::memory bring_in(const void* data, dnnl::stream& stream) const;
  // The primitive's memory for an output at `data`: that buffer, or scratch
  // that take_out() then converts into it.
  dnnl::memory output_memory(void* data) const;
  void take_out(const dnnl::memory& result, void* data, dnnl::stream& stream) const;
};

}  // namespace opgraph::kernels
