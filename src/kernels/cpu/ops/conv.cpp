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

// Where an op's parameters come from.
enum class Form {
  Plain,       // conv1d, conv2d, conv3d: int[] padding
  StrPadding,  // their .padding overloads: "valid" or "same"
  Transposed,  // conv_transpose1d, 2d, 3d: output_padding
  Any,         // convolution: the spatial rank from the weight, transposed as the attribute says
};

template <int64_t Spatial, Form F>
ConvParams op_params(const Attrs& attrs, const TensorMeta& weight) {
  if constexpr (F == Form::StrPadding) {
    return str_padding_conv_params(attrs, Spatial, weight.shape);
  } else if constexpr (F == Form::Transposed) {
    return transposed_conv_params(attrs, Spatial);
  } else if constexpr (F == Form::Any) {
    return convolution_params(attrs, weight);
  } else {
    return conv_params(attrs, Spatial);
  }
}

template <int64_t Spatial, Form F = Form::Plain>
std::vector<TensorMeta> conv_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  return {conv_output_meta(*in[0], *in[1], in[2], op_params<Spatial, F>(attrs, *in[1]))};
}

std::vector<TensorMeta> fused_conv2d_shape(std::span<const TensorMeta* const> in, const Attrs& attrs) {
  activation_attr(attrs);
  return conv_shape<2>(in, attrs);
}

template <int64_t Spatial, Form F, bool Reference>
void run_conv(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out, const Attrs& attrs,
              Activation activation) {
  const ConvParams p = op_params<Spatial, F>(attrs, in[1].meta());
  const Tensor input = batched(in[0], p.spatial + 2), result = batched(out[0], p.spatial + 2);
  conv_forward(context, input, in[1], in[2], result, p, activation, Reference);
}

template <int64_t Spatial, Form F, bool Reference>
void conv_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
              const Attrs& attrs) {
  run_conv<Spatial, F, Reference>(context, in, out, attrs, Activation::None);
}

template <bool Reference>
void fused_conv2d_cpu(const KernelContext& context, std::span<const Tensor> in, std::span<const Tensor> out,
                      const Attrs& attrs) {
  run_conv<2, Form::Plain, Reference>(context, in, out, attrs, activation_attr(attrs));
}

// Registers an op of form F over `Spatial` dims (0 for aten::convolution).
template <int64_t Spatial, Form F>
void define_conv(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                 std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = conv_shape<Spatial, F>,
          .cpu = conv_cpu<Spatial, F, false>,
          .reference = conv_cpu<Spatial, F, true>,
          .backward = backward,
          .prepare = prepare_weights},
         where);
}

}  // namespace

void register_conv_ops(BuiltinOps& builtins) {
  define_conv<1, Form::Plain>(builtins,
                              "aten::conv1d(Tensor input, Tensor weight, Tensor? bias=None, "
                              "SymInt[1] stride=1, SymInt[1] padding=0, SymInt[1] dilation=1, "
                              "SymInt groups=1) -> Tensor");
  define_conv<2, Form::Plain>(builtins,
                              "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, "
                              "SymInt[2] stride=1, SymInt[2] padding=0, SymInt[2] dilation=1, "
                              "SymInt groups=1) -> Tensor",
                              "opgraph::conv2d_backward");
  define_conv<3, Form::Plain>(builtins,
                              "aten::conv3d(Tensor input, Tensor weight, Tensor? bias=None, "
                              "SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], "
                              "SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor");
  define_conv<1, Form::StrPadding>(builtins,
                                   "aten::conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                                   "SymInt[1] stride=[1], str padding=\"valid\", SymInt[1] dilation=[1], "
                                   "SymInt groups=1) -> Tensor");
  define_conv<2, Form::StrPadding>(builtins,
                                   "aten::conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                                   "SymInt[2] stride=[1, 1], str padding=\"valid\", "
                                   "SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor");
  define_conv<3, Form::StrPadding>(builtins,
                                   "aten::conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
                                   "SymInt[3] stride=[1, 1, 1], str padding=\"valid\", "
                                   "SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor");
  define_conv<1, Form::Transposed>(builtins,
                                   "aten::conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, "
                                   "SymInt[1] stride=[1], SymInt[1] padding=[0], "
                                   "SymInt[1] output_padding=[0], SymInt groups=1, "
                                   "SymInt[1] dilation=[1]) -> Tensor");
  define_conv<2, Form::Transposed>(builtins,
                                   "aten::conv_transpose2d.input(Tensor input, Tensor weight, "
                                   "Tensor? bias=None, SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], "
                                   "SymInt[2] output_padding=[0, 0], SymInt groups=1, "
                                   "SymInt[2] dilation=[1, 1]) -> Tensor");
  define_conv<3, Form::Transposed>(builtins,
                                   "aten::conv_transpose3d.input(Tensor input, Tensor weight, "
                                   "Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
                                   "SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], "
                                   "SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) -> Tensor");
  define_conv<0, Form::Any>(builtins,
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
