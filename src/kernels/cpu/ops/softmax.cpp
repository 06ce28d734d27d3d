// softmax and log_softmax along one dim, and their gradients.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/cpu/util/softmax_row.h"
#include "kernels/cpu/util/vec_math.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

using Kind = SoftmaxKind;

// ---- Shape functions ------------------------------------------------------

TensorMeta softmax_input(const TensorMeta& self, int64_t dim) {
  check_floating(self, "self");
  wrap_dim(dim, self.dim(), "dim");
  return self;
}

TensorMeta softmax_int_shape(const TensorMeta& self, int64_t dim, std::optional<DType> dtype) {
  check_dtype_argument(dtype, "dtype", self.dtype);
  return softmax_input(self, dim);
}

TensorMeta underscore_softmax_shape(const TensorMeta& self, int64_t dim, bool half_to_float) {
  OPGRAPH_CHECK(!half_to_float, "half_to_float: expected False (float16 inputs are not supported), got True");
  return softmax_input(self, dim);
}

TensorMeta softmax_backward_shape(const TensorMeta& grad_output, const TensorMeta& output, int64_t dim,
                                  DType input_dtype) {
  check_floating(output, "output");
  check_same_meta(grad_output, "grad_output", output, "output");
  wrap_dim(dim, output.dim(), "dim");
  OPGRAPH_CHECK(input_dtype == output.dtype, "input_dtype: expected ", dtype_name(output.dtype),
                " like output (no conversion is supported), got ", dtype_name(input_dtype));
  return output;
}

// ---- Fast kernels ---------------------------------------------------------

// softmax:     dx = y * (dy - sum(dy * y))
// log_softmax: dx = dy - exp(y) * sum(dy)
template <typename T>
void softmax_backward_row(Kind kind, const T* dy, const T* y, T* dx, int64_t n) {
  if (kind == Kind::Softmax) {
    const T dot = static_cast<T>(reduce_lanes(
        n, 0.0, [=](int64_t i) { return static_cast<double>(dy[i]) * y[i]; },
        [](double a, double b) { return a + b; }));
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] * (dy[i] - dot);
  } else {
    const T sum = static_cast<T>(row_sum(dy, n));
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - fast_exp(y[i]) * sum;
  }
}

// The same along `width` columns of `size` elements, `stride` apart: each
// step of the k loops is a vectorizable pass across the columns.
template <typename T>
void softmax_columns(Kind kind, const T* x, T* y, int64_t size, int64_t stride, int64_t width) {
  T max[kColumnTile];
  double sum[kColumnTile] = {};
  std::fill_n(max, width, -std::numeric_limits<T>::infinity());
  for (int64_t k = 0; k < size; ++k) {
    for (int64_t j = 0; j < width; ++j) max[j] = x[k * stride + j] > max[j] ? x[k * stride + j] : max[j];
  }
  for (int64_t k = 0; k < size; ++k) {
    for (int64_t j = 0; j < width; ++j) {
      y[k * stride + j] = fast_exp(x[k * stride + j] - max[j]);
      sum[j] += y[k * stride + j];
    }
  }
  T factor[kColumnTile];  // 1 / sum for softmax, log(sum) for log_softmax
  for (int64_t j = 0; j < width; ++j)
    factor[j] = static_cast<T>(kind == Kind::Softmax ? 1.0 / sum[j] : std::log(sum[j]));
  for (int64_t k = 0; k < size; ++k) {
    T* yk = y + k * stride;
    const T* xk = x + k * stride;
    if (kind == Kind::Softmax) {
      for (int64_t j = 0; j < width; ++j) yk[j] *= factor[j];
    } else {
      for (int64_t j = 0; j < width; ++j) yk[j] = (xk[j] - max[j]) - factor[j];
    }
  }
}

template <typename T>
void softmax_backward_columns(Kind kind, const T* dy, const T* y, T* dx, int64_t size, int64_t stride, int64_t width) {
  double sum[kColumnTile] = {};  // sum(dy * y) for softmax, sum(dy) for log_softmax
  for (int64_t k = 0; k < size; ++k) {
    const T* dyk = dy + k * stride;
    const T* yk = y + k * stride;
    for (int64_t j = 0; j < width; ++j) sum[j] += kind == Kind::Softmax ? double(dyk[j]) * yk[j] : double(dyk[j]);
  }
  T s[kColumnTile];
  for (int64_t j = 0; j < width; ++j) s[j] = static_cast<T>(sum[j]);
  for (int64_t k = 0; k < size; ++k) {
    const T* dyk = dy + k * stride;
    const T* yk = y + k * stride;
    T* dxk = dx + k * stride;
    if (kind == Kind::Softmax) {
      for (int64_t j = 0; j < width; ++j) dxk[j] = yk[j] * (dyk[j] - s[j]);
    } else {
      for (int64_t j = 0; j < width; ++j) dxk[j] = dyk[j] - fast_exp(yk[j]) * s[j];
    }
  }
}

// Runs row(offset, n) on contiguous rows when `dim` is the last one, else
// columns(offset, size, stride, width) on tiles of columns, vectorized for the
// CPU. The offsets hold for every operand: all share the same shape and are
// contiguous.
template <typename Row, typename Columns>
void along_dim(const KernelContext& context, const Tensor& t, int64_t dim, Row&& row, Columns&& columns) {
  const DimLayout layout = layout_around(t.shape(), wrap_dim(dim, t.dim(), "dim"));
  if (layout.inner == 1) {
    parallel_rows(context, layout.outer, layout.size, [&](int64_t begin, int64_t end) {
      dispatch_cpu([&] {
        for (int64_t r = begin; r < end; ++r) row(r * layout.size, layout.size);
      });
    });
  } else {
    parallel_column_tiles(context, layout, [&](int64_t o, int64_t first, int64_t width) {
      dispatch_cpu([&] { columns(o * layout.size * layout.inner + first, layout.size, layout.inner, width); });
    });
  }
}

