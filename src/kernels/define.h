// Registering a built-in op: schema, shape function, fast CPU kernel and its
// reference implementation, in one call.
#pragma once

#include <source_location>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

struct OpSpec {
  const char* schema;
  ShapeFn shape;
  KernelFn cpu;
  KernelFn reference;
  const char* backward = nullptr;  // qualified name of the gradient op
  bool accepts_strided_inputs = false;
  bool data_dependent_shapes = false;  // see OpDef::data_dependent_shapes
};

void define(Registry& registry, OpSpec spec, std::source_location where = std::source_location::current());

// Calls fn(T{}) with T the C++ type of a floating-point dtype; anything else is
// an error naming the argument.
template <typename Fn>
void dispatch_floating(DType dtype, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    default: throw Error(detail::concat(argument, ": expected float32 or float64, got ", dtype_name(dtype)));
  }
}

}  // namespace opgraph::kernels
