#include "kernels/cpu/conv_onednn.h"

namespace opgraph::kernels {

ConvDims conv_dims(const ConvParams& p, const Shape& input, const Shape& weight, const Shape& out) {
  using tag = dnnl::memory::format_tag;
  const bool one_d = p.spatial == 1;
  ConvDims d;
  d.src = input;
  d.weights = weight;
  if (p.groups > 1) {
    d.weights[0] /= p.groups;
    d.weights.insert(d.weights.begin(), p.groups);
  }
  d.dst = out;
  d.bias = {out[1]};
  d.strides = p.stride;
  d.dilates = p.dilation;
  for (int64_t& gaps : d.dilates) gaps -= 1;
  d.padding = p.padding;
  d.plain_activations = one_d ? tag::ncw : tag::nchw;
  d.plain_weights = p.groups > 1 ? (one_d ? tag::goiw : tag::goihw) : (one_d ? tag::oiw : tag::oihw);
  return d;
}

std::vector<int64_t> conv_key(const KernelContext& context, const Tensor& input, const Tensor& weight, bool has_bias,
                              const ConvParams& p) {
  std::vector<int64_t> key = {context.pool->num_threads(), p.spatial, p.groups, has_bias};
  for (const auto* values : {&input.shape(), &weight.shape(), &p.stride, &p.padding, &p.dilation}) {
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
