// Convolutions over 1, 2 or 3 spatial dims, with stride, padding (numbers,
// or "same" / "valid"), dilation and groups: conv1d, conv2d, conv3d and their
// .padding forms, the transposed ones (conv_transpose1d, 2d, 3d, with
// output_padding) and convolution, which is any of these; and
// opgraph::conv2d, which applies an activation to the result in the same pass.
//
// The parameters and output shape come from shape/conv.cpp; the convolution
// itself (oneDNN for float32, plain loops for float64 and the reference) from
// engines/conv.cpp.

#include <source_location>
#include <span>
#include <vector>

#include "kernels/cpu/engines/conv.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "kernels/shape/conv.h"

namespace opgraph::kernels {
namespace {

// ---- Ops -------------------------------------------------------------------

// Where an op's parameters come from: each form's params() takes the weight
// and the op's attributes after its bias, as its schema orders them.
template <int64_t Spatial>
struct Plain {  // conv1d, conv2d, conv3d: int[] padding
  static ConvParams params(const TensorMeta&, Ints stride, Ints padding, Ints dilation, int64_t groups) {
    return conv_params(stride, padding, dilation, groups, Spatial);
  }
};

template <int64_t Spatial>
struct StrPadding {  // their .padding overloads: "valid" or "same"
  static ConvParams params(const TensorMeta& weight, Ints stride, std::string_view padding, Ints dilation,
                           int64_t groups) {
    return str_padding_conv_params(stride, padding, dilation, groups, Spatial, weight.shape);
  }
};

template <int64_t Spatial>
struct Transposed {  // conv_transpose1d, 2d, 3d: output_padding
  static ConvParams params(const TensorMeta&, Ints stride, Ints padding, Ints output_padding, int64_t groups,
                           Ints dilation) {
    return transposed_conv_params(stride, padding, output_padding, groups, dilation, Spatial);
  }
};

struct Any {  // convolution: the spatial rank from the weight, transposed as the attribute says
  static ConvParams params(const TensorMeta& weight, Ints stride, Ints padding, Ints dilation, bool transposed,
                           Ints output_padding, int64_t groups) {
    return convolution_params(stride, padding, dilation, transposed, output_padding, groups, weight);
  }
};

template <bool Reference>
void run_conv(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
              const ConvParams& p, Activation activation, const Tensor& out) {
  conv_forward(context, batched(input, p.spatial + 2), weight, bias ? *bias : Tensor(), batched(out, p.spatial + 2), p,
               activation, Reference);
}

// The shape function and kernels of an op of form F.
template <typename F, typename Signature = decltype(&F::params)>
struct Conv;

template <typename F, typename... A>
struct Conv<F, ConvParams (*)(const TensorMeta&, A...)> {
  static TensorMeta shape(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias, A... attributes) {
    return conv_output_meta(input, weight, bias, F::params(weight, attributes...));
  }

  template <bool Reference>
  static void kernel(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                     A... attributes, const Tensor& out) {
    run_conv<Reference>(context, input, weight, bias, F::params(weight.meta(), attributes...), Activation::None, out);
  }
};

TensorMeta fused_conv2d_shape(const TensorMeta& input, const TensorMeta& weight, const TensorMeta* bias, Ints stride,
                              Ints padding, Ints dilation, int64_t groups, std::string_view activation) {
  parse_activation(activation);
  return Conv<Plain<2>>::shape(input, weight, bias, stride, padding, dilation, groups);
}

template <bool Reference>
void fused_conv2d_cpu(const KernelContext& context, const Tensor& input, const Tensor& weight, const Tensor* bias,
                      Ints stride, Ints padding, Ints dilation, int64_t groups, std::string_view activation,
                      const Tensor& out) {
  run_conv<Reference>(context, input, weight, bias, conv_params(stride, padding, dilation, groups, 2),
                      parse_activation(activation), out);
}

// Registers an op of form F.
template <typename F>
void define_conv(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                 std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = Conv<F>::shape,
          .cpu = Conv<F>::template kernel<false>,
          .reference = Conv<F>::template kernel<true>,
          .backward = backward,
          .prepare = prepare_weights},
         where);
}

}  // namespace

void register_conv_ops(BuiltinOps& builtins) {
  define_conv<Plain<1>>(builtins,
                        "aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, "
                        "SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, "
                        "SymInt groups=1) -> Tensor");
  define_conv<Plain<2>>(builtins,
                        "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, "
                        "SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, "
                        "SymInt groups=1) -> Tensor",
                        "opgraph::conv2d_backward");
  define_conv<Plain<3>>(builtins,
                        "aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, "
                        "SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], "
                        "SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor");
  define_conv<StrPadding<1>>(builtins,
                             "aten::conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                             "SymInt[1] stride=[1], str padding=\"valid\", SymInt[1] dilation=[1], "
                             "SymInt groups=1) -> Tensor");
  define_conv<StrPadding<2>>(builtins,
                             "aten::conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                             "SymInt[2] stride=[1, 1], str padding=\"valid\", "
                             "SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor");
  define_conv<StrPadding<3>>(builtins,
                             "aten::conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                             "SymInt[3] stride=[1, 1, 1], str padding=\"valid\", "
                             "SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor");
  define_conv<Transposed<1>>(builtins,
                             "aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, "
                             "SymInt[1] stride=[1], SymInt[1] padding=[0], "
                             "SymInt[1] output_padding=[0], SymInt groups=1, "
                             "SymInt[1] dilation=[1]) -> Tensor");
  define_conv<Transposed<2>>(builtins,
                             "aten::conv_transpose2d.input(Tensor input, Tensor weight, "
                             "Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], "
                             "SymInt[2] output_padding=[0, 0], SymInt groups=1, "
                             "SymInt[2] dilation=[1, 1]) -> Tensor");
  define_conv<Transposed<3>>(builtins,
                             "aten::conv_transpose3d.input(Tensor input, Tensor weight, "
                             "Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
                             "SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], "
                             "SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor");
  define_conv<Any>(builtins,
                   "aten::convolution(Tensor input, Tensor weight, Tensor? bias, "
                   "SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, "
                   "SymInt[] output_padding, SymInt groups) -> Tensor");
  define(builtins,
         {.schema = "opgraph::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
                    "int[2] padding=0, int[2] dilation=1, int groups=1, *, str activation=\"none\") -> Tensor",
          .shape = fused_conv2d_shape,
          OPGRAPH_CPU_AND_REFERENCE(fused_conv2d_cpu),
          .backward = "opgraph::conv2d_act_backward",
          .prepare = prepare_weights});
}

}  // namespace opgraph::kernels
