// Elementwise maps over tensors of one shape and one dtype (activations,
// unary math): define_elementwise<Op> registers an op from a small struct.
//
// The struct's constructor takes the tensors' dtype and the call's attributes,
// typed and in schema order (declared as `using Attributes = std::tuple<...>`),
// and validates them; its call operator maps one element and is a template,
// so the fast kernel runs it in the tensor's type while the reference runs it
// in double (integers in their own type, which is exact). It may declare
// `accepts` (floating point by default) and return bool for a bool result.
// The loops around it are shared by every op.
#pragma once

#include <array>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernels/cpu/util/broadcast.h"
#include "kernels/define.h"

namespace opgraph::kernels {

// The dtypes an elementwise op takes.
enum class Accepts {
  Floating,  // float32, float64
  Numbers,   // and int32, int64
  All,       // and bool
};

template <typename Op>
constexpr Accepts accepts() {
  if constexpr (requires { Op::accepts; }) {
    return Op::accepts;
  } else {
    return Accepts::Floating;
  }
}

// Calls fn(T{}) with T the C++ type of `dtype` among those Op accepts;
// anything else is an error naming the argument.
template <typename Op, typename Fn>
void dispatch_accepted(DType dtype, const char* argument, Fn&& fn) {
  constexpr Accepts kAccepts = accepts<Op>();
  if constexpr (kAccepts == Accepts::Floating) {
    dispatch_floating(dtype, argument, fn);
  } else {
    switch (dtype) {
      case DType::Float32: return fn(float{});
      case DType::Float64: return fn(double{});
      case DType::Int32: return fn(int32_t{});
      case DType::Int64: return fn(int64_t{});
      case DType::Bool:
        if constexpr (kAccepts == Accepts::All) return fn(bool{});
        break;
      default: break;
    }
    throw Error(detail::concat(argument, ": expected float32, float64, int32",
                               kAccepts == Accepts::All ? ", int64 or bool" : " or int64", ", got ",
                               dtype_name(dtype)));
  }
}

// -a for an integer, in unsigned arithmetic where overflow is defined: the
// lowest value wraps to itself, as in PyTorch.
template <typename T>
T wrapping_neg(T a) {
  return static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(a));
}

// The type an Op's reference runs in for tensors of type T.
template <typename T>
using ReferenceType = std::conditional_t<std::is_floating_point_v<T>, double, T>;

template <size_t>
using Double = double;

// Whether Op gives a bool for each element rather than a value of the input's type.
template <typename Op>
constexpr bool gives_bool() {
  return []<size_t... I>(std::index_sequence<I...>) {
    return std::is_same_v<decltype(std::declval<const Op&>()(std::declval<Double<I>>()...)), bool>;
  }(std::make_index_sequence<Op::inputs.size()>{});
}

// Calls body(x, y, n): x the input pointers of type T, y the output.
template <typename Op, typename Body>
void with_pointers(const std::array<const Tensor*, Op::inputs.size()>& inputs, const Tensor& output, Body&& body) {
  dispatch_accepted<Op>(inputs[0]->dtype(), Op::inputs[0], [&](auto zero) {
    using T = decltype(zero);
    using Out = std::conditional_t<gives_bool<Op>(), bool, T>;
    std::array<const T*, Op::inputs.size()> x;
    for (size_t i = 0; i < x.size(); ++i) x[i] = inputs[i]->template data_ptr<const T>();
    body(x, output.data_ptr<Out>(), output.numel());
  });
}

// The C++ types of the attributes Op's constructor takes after the dtype, in
// schema order (an Op declares them as `Attributes`; none by default).
template <typename Op>
struct AttributesOf {
  using type = std::tuple<>;
};
template <typename Op>
  requires requires { typename Op::Attributes; }
struct AttributesOf<Op> {
  using type = typename Op::Attributes;
};

