// The gradient of the ops that only reshape (view, reshape, flatten): the
// output gradient's elements, in order, in the input's shape. One op per
// forward op, each taking (grad, the forward's input, the forward's
// attributes) as OpDef::backward expects.
#include <cstring>

#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// These functions serve three schemas that differ in attributes none of them
// reads (the forward op's size, shape or dims), so they keep the raw form.

std::vector<TensorMeta> reshape_backward_shape(std::span<const TensorMeta* const> inputs, const Attrs&) {
  const TensorMeta& grad = *inputs[0];
  const TensorMeta& self = *inputs[1];
  OPGRAPH_CHECK(grad.dtype == self.dtype && grad.numel() == self.numel(), "grad_output: expected ",
                dtype_name(self.dtype), " with ", self.numel(), " elements like self ", self.str(), ", got ",
                grad.str());
  return {self};
}

// Inputs arrive contiguous, so the elements are already in order.
void reshape_backward_cpu(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                          const Attrs&) {
  std::memcpy(outputs[0].data(), inputs[0].data(), outputs[0].nbytes());
}

// Element by element through the output's index, independent of memcpy.
void reshape_backward_reference(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                const Attrs&) {
  const auto* from = static_cast<const std::byte*>(inputs[0].data());
  auto* to = static_cast<std::byte*>(outputs[0].data());
  const size_t item = itemsize(outputs[0].dtype());
  for (int64_t i = 0; i < outputs[0].numel(); ++i) {
    for (size_t b = 0; b < item; ++b) to[i * item + b] = from[i * item + b];
  }
}

}  // namespace

void register_reshape_backward_ops(BuiltinOps& builtins) {
  for (const char* schema : {"opgraph::view_backward(Tensor grad_output, Tensor self, SymInt[] size) -> Tensor",
                             "opgraph::reshape_backward(Tensor grad_output, Tensor self, SymInt[] shape) -> Tensor",
                             "opgraph::flatten_backward(Tensor grad_output, Tensor self, int start_dim=0, "
                             "int end_dim=-1) -> Tensor"}) {
    define(builtins, {.schema = schema,
                      .shape = reshape_backward_shape,
                      .cpu = reshape_backward_cpu,
                      .reference = reshape_backward_reference});
  }
}

}  // namespace opgraph::kernels
