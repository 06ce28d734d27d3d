// Arithmetic on two tensors with NumPy/PyTorch broadcasting, the variants
// that take a Scalar instead of the second tensor, and sum_to_size, which
// folds a gradient back onto the shape an input was broadcast from.
//
// There is no type promotion: both operands have one dtype, and the result
// has it too. The one exception is a 0-d operand, how an exported graph
// carries a Python number (x * 0.5, positions + 1): it takes the other
// operand's dtype, as PyTorch's wrapped numbers do, unless a floating-point
// number meets an integer tensor, which PyTorch would promote to float.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "kernels/cpu/elementwise.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

// add, sub and mul also take int32 and int64; div takes floating point only,
// since true division of integers would change the dtype.
template <typename Fn>
void dispatch_arithmetic(DType dtype, bool integers, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Float64: return fn(double{});
    case DType::Int32: if (integers) return fn(int32_t{}); break;
    case DType::Int64: if (integers) return fn(int64_t{}); break;
    default: break;
  }
  throw Error(detail::concat(argument, ": expected ", integers ? "float32, float64, int32 or int64" : "float32 or float64",
                             ", got ", dtype_name(dtype)));
}

// A Scalar argument (int or float) as T. Integer tensors take integer scalars
// only: a float would promote the result in PyTorch.
template <typename T>
T scalar_attr(const Attrs& attrs, std::string_view name) {
  const AttrValue& value = attrs.get(name);
  if (const auto* integer = std::get_if<int64_t>(&value)) return static_cast<T>(*integer);
  const double real = attrs.get<double>(name);
  OPGRAPH_CHECK(std::is_floating_point_v<T>, name, ": expected an integer for a ", dtype_name(dtype_of<T>),
                " tensor (no type promotion), got ", real);
  return static_cast<T>(real);
}

// The ops: make<T>(attrs) returns the element function.
struct Add {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const Attrs& attrs) {
    return [alpha = scalar_attr<T>(attrs, "alpha")](T a, T b) { return static_cast<T>(a + alpha * b); };
  }
};
struct Sub {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const Attrs& attrs) {
    return [alpha = scalar_attr<T>(attrs, "alpha")](T a, T b) { return static_cast<T>(a - alpha * b); };
  }
};
struct Mul {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const Attrs&) {
    return [](T a, T b) { return static_cast<T>(a * b); };
  }
};
// maximum and minimum propagate NaN from either side, as PyTorch's do.
struct Maximum {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const Attrs&) {
    return [](T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); };
  }
};
struct Minimum {
  static constexpr bool integers = true;
  template <typename T>
  static auto make(const Attrs&) {
    return [](T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); };
  }
};
struct Div {
  static constexpr bool integers = false;
  template <typename T>
  static auto make(const Attrs&) {
    return [](T a, T b) { return a / b; };
  }
};

// ---- Binary kernels -----------------------------------------------------------

template <typename T>
struct Operand {
  const T* data;
  std::span<const int64_t> shape;
};

// The fast paths where `full` has as many elements as the output (so it is laid
// out like it): the other operand is a scalar, or a row repeated along the
// leading dims. fn(full element, other element). False if neither applies.
template <typename T, typename Fn>
bool broadcast_full(const KernelContext& context, const T* full, Operand<T> other, T* y,
                    std::span<const int64_t> shape, Fn fn) {
  const int64_t n = shape_numel(shape), cols = shape_numel(other.shape);
  if (cols == 1) {
    const T b = *other.data;
    parallel_items(context, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = fn(full[i], b);
    });
    return true;
  }
  // A trailing row: `other`, without leading 1s, is the output's last dims.
  const auto row = std::find_if(other.shape.begin(), other.shape.end(), [](int64_t e) { return e != 1; });
  const auto row_rank = other.shape.end() - row;
  if (!std::equal(row, other.shape.end(), shape.end() - row_rank, shape.end())) return false;
  const T* b = other.data;
  parallel_items(context, n / cols, cols, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* a = full + r * cols;
      T* out = y + r * cols;
      for (int64_t j = 0; j < cols; ++j) out[j] = fn(a[j], b[j]);
    }
  });
  return true;
}

