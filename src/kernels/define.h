// Defining a built-in op: schema, shape function, fast CPU kernel and its
// reference implementation, in one call, into the built-in set
// (kernels/builtin.h) that the registry receives as one batch.
#pragma once

#include <map>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kernels/typed.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

// Written with designated initializers ({.schema = ..., .shape = ..., .cpu =
// ..., .reference = ...}), so that two fields of one type cannot trade places
// unseen. The shape function and kernels are typed functions (kernels/typed.h),
// which define() checks against the schema.
struct OpSpec {
  const char* schema;
  ShapeSpec shape;
  KernelSpec cpu;
  KernelSpec reference;
  const char* backward = nullptr;  // qualified name of the gradient op
  bool accepts_strided_inputs = false;
  bool data_dependent_shapes = false;                   // see OpDef::data_dependent_shapes
  bool reshapes_input = false;                          // see OpDef::reshapes_input
  std::optional<size_t> in_place_input = std::nullopt;  // see OpDef::in_place_input
  PrepareFn prepare = nullptr;                          // see OpDef::prepare
};

// The built-in ops and their sample tables as the op families define them, in
// any order: nothing is checked against the rest of the set until the registry
// receives it (Registry::add checks a batch's backward references after the
// whole batch is in).
class BuiltinOps {
 public:
  void add(OpDef op) { ops_.push_back(std::move(op)); }
  // Appends to the samples of op `op`, which may be defined before or after.
  void add_samples(std::string_view op, const std::vector<Sample>& samples);
  // The samples added to `op` so far; an error if there are none.
  const std::vector<Sample>& samples(std::string_view op) const;
  // The ops, each with its samples; an error names a sample table whose op
  // is not in the set.
  std::vector<OpDef> take() &&;

 private:
  std::vector<OpDef> ops_;
  std::map<std::string, std::vector<Sample>, std::less<>> samples_;
};

void define(BuiltinOps& builtins, OpSpec spec, std::source_location where = std::source_location::current());

// The fast kernel and the reference of an OpSpec, where one template over
// `bool kReference` writes both: {.schema = ..., .shape = ...,
// OPGRAPH_CPU_AND_REFERENCE(relu_kernel)} gives .cpu = relu_kernel<false>
// and .reference = relu_kernel<true>, which cannot then trade places.
#define OPGRAPH_CPU_AND_REFERENCE(kernel) .cpu = kernel<false>, .reference = kernel<true>

// Calls fn(T{}) with T the C++ type of a floating-point dtype: float for
// float32, double for float64 and, where a kernel computes bfloat16 too, the
// type it holds bfloat16 in as `BFloat16` (the CPU kernels' BFloat16, CUDA's
// __nv_bfloat16). Anything else is an error naming the argument and the
// dtypes accepted.
template <typename BFloat16 = void, typename Fn>
void dispatch_floating(DType dtype, const char* argument, Fn&& fn) {
  constexpr bool takes_bfloat16 = !std::is_void_v<BFloat16>;
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::BFloat16:
      if constexpr (takes_bfloat16) return fn(BFloat16{});
      break;
    default: break;
  }
  throw Error(detail::concat(
      argument,
      takes_bfloat16 ? ": expected float32, float64 or bfloat16, got " : ": expected float32 or float64, got ",
      dtype_name(dtype)));
}

}  // namespace opgraph::kernels
