// Convolutions: conv1d, conv2d and convolution (not transposed), with
// stride, padding, dilation and groups.
//
// float32 runs on oneDNN's convolution, which picks its own blocked layouts
// ("any"); the caller's NCHW buffers are reordered in and out when the chosen
// layout differs. float64 and the reference use a plain loop.

#include "kernels/cpu/onednn.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// A convolution over `spatial` dimensions (1 or 2), batch and channels first.
struct ConvParams {
  int64_t spatial = 2;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
};

// Spatial parameters come as lists of one value per dimension or one value
// for all.
std::vector<int64_t> per_dimension(const std::vector<int64_t>& values, int64_t spatial, const char* name,
                                   int64_t lowest) {
  OPGRAPH_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == spatial, name, ": expected 1 or ",
                spatial, " values, got ", shape_str(values));
  std::vector<int64_t> out(spatial, values[0]);
  if (values.size() > 1) out = values;
  for (int64_t v : out) OPGRAPH_CHECK(v >= lowest, name, ": expected values of at least ", lowest, ", got ", shape_str(values));
  return out;
}

ConvParams params(const Attrs& attrs, int64_t spatial) {
  ConvParams p;
  p.spatial = spatial;
  p.stride = per_dimension(attrs.get<std::vector<int64_t>>("stride"), spatial, "stride", 1);
  p.padding = per_dimension(attrs.get<std::vector<int64_t>>("padding"), spatial, "padding", 0);
  p.dilation = per_dimension(attrs.get<std::vector<int64_t>>("dilation"), spatial, "dilation", 1);
  p.groups = attrs.get<int64_t>("groups");
  OPGRAPH_CHECK(p.groups >= 1, "groups: expected at least 1, got ", p.groups);
  return p;
}

// Output shape; checks every operand against the others.
Shape conv_output(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias, const ConvParams& p) {
  const int64_t rank = p.spatial + 2;
  OPGRAPH_CHECK(input.dtype == DType::Float32 || input.dtype == DType::Float64,
                "input: expected float32 or float64, got ", input.str());
  OPGRAPH_CHECK(weight.dtype == input.dtype, "weight: expected ", dtype_name(input.dtype), " like input, got ",
                weight.str());
  OPGRAPH_CHECK(input.dim() == rank, "input: expected rank ", rank, " (batch, channels, spatial...), got ",
                input.str());
  OPGRAPH_CHECK(weight.dim() == rank, "weight: expected rank ", rank, " (out_channels, in_channels/groups, kernel...), got ",
                weight.str());
  const int64_t channels = input.shape[1], out_channels = weight.shape[0];
  OPGRAPH_CHECK(channels % p.groups == 0 && out_channels % p.groups == 0, "groups: ", p.groups,
                " must divide the input channels (", channels, ") and output channels (", out_channels, ")");
  OPGRAPH_CHECK(weight.shape[1] * p.groups == channels, "weight: expected ", channels / p.groups,
                " input channels per group (input ", input.str(), ", groups ", p.groups, "), got ", weight.str());
  if (bias) {
    OPGRAPH_CHECK(bias->dtype == input.dtype && bias->dim() == 1 && bias->shape[0] == out_channels,
                  "bias: expected ", dtype_name(input.dtype), "[", out_channels, "], got ", bias->str());
  }
  Shape out{input.shape[0], out_channels};
  for (int64_t d = 0; d < p.spatial; ++d) {
    const int64_t span = p.dilation[d] * (weight.shape[2 + d] - 1) + 1;
    const int64_t padded = input.shape[2 + d] + 2 * p.padding[d];
    OPGRAPH_CHECK(padded >= span, "input: spatial size ", input.shape[2 + d], " (padded to ", padded,
                  ") is smaller than the dilated kernel (", span, ")");
    out.push_back((padded - span) / p.stride[d] + 1);
  }
  return out;
}

dnnl::memory::dims dims(std::span<const int64_t> values) { return dnnl::memory::dims(values.begin(), values.end()); }