// Op for a call: built from the dtype and the attributes, or default-built
// when it takes none.
template <typename Op, typename... A>
Op make_op(DType dtype, A... attributes) {
  if constexpr (std::is_constructible_v<Op, DType, A...>) {
    return Op(dtype, attributes...);
  } else {
    static_assert(sizeof...(A) == 0, "an elementwise Op with Attributes is built from (DType, Attributes...)");
    return Op{};
  }
}

template <size_t>
using InputMeta = const TensorMeta&;
template <size_t>
using InputTensor = const Tensor&;

// The typed shape function and kernels of Op: its inputs, then its
// attributes, as the schema has them (define() checks the schema against
// them).
template <typename Op, typename Inputs = std::make_index_sequence<Op::inputs.size()>,
          typename Attributes = typename AttributesOf<Op>::type>
struct ElementwiseMap;

template <typename Op, size_t... I, typename... A>
struct ElementwiseMap<Op, std::index_sequence<I...>, std::tuple<A...>> {
  static constexpr size_t kInputs = sizeof...(I);

  // Every input: a dtype Op accepts, with the first input's dtype and shape.
  // The output has that shape, and that dtype or bool. Building the Op checks
  // the attributes.
  static TensorMeta shape(InputMeta<I>... input_metas, A... attributes) {
    const std::array<const TensorMeta*, kInputs> inputs{&input_metas...};
    const TensorMeta& first = *inputs[0];
    dispatch_accepted<Op>(first.dtype, Op::inputs[0], [](auto) {});
    for (size_t i = 1; i < kInputs; ++i) {
      OPGRAPH_CHECK(inputs[i]->dtype == first.dtype, Op::inputs[i], ": expected ", dtype_name(first.dtype), " like ",
                    Op::inputs[0], ", got ", dtype_name(inputs[i]->dtype));
      OPGRAPH_CHECK(inputs[i]->shape == first.shape, Op::inputs[i], ": expected shape ", shape_str(first.shape),
                    " like ", Op::inputs[0], ", got ", shape_str(inputs[i]->shape));
    }
    static_cast<void>(make_op<Op>(first.dtype, attributes...));
    return {gives_bool<Op>() ? DType::Bool : first.dtype, first.shape};
  }

  // Contiguous loops GCC vectorizes for the CPU's widest vectors, split over
  // the pool when large.
  static void fast(const KernelContext& context, InputTensor<I>... input_tensors, A... attributes, const Tensor& out) {
    const std::array<const Tensor*, kInputs> inputs{&input_tensors...};
    const Op op = make_op<Op>(inputs[0]->dtype(), attributes...);
    with_pointers<Op>(inputs, out, [&](const auto& x, auto* y, int64_t n) {
      parallel_items(context, n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) y[i] = op(x[I][i]...);
      });
    });
  }

  // One element at a time, floats in double: the fast kernel's float32
  // results are held to a more precise evaluation of the same formula.
  static void reference(const KernelContext&, InputTensor<I>... input_tensors, A... attributes, const Tensor& out) {
    const std::array<const Tensor*, kInputs> inputs{&input_tensors...};
    const Op op = make_op<Op>(inputs[0]->dtype(), attributes...);
    with_pointers<Op>(inputs, out, [&](const auto& x, auto* y, int64_t n) {
      using Out = std::remove_pointer_t<decltype(y)>;
      using Wide = ReferenceType<std::remove_cvref_t<decltype(*x[0])>>;
      for (int64_t i = 0; i < n; ++i) y[i] = static_cast<Out>(op(static_cast<Wide>(x[I][i])...));
    });
  }
};

template <typename Op>
void define_elementwise(BuiltinOps& builtins, const char* schema, const char* backward = nullptr,
                        std::source_location where = std::source_location::current()) {
  define(builtins,
         {.schema = schema,
          .shape = ElementwiseMap<Op>::shape,
          .cpu = ElementwiseMap<Op>::fast,
          .reference = ElementwiseMap<Op>::reference,
          .backward = backward},
         where);
}

}  // namespace opgraph::kernels
