// Elementwise ops whose operands and result differ in dtype (comparisons,
// where, masked_fill, conversions): one loop over the broadcast shape that
// reads each operand as its own C++ type.
#pragma once

#include <cmath>
#include <tuple>
#include <utility>

#include "kernels/cpu/util/broadcast.h"
#include "kernels/define.h"

namespace opgraph::kernels {

// Calls fn(T{}) for T the C++ type of every dtype the elementwise ops take.
template <typename Fn>
void dispatch_elementwise(DType dtype, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::Bool: return fn(bool{});
    default:
      throw Error(
          detail::concat(argument, ": expected float32, float64, int64, int32 or bool, got ", dtype_name(dtype)));
  }
}

// The value of element `i` of `t`, whatever its dtype, as T.
template <typename T>
T element_as(const Tensor& t, int64_t i = 0) {
  if constexpr (is_complex_v<T>) {  // a complex number for a complex tensor
    if (t.dtype() == DType::Complex64) return static_cast<T>(t.data_ptr<const std::complex<float>>()[i]);
    if (t.dtype() == DType::Complex128) return static_cast<T>(t.data_ptr<const std::complex<double>>()[i]);
  }
  T value{};
  dispatch_elementwise(t.dtype(), "tensor", [&](auto zero) {
    using U = decltype(zero);
    value = static_cast<T>(t.data_ptr<const U>()[i]);
  });
  return value;
}

// A value given as a Scalar, or a 0-d tensor of another dtype (how an exported
// graph carries a Python number), as a T. A fraction cannot become an integer
// or a bool: PyTorch would promote the result to float, which these ops do not.
template <typename T>
T exact_scalar(double value, const char* argument) {
  if constexpr (!std::is_floating_point_v<T>) {
    OPGRAPH_CHECK(std::nearbyint(value) == value, argument, ": expected a whole number for a ", dtype_name(dtype_of<T>),
                  " tensor (no type promotion), got ", value);
  }
  return static_cast<T>(value);
}

// An operand of a broadcast loop: its data as In and its shape.
template <typename In>
struct Input {
  const In* data;
  std::span<const int64_t> shape;
};

// out[i] = fn(inputs[i]...) over out's shape, each input broadcast to it.
// kReference walks element by element through index arithmetic; otherwise
// rows of the merged shape run vectorized and, when large, in parallel.
template <typename Out, bool kReference, typename... In, typename Fn>
void map_broadcast(const KernelContext& context, const Tensor& out, Fn fn, Input<In>... inputs) {
  constexpr size_t N = sizeof...(In) + 1;
  const int64_t n = out.numel();
  if (n == 0) return;
  Out* y = out.data_ptr<Out>();
  Shape shape = out.shape();
  std::array<Strides, N> strides{contiguous_strides(shape), broadcast_strides(inputs.shape, shape)...};
  if constexpr (kReference) {
    [&]<size_t... K>(std::index_sequence<K...>) {
      for (int64_t i = 0; i < n; ++i) y[i] = fn(inputs.data[strided_offset(i, shape, strides[K + 1])]...);
    }(std::index_sequence_for<In...>{});
  } else if (n == 1) {
    y[0] = fn(inputs.data[0]...);
  } else {
    coalesce(shape, strides);
    const int64_t cols = shape.back();
    std::array<int64_t, N> steps;
    for (size_t k = 0; k < N; ++k) steps[k] = strides[k].back();
    parallel_items(context, n / cols, cols, [&](int64_t begin, int64_t end) {
      for_each_row(std::span<const int64_t>(shape), strides, begin, end, [&](const std::array<int64_t, N>& at) {
        [&]<size_t... K>(std::index_sequence<K...>) {
          Out* row = y + at[0];
          for (int64_t j = 0; j < cols; ++j) row[j] = fn(inputs.data[at[K + 1] + j * steps[K + 1]]...);
        }(std::index_sequence_for<In...>{});
      });
    });
  }
}

}  // namespace opgraph::kernels