void onednn_conv(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Tensor& out, const ConvParams& p) {
  using dnnl::memory;
  const auto f32 = memory::data_type::f32;
  const memory::format_tag plain = p.spatial == 1 ? memory::format_tag::ncw : memory::format_tag::nchw;
  // Grouped weights get a leading group dimension: [G, O/G, I/G, k...].
  Shape weight_shape = weight.shape();
  if (p.groups > 1) {
    weight_shape[0] /= p.groups;
    weight_shape.insert(weight_shape.begin(), p.groups);
  }
  const memory::format_tag weight_plain =
      p.groups > 1 ? (p.spatial == 1 ? memory::format_tag::goiw : memory::format_tag::goihw)
                   : (p.spatial == 1 ? memory::format_tag::oiw : memory::format_tag::oihw);
  const memory::desc src_md(dims(input.shape()), f32, memory::format_tag::any);
  const memory::desc weight_md(dims(weight_shape), f32, memory::format_tag::any);
  const memory::desc dst_md(dims(out.shape()), f32, memory::format_tag::any);
  const memory::desc bias_md = bias.defined() ? memory::desc({out.size(1)}, f32, memory::format_tag::x) : memory::desc();
  std::vector<int64_t> dilation(p.dilation);
  for (int64_t& d : dilation) d -= 1;  // oneDNN counts the gaps between taps
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
                                      weight_md, bias_md, dst_md, dims(p.stride), dims(dilation), dims(p.padding),
                                      dims(p.padding)),
      onednn_engine());

  dnnl::stream stream = onednn_stream(context);
  // The caller's memory, and the primitive's layout of it (a reorder when they differ).
  auto bring_in = [&](const memory::desc& want, const memory::desc& user_md, const void* data) {
    memory user(user_md, onednn_engine(), const_cast<void*>(data));
    if (want == user_md) return user;
    memory converted(want, onednn_engine());
    dnnl::reorder(user, converted).execute(stream, user, converted);
    return converted;
  };
  memory src = bring_in(pd.src_desc(), memory::desc(dims(input.shape()), f32, plain), input.data());
  memory weights = bring_in(pd.weights_desc(), memory::desc(dims(weight_shape), f32, weight_plain), weight.data());
  const memory::desc dst_user_md(dims(out.shape()), f32, plain);
  memory dst_user(dst_user_md, onednn_engine(), out.data());
  memory dst = pd.dst_desc() == dst_user_md ? dst_user : memory(pd.dst_desc(), onednn_engine());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, memory(bias_md, onednn_engine(), bias.data()));
  dnnl::convolution_forward(pd).execute(stream, args);
  if (dst != dst_user) dnnl::reorder(dst, dst_user).execute(stream, dst, dst_user);
  stream.wait();
}

// out[n, o, y, x] = bias[o] + sum over the group's input channels c and taps
// (i, j) of input[n, c, y*s - p + i*d, x*s - p + j*d] * weight[o, c, i, j],
// as 2-D with a unit height for 1-D.
template <typename T>
void plain_conv(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& out,
                const ConvParams& p) {
  const bool one_d = p.spatial == 1;
  auto extent = [one_d](const Tensor& t, int64_t d) { return one_d ? (d == 2 ? 1 : t.size(d - 1)) : t.size(d); };
  const int64_t batch = input.size(0), channels = input.size(1), out_channels = out.size(1);
  const int64_t height = extent(input, 2), width = extent(input, 3);
  const int64_t kh = extent(weight, 2), kw = extent(weight, 3);
  const int64_t oh = extent(out, 2), ow = extent(out, 3);
  const int64_t sh = one_d ? 1 : p.stride[0], sw = p.stride.back();
  const int64_t ph = one_d ? 0 : p.padding[0], pw = p.padding.back();
  const int64_t dh = one_d ? 1 : p.dilation[0], dw = p.dilation.back();
  const int64_t per_group = channels / p.groups, out_per_group = out_channels / p.groups;
  const T* x = input.data_ptr<T>();
  const T* w = weight.data_ptr<T>();
  T* o = out.data_ptr<T>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < out_channels; ++oc) {
      const int64_t first = oc / out_per_group * per_group;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t xo = 0; xo < ow; ++xo) {
          double sum = bias.defined() ? double(bias.data_ptr<T>()[oc]) : 0.0;
          for (int64_t c = 0; c < per_group; ++c) {
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t yi = y * sh - ph + i * dh;
              if (yi < 0 || yi >= height) continue;
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t xi = xo * sw - pw + j * dw;
                if (xi < 0 || xi >= width) continue;
                sum += double(x[((n * channels + first + c) * height + yi) * width + xi]) *
                       w[((oc * per_group + c) * kh + i) * kw + j];
              }
            }
          }
          o[((n * out_channels + oc) * oh + y) * ow + xo] = static_cast<T>(sum);
        }
      }
    }
  }
}