template <typename T, typename Fn>
void broadcast_fast(const KernelContext& context, Operand<T> a, Operand<T> b, const Tensor& out, Fn fn) {
  const int64_t n = out.numel();
  if (n == 0) return;
  T* y = out.data_ptr<T>();
  const bool a_full = shape_numel(a.shape) == n, b_full = shape_numel(b.shape) == n;
  if (a_full && b_full) {
    parallel_items(context, n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = fn(a.data[i], b.data[i]);
    });
    return;
  }
  if (a_full && broadcast_full(context, a.data, b, y, out.shape(), fn)) return;
  if (b_full && broadcast_full(context, b.data, a, y, out.shape(), [&](T x, T z) { return fn(z, x); })) return;

  Shape shape = out.shape();
  std::array<Strides, 3> strides{contiguous_strides(shape), broadcast_strides(a.shape, shape),
                                 broadcast_strides(b.shape, shape)};
  coalesce(shape, strides);
  const int64_t cols = shape.back();
  const auto rows = [&](auto step_a, auto step_b) {
    parallel_items(context, n / cols, cols, [&](int64_t begin, int64_t end) {
      for_each_row(std::span<const int64_t>(shape), strides, begin, end, [&](const std::array<int64_t, 3>& at) {
        T* out_row = y + at[0];
        const T* a_row = a.data + at[1];
        const T* b_row = b.data + at[2];
        for (int64_t j = 0; j < cols; ++j) out_row[j] = fn(a_row[j * step_a], b_row[j * step_b]);
      });
    });
  };
  // Inputs are contiguous, so after coalescing each operand steps through a
  // row by 1, or by 0 where it is broadcast along it (never both). As
  // compile-time constants the strides let GCC vectorize the rows.
  using Zero = std::integral_constant<int64_t, 0>;
  using One = std::integral_constant<int64_t, 1>;
  if (strides[1].back() == 0) return rows(Zero{}, One{});
  if (strides[2].back() == 0) return rows(One{}, Zero{});
  rows(One{}, One{});
}

// Element by element, each operand read through its broadcast strides.
template <typename T, typename Fn>
void broadcast_reference(Operand<T> a, Operand<T> b, const Tensor& out, Fn fn) {
  const Shape& shape = out.shape();
  const Strides strides_a = broadcast_strides(a.shape, shape), strides_b = broadcast_strides(b.shape, shape);
  T* y = out.data_ptr<T>();
  for (int64_t i = 0; i < out.numel(); ++i) {
    y[i] = fn(a.data[strided_offset(i, shape, strides_a)], b.data[strided_offset(i, shape, strides_b)]);
  }
}

DType result_dtype(const TensorMeta& self, const TensorMeta& other) {
  if (self.dtype == other.dtype) return self.dtype;
  const auto takes_dtype_of = [](const TensorMeta& number, const TensorMeta& tensor) {
    return number.dim() == 0 && (is_floating_point(tensor.dtype) || !is_floating_point(number.dtype));
  };
  if (takes_dtype_of(other, self)) return self.dtype;
  if (takes_dtype_of(self, other)) return other.dtype;
  throw Error(detail::concat("other: expected ", dtype_name(self.dtype),
                             " like self (there is no type promotion), got ", dtype_name(other.dtype)));
}

// `t` as an operand of type T: its data, or its one element converted into `storage`.
template <typename T>
Operand<T> operand(const Tensor& t, T& storage) {
  if (t.dtype() == dtype_of<T>) return {t.data_ptr<const T>(), t.shape()};
  storage = element_as<T>(t);
  return {&storage, {}};
}

// The second operand is the tensor `other`, or with kScalar the Scalar `other`.
template <typename Op, bool kScalar, bool kReference>
void binary_kernel(const KernelContext& context, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                   const Attrs& attrs) {
  dispatch_arithmetic(outputs[0].dtype(), Op::integers, "self", [&](auto zero) {
    using T = decltype(zero);
    T self_number{}, scalar{};
    const Operand<T> a = operand(inputs[0], self_number);
    Operand<T> b{&scalar, {}};
    if constexpr (kScalar) {
      scalar = scalar_attr<T>(attrs, "other");
    } else {
      b = operand(inputs[1], scalar);
    }
    if constexpr (kReference) {
      broadcast_reference(a, b, outputs[0], Op::template make<T>(attrs));
    } else {
      broadcast_fast(context, a, b, outputs[0], Op::template make<T>(attrs));
    }
  });
}

template <typename Op, bool kScalar>
std::vector<TensorMeta> binary_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta& self = *inputs[0];
  const DType dtype = kScalar ? self.dtype : result_dtype(self, *inputs[1]);
  dispatch_arithmetic(dtype, Op::integers, "self", [&](auto zero) {
    using T = decltype(zero);
    static_cast<void>(Op::template make<T>(attrs));  // checks alpha
    if constexpr (kScalar) static_cast<void>(scalar_attr<T>(attrs, "other"));
  });
  return {{dtype, kScalar ? self.shape : broadcast_shapes(self.shape, inputs[1]->shape)}};
}

