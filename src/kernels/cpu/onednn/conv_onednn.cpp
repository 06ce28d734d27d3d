// The convolution kernels' view of their operands in oneDNN's terms.
#include "kernels/cpu/onednn/conv_onednn.h"

namespace opgraph::kernels {

ConvDims conv_dims(const ConvParams& p, const Shape& input, const Shape& weight, const Shape& out) {
  using tag = dnnl::memory::format_tag;
  // Tags by spatial rank (1, 2, 3).
  constexpr tag activations[] = {tag::ncw, tag::nchw, tag::ncdhw};
  constexpr tag blocked16[] = {tag::nCw16c, tag::nChw16c, tag::nCdhw16c};
  constexpr tag blocked8[] = {tag::nCw8c, tag::nChw8c, tag::nCdhw8c};
  constexpr tag weights[] = {tag::oiw, tag::oihw, tag::oidhw};
  constexpr tag grouped_weights[] = {tag::goiw, tag::goihw, tag::goidhw};
  // A transposed convolution's weights, [I, O/G, k...], have I before O.
  constexpr tag transposed_weights[] = {tag::bac, tag::bacd, tag::bacde};
  constexpr tag grouped_transposed_weights[] = {tag::acbd, tag::acbde, tag::acbdef};
  const size_t rank = static_cast<size_t>(p.spatial - 1);
  ConvDims d;
  d.src = input;
  d.weights = {out[1] / p.groups, input[1] / p.groups};
  d.weights.insert(d.weights.end(), weight.begin() + 2, weight.end());
  if (p.groups > 1) d.weights.insert(d.weights.begin(), p.groups);
  d.dst = out;
  d.bias = {out[1]};
  d.strides = p.stride;
  d.dilates = p.dilation;
  for (int64_t& gaps : d.dilates) gaps -= 1;
  d.padding = p.padding;
  d.padding_r = p.padding_end;
  d.plain_activations = activations[rank];
  d.blocked16 = blocked16[rank];
  d.blocked8 = blocked8[rank];
  if (p.transposed) {
    d.plain_weights = p.groups > 1 ? grouped_transposed_weights[rank] : transposed_weights[rank];
  } else {
    d.plain_weights = p.groups > 1 ? grouped_weights[rank] : weights[rank];
  }
  return d;
}

std::vector<int64_t> conv_key(const KernelContext& context, const Tensor& input, const Tensor& weight, bool has_bias,
                              const ConvParams& p) {
  std::vector<int64_t> key = {context.pool->num_threads(), p.spatial, p.groups, has_bias, p.transposed};
  for (const auto* values : {&input.shape(), &weight.shape(), &p.stride, &p.padding, &p.padding_end, &p.dilation}) {
    key.insert(key.end(), values->begin(), values->end());
  }
  return key;
}

ConvOperand ConvOperand::input(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen) {
  if (plain == chosen) return {plain, chosen, {}};
  return {plain, chosen, dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), plain, onednn_engine(), chosen))};
}

ConvOperand ConvOperand::output(const dnnl::memory::desc& plain, const dnnl::memory::desc& chosen) {
  if (plain == chosen) return {plain, chosen, {}};
  return {plain, chosen, dnnl::reorder(dnnl::reorder::primitive_desc(onednn_engine(), chosen, onednn_engine(), plain))};
}

dnnl::memory ConvOperand::bring_in(const void* data, dnnl::stream& stream) const {
  dnnl::memory user(plain, onednn_engine(), const_cast<void*>(data));
  if (!convert) return user;
  dnnl::memory converted(chosen, onednn_engine());
  convert.execute(stream, user, converted);
  return converted;
}

dnnl::memory ConvOperand::output_memory(void* data) const {
  return convert ? dnnl::memory(chosen, onednn_engine()) : dnnl::memory(plain, onednn_engine(), data);
}

void ConvOperand::take_out(const dnnl::memory& result, void* data, dnnl::stream& stream) const {
  if (!convert) return;
  dnnl::memory converted = result, user(plain, onednn_engine(), data);
  convert.execute(stream, converted, user);
}

}  // namespace opgraph::kernels