template <Kind kind>
void softmax_cpu(const KernelContext& context, const Tensor& self, int64_t dim, const Tensor& out) {
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    along_dim(
        context, self, dim, [&](int64_t at, int64_t n) { softmax_row(kind, x + at, y + at, n); },
        [&](int64_t at, int64_t size, int64_t stride, int64_t width) {
          softmax_columns(kind, x + at, y + at, size, stride, width);
        });
  });
}

template <Kind kind>
void softmax_backward_cpu(const KernelContext& context, const Tensor& grad_output, const Tensor& output, int64_t dim,
                          DType, const Tensor& grad_input) {
  dispatch_floating(output.dtype(), "output", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = grad_output.data_ptr<const T>();
    const T* y = output.data_ptr<const T>();
    T* dx = grad_input.data_ptr<T>();
    along_dim(
        context, output, dim, [&](int64_t at, int64_t n) { softmax_backward_row(kind, dy + at, y + at, dx + at, n); },
        [&](int64_t at, int64_t size, int64_t stride, int64_t width) {
          softmax_backward_columns(kind, dy + at, y + at, dx + at, size, stride, width);
        });
  });
}

// ---- Reference implementations --------------------------------------------

// Element k of row (o, i) along the dim, in double.
struct StridedRow {
  DimLayout layout;
  int64_t o, i;
  int64_t at(int64_t k) const { return (o * layout.size + k) * layout.inner + i; }
};

template <typename Body>
void for_each_strided_row(const Tensor& t, int64_t dim, Body&& body) {
  const DimLayout layout = layout_around(t.shape(), wrap_dim(dim, t.dim(), "dim"));
  for (int64_t o = 0; o < layout.outer; ++o) {
    for (int64_t i = 0; i < layout.inner; ++i) body(StridedRow{layout, o, i});
  }
}

template <Kind kind>
void softmax_reference(const KernelContext&, const Tensor& self, int64_t dim, const Tensor& out) {
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<const T>();
    T* y = out.data_ptr<T>();
    for_each_strided_row(self, dim, [&](const StridedRow& row) {
      double max = -INFINITY;
      for (int64_t k = 0; k < row.layout.size; ++k) max = std::max(max, double(x[row.at(k)]));
      double sum = 0;
      for (int64_t k = 0; k < row.layout.size; ++k) sum += std::exp(x[row.at(k)] - max);
      for (int64_t k = 0; k < row.layout.size; ++k) {
        const double shifted = x[row.at(k)] - max;
        y[row.at(k)] = T(kind == Kind::Softmax ? std::exp(shifted) / sum : shifted - std::log(sum));
      }
    });
  });
}

template <Kind kind>
void softmax_backward_reference(const KernelContext&, const Tensor& grad_output, const Tensor& output, int64_t dim,
                                DType, const Tensor& grad_input) {
  dispatch_floating(output.dtype(), "output", [&](auto zero) {
    using T = decltype(zero);
    const T* dy = grad_output.data_ptr<const T>();
    const T* y = output.data_ptr<const T>();
    T* dx = grad_input.data_ptr<T>();
    for_each_strided_row(output, dim, [&](const StridedRow& row) {
      double sum = 0;  // sum(dy * y) for softmax, sum(dy) for log_softmax
      for (int64_t k = 0; k < row.layout.size; ++k) {
        sum += kind == Kind::Softmax ? double(dy[row.at(k)]) * y[row.at(k)] : double(dy[row.at(k)]);
      }
      for (int64_t k = 0; k < row.layout.size; ++k) {
        const double g = dy[row.at(k)], out = y[row.at(k)];
        dx[row.at(k)] = T(kind == Kind::Softmax ? out * (g - sum) : g - std::exp(out) * sum);
      }
    });
  });
}

// _softmax and softmax.int (and their log forms) differ in their last
// argument only, which the kernels do not read: the shape functions check it.
template <Kind kind>
void softmax_ignoring(const KernelContext& context, const Tensor& self, int64_t dim, auto, const Tensor& out) {
  softmax_cpu<kind>(context, self, dim, out);
}

template <Kind kind>
void softmax_reference_ignoring(const KernelContext& context, const Tensor& self, int64_t dim, auto,
                                const Tensor& out) {
  softmax_reference<kind>(context, self, dim, out);
}

template <Kind kind>
void define_softmax(BuiltinOps& builtins) {
  constexpr bool log = kind == Kind::LogSoftmax;
  define(builtins, {.schema = log ? "aten::_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
                                    "ScalarType input_dtype) -> Tensor"
                                  : "aten::_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
                                    "ScalarType input_dtype) -> Tensor",
                    .shape = softmax_backward_shape,
                    .cpu = softmax_backward_cpu<kind>,
                    .reference = softmax_backward_reference<kind>});
  define(builtins, {.schema = log ? "aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor"
                                  : "aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
                    .shape = underscore_softmax_shape,
                    .cpu = softmax_ignoring<kind, bool>,
                    .reference = softmax_reference_ignoring<kind, bool>,
                    .backward = log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data"});
  define(builtins, {.schema = log ? "aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor"
                                  : "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
                    .shape = softmax_int_shape,
                    .cpu = softmax_ignoring<kind, std::optional<DType>>,
                    .reference = softmax_reference_ignoring<kind, std::optional<DType>>});
}

}  // namespace

void register_softmax_ops(BuiltinOps& builtins) {
  define_softmax<Kind::Softmax>(builtins);
  define_softmax<Kind::LogSoftmax>(builtins);
}

}  // namespace opgraph::kernels