// Unbatched inputs (C, spatial...) are run as a batch of one.
Tensor batched(const Tensor& t, int64_t rank) {
  if (t.dim() == rank) return t;
  Shape shape = t.shape();
  shape.insert(shape.begin(), 1);
  return t.view(shape);
}

TensorMeta batched(const TensorMeta& meta, int64_t rank) {
  if (meta.dim() != rank - 1) return meta;
  Shape shape = meta.shape;
  shape.insert(shape.begin(), 1);
  return {meta.dtype, shape};
}

template <int64_t Spatial>
std::vector<TensorMeta> conv_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  const TensorMeta input = batched(*in[0], Spatial + 2);
  Shape out = conv_output(input, *in[1], in[2], params(attrs, Spatial));
  if (in[0]->dim() == Spatial + 1) out.erase(out.begin());
  return {{in[0]->dtype, out}};
}

template <int64_t Spatial, bool Reference>
void conv_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
              const Attrs& attrs) {
  const ConvParams p = params(attrs, Spatial);
  const Tensor input = batched(in[0], Spatial + 2), result = batched(out[0], Spatial + 2);
  if (result.numel() == 0) return;
  if (!Reference && input.dtype() == DType::Float32) return onednn_conv(context, input, in[1], in[2], result, p);
  dispatch_floating(input.dtype(), "input",
                    [&](auto zero) { plain_conv<decltype(zero)>(input, in[1], in[2], result, p); });
}

// aten::convolution: the spatial rank comes from the weight.
void check_convolution(const Attrs& attrs) {
  OPGRAPH_CHECK(!attrs.get<bool>("transposed"), "transposed: transposed convolution is not supported");
}

std::vector<TensorMeta> convolution_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  check_convolution(attrs);
  OPGRAPH_CHECK(in[1]->dim() == 3 || in[1]->dim() == 4, "weight: expected rank 3 or 4 (1-D or 2-D convolution), got ",
                in[1]->str());
  return in[1]->dim() == 3 ? conv_shape<1>(in, attrs) : conv_shape<2>(in, attrs);
}

template <bool Reference>
void convolution_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                     const Attrs& attrs) {
  check_convolution(attrs);
  if (in[1].dim() == 3) return conv_cpu<1, Reference>(context, in, out, attrs);
  conv_cpu<2, Reference>(context, in, out, attrs);
}

}  // namespace

void register_conv_ops(Registry& registry) {
  define(registry, {"aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=1, "
                    "SymInt[1] padding=0, SymInt[1] dilation=1, SymInt groups=1) -> Tensor",
                    conv_shape<1>, conv_cpu<1, false>, conv_cpu<1, true>});
  define(registry, {"aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, "
                    "SymInt[2] padding=0, SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
                    conv_shape<2>, conv_cpu<2, false>, conv_cpu<2, true>});
  define(registry, {"aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
                    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
                    convolution_shape, convolution_cpu<false>, convolution_cpu<true>});
}

}  // namespace opgraph::kernels
