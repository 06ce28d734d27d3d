// Ops that return nothing and only check: torch.export leaves them in graphs
// to guard the assumptions it traced under (_assert_tensor_metadata after a
// dtype conversion, _assert_scalar and sym_constrain_range_for_size on sizes).
//
// The checks run in the shape functions, so a graph that breaks one fails when
// it is loaded or its shapes are inferred, before anything runs; the kernels
// have nothing left to do.
#include <algorithm>

#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// `stride` is not compared: opgraph passes contiguous tensors, whatever
// strides the traced tensor had.
std::vector<TensorMeta> assert_tensor_metadata_shape(const TensorMeta& a, std::optional<std::span<const int64_t>> size,
                                                     std::optional<std::span<const int64_t>>,
                                                     std::optional<DType> dtype, std::optional<std::string_view> device,
                                                     std::optional<std::string_view>) {
  if (dtype) OPGRAPH_CHECK(*dtype == a.dtype, "a: expected dtype ", dtype_name(*dtype), ", got ", a.str());
  if (size) {
    OPGRAPH_CHECK(std::ranges::equal(*size, a.shape), "a: expected shape ", shape_str(*size), ", got ", a.str());
  }
  if (device) OPGRAPH_CHECK(*device == "cpu" || *device == "cpu:0", "device: expected cpu, got ", *device);
  return {};
}

std::vector<TensorMeta> assert_scalar_shape(double self, std::string_view assert_msg) {
  OPGRAPH_CHECK(self != 0, "assertion failed: ", assert_msg);
  return {};
}

std::vector<TensorMeta> constrain_range_shape(double size, std::optional<int64_t> min, std::optional<int64_t> max) {
  OPGRAPH_CHECK(size >= min.value_or(0) && (!max || size <= *max), "size: expected a size in [", min.value_or(0), ", ",
                max ? std::to_string(*max) : "inf", "], got ", size);
  return {};
}

// The three ops' kernels: they read nothing, so one raw function serves all.
void no_work(const KernelContext&, std::span<const Tensor>, std::span<const Tensor>, const Attrs&) {}

}  // namespace

void register_assert_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, "
                              "ScalarType? dtype=None, *, Device? device=None, Layout? layout=None) -> ()",
                    .shape = assert_tensor_metadata_shape,
                    .cpu = no_work,
                    .reference = no_work});
  define(builtins, {.schema = "aten::_assert_scalar(Scalar self, str assert_msg) -> ()",
                    .shape = assert_scalar_shape,
                    .cpu = no_work,
                    .reference = no_work});
  define(builtins, {.schema = "aten::sym_constrain_range_for_size(Scalar size, *, int? min=None, int? max=None) -> ()",
                    .shape = constrain_range_shape,
                    .cpu = no_work,
                    .reference = no_work});
}

}  // namespace opgraph::kernels