template <typename Op, bool kScalar>
void define_binary(Registry& registry, const char* schema, const char* backward = nullptr,
                   std::source_location where = std::source_location::current()) {
  define(registry,
         {.schema = schema,
          .shape = binary_shape<Op, kScalar>,
          .cpu = binary_kernel<Op, kScalar, false>,
          .reference = binary_kernel<Op, kScalar, true>,
          .backward = backward},
         where);
}

// ---- sum_to_size ----------------------------------------------------------------

std::vector<TensorMeta> sum_to_size_shape(std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  const TensorMeta& self = *inputs[0];
  dispatch_floating(self.dtype, "self", [](auto) {});
  const auto& size = attrs.get<std::vector<int64_t>>("size");
  bool expandable = size.size() <= self.shape.size();
  for (size_t i = 1; expandable && i <= size.size(); ++i) {
    const int64_t extent = size[size.size() - i];
    expandable = extent == 1 || extent == self.shape[self.shape.size() - i];
  }
  OPGRAPH_CHECK(expandable, "size: expected a shape that broadcasts to self's ", shape_str(self.shape), ", got ",
                shape_str(size));
  return {{self.dtype, Shape(size)}};
}

// Sums are accumulated in double: a float32 gradient may fold many elements.
template <bool kReference>
void sum_to_size_kernel(const KernelContext&, std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                        const Attrs&) {
  const Tensor& self = inputs[0];
  const Tensor& out = outputs[0];
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    std::vector<double> sum(static_cast<size_t>(out.numel()), 0.0);
    Shape shape = self.shape();
    std::array<Strides, 2> strides{contiguous_strides(shape), broadcast_strides(out.shape(), shape)};
    if constexpr (kReference) {
      for (int64_t i = 0; i < self.numel(); ++i) sum[strided_offset(i, shape, strides[1])] += x[i];
    } else if (self.numel() == out.numel()) {
      std::copy(x, x + self.numel(), y);  // nothing to fold
      return;
    } else if (self.numel() > 0) {
      coalesce(shape, strides);
      const int64_t cols = shape.back();
      const bool folds_row = strides[1].back() == 0;  // else the row maps onto a row of the result
      for_each_row(std::span<const int64_t>(shape), strides, 0, self.numel() / cols,
                   [&](const std::array<int64_t, 2>& at) {
                     const T* row = x + at[0];
                     double* target = sum.data() + at[1];
                     if (folds_row) {
                       double total = 0;
                       for (int64_t j = 0; j < cols; ++j) total += row[j];
                       *target += total;
                     } else {
                       for (int64_t j = 0; j < cols; ++j) target[j] += row[j];
                     }
                   });
    }
    std::transform(sum.begin(), sum.end(), y, [](double s) { return static_cast<T>(s); });
  });
}

}  // namespace

void register_binary_ops(Registry& registry) {
  define_binary<Add, false>(registry, "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                            "opgraph::add_backward");
  define_binary<Sub, false>(registry, "aten::sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
                            "opgraph::sub_backward");
  define_binary<Mul, false>(registry, "aten::mul.Tensor(Tensor self, Tensor other) -> Tensor", "opgraph::mul_backward");
  define_binary<Div, false>(registry, "aten::div.Tensor(Tensor self, Tensor other) -> Tensor");
  define_binary<Maximum, false>(registry, "aten::maximum(Tensor self, Tensor other) -> Tensor");
  define_binary<Minimum, false>(registry, "aten::minimum(Tensor self, Tensor other) -> Tensor");
  define_binary<Add, true>(registry, "aten::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  define_binary<Sub, true>(registry, "aten::sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor");
  define_binary<Mul, true>(registry, "aten::mul.Scalar(Tensor self, Scalar other) -> Tensor");
  define_binary<Div, true>(registry, "aten::div.Scalar(Tensor self, Scalar other) -> Tensor");
  define(registry, {.schema = "aten::sum_to_size(Tensor self, SymInt[] size) -> Tensor",
                    .shape = sum_to_size_shape,
                    .cpu = sum_to_size_kernel<false>,
                    .reference = sum_to_size_kernel<true>});
}

}  // namespace opgraph::kernels
