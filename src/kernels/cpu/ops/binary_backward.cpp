// The gradients of add, sub and mul with broadcasting, composed from the
// forward ops and aten::sum_to_size: each input's gradient is the output
// gradient (times the other input, for mul) summed down to that input's
// shape. The reference composes the same ops' reference implementations.
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

std::vector<Tensor> run(std::string_view op, std::vector<Tensor> inputs, const NamedAttrs& attrs, bool reference) {
  const OpDef& def = Registry::global().get(op);
  return call(def, inputs, Attrs::bind(def.schema, attrs), {.reference = reference});
}

// out = x summed over the dimensions broadcasting expanded out's shape to.
void sum_into(const Tensor& x, const Tensor& out, bool reference) {
  const OpDef& def = Registry::global().get("aten::sum_to_size");
  const std::vector<int64_t> size(out.shape().begin(), out.shape().end());
  call_out(def, std::span(&x, 1), std::span(&out, 1), Attrs::bind(def.schema, {{"size", size}}),
           {.reference = reference});
}

// (grad, self, other) -> (self, other), after checking grad against the
// forward op's output for self and other. Raw, since it hands its attributes
// on to the forward op's shape function as they are: each backward op has its
// forward op's attributes, in the same order.
ShapeFn gradient_shape(const char* forward) {
  return [forward](std::span<const TensorMeta* const> inputs, const Attrs& attrs) -> std::vector<TensorMeta> {
    const TensorMeta& grad = *inputs[0];
    const TensorMeta& self = *inputs[1];
    const TensorMeta& other = *inputs[2];
    dispatch_floating(self.dtype, "self", [](auto) {});
    const std::array<const TensorMeta*, 2> operands{&self, &other};
    const TensorMeta output = Registry::global().get(forward).shape_fn(operands, attrs)[0];
    OPGRAPH_CHECK(grad == output, "grad_output: expected ", output.str(), " (the output of ", forward, " for self ",
                  self.str(), " and other ", other.str(), "), got ", grad.str());
    return {self, other};
  };
}

// add: (grad, sign * alpha * grad); sub is add with sign -1.
template <int kSign, bool kReference>
void add_gradient(const KernelContext&, const Tensor& grad, const Tensor&, const Tensor&, double alpha,
                  const Tensor& grad_self, const Tensor& grad_other) {
  sum_into(grad, grad_self, kReference);
  const double scale = kSign * alpha;
  sum_into(scale == 1 ? grad : run("aten::mul.Scalar", {grad}, {{"other", scale}}, kReference)[0], grad_other,
           kReference);
}

// mul: (grad * other, grad * self).
template <bool kReference>
void mul_gradient(const KernelContext&, const Tensor& grad, const Tensor& self, const Tensor& other,
                  const Tensor& grad_self, const Tensor& grad_other) {
  sum_into(run("aten::mul.Tensor", {grad, other}, {}, kReference)[0], grad_self, kReference);
  sum_into(run("aten::mul.Tensor", {grad, self}, {}, kReference)[0], grad_other, kReference);
}

}  // namespace

void register_binary_backward_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "opgraph::add_backward(Tensor grad_output, Tensor self, Tensor other, *, Scalar alpha=1) "
                              "-> (Tensor grad_self, Tensor grad_other)",
                    .shape = gradient_shape("aten::add.Tensor"),
                    .cpu = add_gradient<1, false>,
                    .reference = add_gradient<1, true>});
  define(builtins, {.schema = "opgraph::sub_backward(Tensor grad_output, Tensor self, Tensor other, *, Scalar alpha=1) "
                              "-> (Tensor grad_self, Tensor grad_other)",
                    .shape = gradient_shape("aten::sub.Tensor"),
                    .cpu = add_gradient<-1, false>,
                    .reference = add_gradient<-1, true>});
  define(builtins, {.schema = "opgraph::mul_backward(Tensor grad_output, Tensor self, Tensor other) "
                              "-> (Tensor grad_self, Tensor grad_other)",
                    .shape = gradient_shape("aten::mul.Tensor"),
                    OPGRAPH_CPU_AND_REFERENCE(mul_gradient)});
}

}  // namespace opgraph::kernels
