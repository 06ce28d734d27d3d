// Pairwise distances and sliding blocks: _cdist_forward and cdist (every row
// of x1 against every row of x2, batched with broadcasting), _pdist_forward
// and pdist (every pair of rows of one matrix), im2col (each sliding block of
// an image as a column) and col2im (sums each column back into the image).
//
// The distances are p-norms of row differences: p = 0 counts the differing
// elements, p = inf takes the largest difference. Each distance is one
// lane-wise reduction over contiguous rows; the reference walks the elements
// in double. Unlike ATen, cdist never takes the p = 2 shortcut through a
// matrix product (compute_mode), which loses precision to cancellation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/util/broadcast.h"
#include "kernels/cpu/util/cpu_dispatch.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/cpu/util/shape_checks.h"
#include "kernels/define.h"
#include "kernels/shape/checked.h"

namespace opgraph::kernels {
namespace {

enum class Norm { Zero, One, Two, Inf, General };

Norm norm_of(double p) {
  OPGRAPH_CHECK(p >= 0, "p: expected a non-negative value, got ", p);
  if (p == 0) return Norm::Zero;
  if (p == 1) return Norm::One;
  if (p == 2) return Norm::Two;
  if (std::isinf(p)) return Norm::Inf;
  return Norm::General;
}

// The p-norm of a - b over m contiguous elements.
template <Norm N, typename T>
T distance(const T* a, const T* b, int64_t m, T p) {
  auto term = [&](int64_t k) {
    const T d = std::fabs(a[k] - b[k]);
    if constexpr (N == Norm::Zero) return d != T(0) ? T(1) : T(0);
    if constexpr (N == Norm::One || N == Norm::Inf) return d;
    if constexpr (N == Norm::Two) return d * d;
    if constexpr (N == Norm::General) return std::pow(d, p);
  };
  if constexpr (N == Norm::Inf) {
    return reduce_lanes(m, T(0), term, [](T x, T y) { return y > x || y != y ? y : x; });
  } else {
    const T sum = reduce_lanes(m, T(0), term, [](T x, T y) { return x + y; });
    if constexpr (N == Norm::Two) return std::sqrt(sum);
    if constexpr (N == Norm::General) return std::pow(sum, T(1) / p);
    return sum;
  }
}

// The same in plain double arithmetic.
template <typename T>
T distance_reference(const T* a, const T* b, int64_t m, double p) {
  double acc = 0;
  for (int64_t k = 0; k < m; ++k) {
    const double d = std::fabs(double(a[k]) - double(b[k]));
    if (p == 0) {
      acc += d != 0;
    } else if (std::isinf(p)) {
      acc = std::isnan(d) || std::isnan(acc) ? std::numeric_limits<double>::quiet_NaN() : std::max(acc, d);
    } else {
      acc += std::pow(d, p);
    }
  }
  return static_cast<T>(p == 0 || std::isinf(p) ? acc : std::pow(acc, 1 / p));
}

// Calls fn(distance<N, T>) for the norm p selects.
template <typename T, typename Fn>
void dispatch_norm(double p, Fn&& fn) {
  switch (norm_of(p)) {
    case Norm::Zero: return fn(distance<Norm::Zero, T>);
    case Norm::One: return fn(distance<Norm::One, T>);
    case Norm::Two: return fn(distance<Norm::Two, T>);
    case Norm::Inf: return fn(distance<Norm::Inf, T>);
    case Norm::General: return fn(distance<Norm::General, T>);
  }
}

// --- _cdist_forward

// x1 (B..., P, M) against x2 (B'..., R, M): the batch dims broadcast.
struct Cdist {
  Shape batch;
  Strides x1_batch, x2_batch;  // in units of one batch item
  int64_t p_rows, r_rows, m;
  double p;
};

Cdist cdist_of(const TensorMeta& x1, const TensorMeta& x2, double p, std::optional<int64_t> mode) {
  check_floating(x1, "x1");
  OPGRAPH_CHECK(x2.dtype == x1.dtype, "x2: expected x1's dtype ", dtype_name(x1.dtype), ", got ", x2.str());
  OPGRAPH_CHECK(x1.dim() >= 2 && x2.dim() >= 2, "x1 and x2: expected rank 2 or more, got ", x1.str(), " and ",
                x2.str());
  OPGRAPH_CHECK(x1.shape.back() == x2.shape.back(), "x1 and x2: expected rows of the same size, got ", x1.str(),
                " and ", x2.str());
  if (mode) OPGRAPH_CHECK(*mode >= 0 && *mode <= 2, "compute_mode: expected None, 0, 1 or 2, got ", *mode);
  Cdist c;
  const std::span<const int64_t> b1(x1.shape.data(), x1.dim() - 2), b2(x2.shape.data(), x2.dim() - 2);
  c.batch = broadcast_shapes(b1, b2);
  c.x1_batch = broadcast_strides(b1, c.batch);
  c.x2_batch = broadcast_strides(b2, c.batch);
  c.p_rows = x1.shape[x1.dim() - 2];
  c.r_rows = x2.shape[x2.dim() - 2];
  c.m = x1.shape.back();
  c.p = p;
  norm_of(c.p);
  return c;
}

TensorMeta cdist_shape(const TensorMeta& x1, const TensorMeta& x2, double p, std::optional<int64_t> compute_mode) {
  const Cdist c = cdist_of(x1, x2, p, compute_mode);
  Shape shape = c.batch;
  shape.push_back(c.p_rows);
  shape.push_back(c.r_rows);
  return {x1.dtype, shape};
}

// Calls row(x1_row, x2_rows, out_row) for output rows [first, last): x1_row
// is one row of x1, x2_rows the r_rows rows of x2 it is measured against.
template <typename T, typename Row>
void cdist_rows(const Tensor& x1, const Tensor& x2, const Tensor& out, const Cdist& c, int64_t first, int64_t last,
                Row&& row) {
  for (int64_t i = first; i < last; ++i) {
    const int64_t b = i / c.p_rows, r = i % c.p_rows;
    const T* a = x1.data_ptr<T>() + (strided_offset(b, c.batch, c.x1_batch) * c.p_rows + r) * c.m;
    const T* others = x2.data_ptr<T>() + strided_offset(b, c.batch, c.x2_batch) * c.r_rows * c.m;
    row(a, others, out.data_ptr<T>() + i * c.r_rows);
  }
}

void cdist_cpu(const KernelContext& context, const Tensor& x1, const Tensor& x2, double p,
               std::optional<int64_t> compute_mode, const Tensor& out) {
  const Cdist c = cdist_of(x1.meta(), x2.meta(), p, compute_mode);
  if (out.numel() == 0) return;
  dispatch_floating(x1.dtype(), "x1", [&](auto zero) {
    using T = decltype(zero);
    dispatch_norm<T>(c.p, [&](auto measure) {
      parallel_rows(context, out.numel() / c.r_rows, c.r_rows * std::max<int64_t>(c.m, 1), [&](int64_t f, int64_t l) {
        dispatch_cpu([&] {
          cdist_rows<T>(x1, x2, out, c, f, l, [&](const T* a, const T* others, T* dst) {
            for (int64_t j = 0; j < c.r_rows; ++j) dst[j] = measure(a, others + j * c.m, c.m, T(c.p));
          });
        });
      });
    });
  });
}

void cdist_reference(const KernelContext&, const Tensor& x1, const Tensor& x2, double p,
                     std::optional<int64_t> compute_mode, const Tensor& out) {
  const Cdist c = cdist_of(x1.meta(), x2.meta(), p, compute_mode);
  if (out.numel() == 0) return;
  dispatch_floating(x1.dtype(), "x1", [&](auto zero) {
    using T = decltype(zero);
    cdist_rows<T>(x1, x2, out, c, 0, out.numel() / c.r_rows, [&](const T* a, const T* others, T* dst) {
      for (int64_t j = 0; j < c.r_rows; ++j) dst[j] = distance_reference(a, others + j * c.m, c.m, c.p);
    });
  });
}

// --- _pdist_forward: pairs (i, j), i < j, in row-major order.

TensorMeta pdist_shape(const TensorMeta& self, double p) {
  check_floating(self, "self");
  OPGRAPH_CHECK(self.dim() == 2, "self: expected a matrix (rows, features), got ", self.str());
  norm_of(p);
  const int64_t n = self.shape[0];
  return {self.dtype, {n * (n - 1) / 2 < 0 ? 0 : n * (n - 1) / 2}};
}

// Where row i's pairs (i, i + 1) ... (i, n - 1) start in the output.
int64_t first_pair(int64_t i, int64_t n) { return i * (2 * n - i - 1) / 2; }

void pdist_cpu(const KernelContext& context, const Tensor& self, double p, const Tensor& out) {
  const int64_t n = self.shape()[0], m = self.shape()[1];
  if (out.numel() == 0) return;
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    dispatch_norm<T>(p, [&](auto measure) {
      // Rows hold n - 1 - i pairs: a grain from the average keeps chunks even enough.
      parallel_rows(context, n, (n / 2 + 1) * std::max<int64_t>(m, 1), [&](int64_t first, int64_t last) {
        dispatch_cpu([&] {
          for (int64_t i = first; i < last; ++i) {
            T* row = dst + first_pair(i, n);
            for (int64_t j = i + 1; j < n; ++j) row[j - i - 1] = measure(x + i * m, x + j * m, m, T(p));
          }
        });
      });
    });
  });
}

void pdist_reference(const KernelContext&, const Tensor& self, double p, const Tensor& out) {
  const int64_t n = self.shape()[0], m = self.shape()[1];
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* x = self.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = i + 1; j < n; ++j) dst[k++] = distance_reference(x + i * m, x + j * m, m, p);
    }
  });
}

// --- col2im: (N, C * kh * kw, L) or (C * kh * kw, L) -> (N, C, H, W) or (C, H, W).

struct Fold {
  int64_t planes, kh, kw, h, w, blocks_h, blocks_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

using Ints = std::span<const int64_t>;

// The window arguments of im2col and col2im, in their schemas' order.
struct Window {
  Ints kernel_size, dilation, padding, stride;
};

Ints two(Ints values, const char* name) {
  OPGRAPH_CHECK(values.size() == 2, name, ": expected 2 values, got ", shape_str(values));
  return values;
}

// Image planes of h x w: the kernel taps and the sliding blocks that fit.
Fold sliding_blocks(const Window& window, int64_t h, int64_t w) {
  const Ints kernel = two(window.kernel_size, "kernel_size"), dilation = two(window.dilation, "dilation"),
             padding = two(window.padding, "padding"), stride = two(window.stride, "stride");
  Fold f{0, kernel[0], kernel[1], h, w, 0, 0, stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1]};
  OPGRAPH_CHECK(f.kh > 0 && f.kw > 0 && f.dil_h > 0 && f.dil_w > 0 && f.stride_h > 0 && f.stride_w > 0 &&
                    f.pad_h >= 0 && f.pad_w >= 0,
                "expected positive kernel_size, dilation and stride and non-negative padding, got kernel_size ",
                shape_str(kernel), ", dilation ", shape_str(dilation), ", padding ", shape_str(padding), ", stride ",
                shape_str(stride));
  auto blocks = [](int64_t size, int64_t kernel, int64_t pad, int64_t dil, int64_t stride) {
    const int64_t span = checked_add(checked_mul(dil, kernel - 1, "dilation"), 1, "dilation");
    const int64_t room = checked_add(size, checked_mul(2, pad, "padding"), "padding") - span;
    return room < 0 ? int64_t{0} : room / stride + 1;
  };
  f.blocks_h = blocks(f.h, f.kh, f.pad_h, f.dil_h, f.stride_h);
  f.blocks_w = blocks(f.w, f.kw, f.pad_w, f.dil_w, f.stride_w);
  return f;
}

// col2im's input: (N, C * kh * kw, blocks) or unbatched.
Fold fold_of(const TensorMeta& self, Ints output_size, const Window& window) {
  check_floating(self, "self");
  OPGRAPH_CHECK(self.dim() == 2 || self.dim() == 3, "self: expected rank 2 or 3 ((batch,) C * kernel, blocks), got ",
                self.str());
  const Ints size = two(output_size, "output_size");
  OPGRAPH_CHECK(size[0] > 0 && size[1] > 0, "output_size: expected positive sizes, got ", shape_str(size));
  Fold f = sliding_blocks(window, size[0], size[1]);
  const int64_t rows = self.shape[self.dim() - 2], kernel_size = checked_mul(f.kh, f.kw, "kernel_size");
  OPGRAPH_CHECK(rows % kernel_size == 0, "self: expected dim ", self.dim() - 2,
                " to be divisible by the kernel's size ", kernel_size, ", got ", self.str());
  OPGRAPH_CHECK(f.blocks_h > 0 && f.blocks_w > 0 && self.shape.back() == f.blocks_h * f.blocks_w, "self: expected ",
                f.blocks_h, " x ", f.blocks_w, " sliding blocks in its last dim for output_size ", shape_str(size),
                ", got ", self.str());
  f.planes = (self.dim() == 3 ? self.shape[0] : 1) * (rows / kernel_size);
  return f;
}

// im2col's input: (N, C, H, W) or unbatched.
Fold unfold_of(const TensorMeta& self, const Window& window) {
  check_floating(self, "self");
  OPGRAPH_CHECK((self.dim() == 3 || self.dim() == 4) && self.shape[self.dim() - 3] > 0 &&
                    self.shape[self.dim() - 2] > 0 && self.shape[self.dim() - 1] > 0,
                "self: expected rank 3 or 4 ((batch,) channels, height, width) with non-empty planes, got ",
                self.str());
  Fold f = sliding_blocks(window, self.shape[self.dim() - 2], self.shape[self.dim() - 1]);
  OPGRAPH_CHECK(f.blocks_h > 0 && f.blocks_w > 0, "self: no sliding block fits in ", self.str(), " for kernel_size ",
                shape_str(window.kernel_size));
  f.planes = self.numel() / (f.h * f.w);
  return f;
}

// The block columns [begin, end) at which kernel column kx lands inside the
// plane, and x0: block column bx lands on x0 + bx * stride_w.
struct Columns {
  int64_t x0, begin, end;
};

Columns columns(const Fold& f, int64_t kx) {
  const int64_t x0 = kx * f.dil_w - f.pad_w;
  const int64_t begin = x0 < 0 ? std::min(f.blocks_w, (-x0 + f.stride_w - 1) / f.stride_w) : 0;
  const int64_t end = x0 > f.w - 1 ? 0 : std::min(f.blocks_w, (f.w - 1 - x0) / f.stride_w + 1);
  return {x0, begin, std::max(begin, end)};
}

std::vector<TensorMeta> col2im_shape(const TensorMeta& self, Ints output_size, Ints kernel_size, Ints dilation,
                                     Ints padding, Ints stride) {
  const Fold f = fold_of(self, output_size, {kernel_size, dilation, padding, stride});
  const int64_t channels = self.shape[self.dim() - 2] / (f.kh * f.kw);
  Shape shape{channels, f.h, f.w};
  if (self.dim() == 3) shape.insert(shape.begin(), self.shape[0]);
  return {{self.dtype, shape}};
}

// Output planes [first, last): each kernel tap's row of blocks adds into the
// plane along the block columns that land inside it, found up front so that
// the innermost loop has no bounds checks.
template <typename T>
void fold_planes(const T* in, T* out, const Fold& f, int64_t first, int64_t last) {
  const int64_t blocks = f.blocks_h * f.blocks_w;
  for (int64_t plane = first; plane < last; ++plane) {
    T* dst = out + plane * f.h * f.w;
    std::fill(dst, dst + f.h * f.w, T(0));
    for (int64_t ky = 0; ky < f.kh; ++ky) {
      for (int64_t kx = 0; kx < f.kw; ++kx) {
        const T* src = in + ((plane * f.kh + ky) * f.kw + kx) * blocks;
        const Columns c = columns(f, kx);
        for (int64_t by = 0; by < f.blocks_h; ++by) {
          const int64_t y = by * f.stride_h - f.pad_h + ky * f.dil_h;
          if (y < 0 || y >= f.h) continue;
          const T* block_row = src + by * f.blocks_w;
          T* line = dst + y * f.w;
          for (int64_t bx = c.begin; bx < c.end; ++bx) line[c.x0 + bx * f.stride_w] += block_row[bx];
        }
      }
    }
  }
}

void col2im_cpu(const KernelContext& context, const Tensor& self, Ints output_size, Ints kernel_size, Ints dilation,
                Ints padding, Ints stride, const Tensor& out) {
  const Fold f = fold_of(self.meta(), output_size, {kernel_size, dilation, padding, stride});
  if (out.numel() == 0) return;
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    parallel_rows(context, f.planes, f.kh * f.kw * f.blocks_h * f.blocks_w, [&](int64_t first, int64_t last) {
      dispatch_cpu([&] { fold_planes<T>(self.data_ptr<T>(), out.data_ptr<T>(), f, first, last); });
    });
  });
}

// Calls fn(column, pixel) for the elements of the patch matrix in order:
// `pixel` is where the element's block and tap put it in the images, or -1 in
// the padding.
template <typename Fn>
void for_patch_elements(const Fold& f, Fn&& fn) {
  int64_t column = 0;
  for (int64_t plane = 0; plane < f.planes; ++plane) {
    for (int64_t ky = 0; ky < f.kh; ++ky) {
      for (int64_t kx = 0; kx < f.kw; ++kx) {
        for (int64_t by = 0; by < f.blocks_h; ++by) {
          for (int64_t bx = 0; bx < f.blocks_w; ++bx) {
            const int64_t y = by * f.stride_h - f.pad_h + ky * f.dil_h, x = bx * f.stride_w - f.pad_w + kx * f.dil_w;
            fn(column++, y >= 0 && y < f.h && x >= 0 && x < f.w ? (plane * f.h + y) * f.w + x : int64_t{-1});
          }
        }
      }
    }
  }
}

// Every patch element added to its pixel.
void col2im_reference(const KernelContext&, const Tensor& self, Ints output_size, Ints kernel_size, Ints dilation,
                      Ints padding, Ints stride, const Tensor& out) {
  const Fold f = fold_of(self.meta(), output_size, {kernel_size, dilation, padding, stride});
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* src = self.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    std::fill(dst, dst + out.numel(), T(0));
    for_patch_elements(f, [&](int64_t column, int64_t pixel) {
      if (pixel >= 0) dst[pixel] += src[column];
    });
  });
}

// --- im2col: (N, C, H, W) or (C, H, W) -> (N, C * kh * kw, L) or (C * kh * kw, L).

std::vector<TensorMeta> im2col_shape(const TensorMeta& self, Ints kernel_size, Ints dilation, Ints padding,
                                     Ints stride) {
  const Fold f = unfold_of(self, {kernel_size, dilation, padding, stride});
  Shape shape(self.shape.begin(), self.shape.end() - 2);
  shape.back() *= f.kh * f.kw;
  shape.push_back(f.blocks_h * f.blocks_w);
  return {{self.dtype, shape}};
}

// Input planes [first, last): each kernel tap's row of blocks copies the
// plane's elements along the block columns inside it and zeros the rest.
template <typename T>
void unfold_planes(const T* in, T* out, const Fold& f, int64_t first, int64_t last) {
  const int64_t blocks = f.blocks_h * f.blocks_w;
  for (int64_t plane = first; plane < last; ++plane) {
    const T* src = in + plane * f.h * f.w;
    for (int64_t ky = 0; ky < f.kh; ++ky) {
      for (int64_t kx = 0; kx < f.kw; ++kx) {
        T* dst = out + ((plane * f.kh + ky) * f.kw + kx) * blocks;
        const Columns c = columns(f, kx);
        for (int64_t by = 0; by < f.blocks_h; ++by) {
          const int64_t y = by * f.stride_h - f.pad_h + ky * f.dil_h;
          T* block_row = dst + by * f.blocks_w;
          if (y < 0 || y >= f.h) {
            std::fill(block_row, block_row + f.blocks_w, T(0));
            continue;
          }
          std::fill(block_row, block_row + c.begin, T(0));
          const T* line = src + y * f.w;
          for (int64_t bx = c.begin; bx < c.end; ++bx) block_row[bx] = line[c.x0 + bx * f.stride_w];
          std::fill(block_row + c.end, block_row + f.blocks_w, T(0));
        }
      }
    }
  }
}

void im2col_cpu(const KernelContext& context, const Tensor& self, Ints kernel_size, Ints dilation, Ints padding,
                Ints stride, const Tensor& out) {
  const Fold f = unfold_of(self.meta(), {kernel_size, dilation, padding, stride});
  if (out.numel() == 0) return;
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    parallel_rows(context, f.planes, f.kh * f.kw * f.blocks_h * f.blocks_w, [&](int64_t first, int64_t last) {
      dispatch_cpu([&] { unfold_planes<T>(self.data_ptr<T>(), out.data_ptr<T>(), f, first, last); });
    });
  });
}

// Every patch element read from its pixel, 0 in the padding.
void im2col_reference(const KernelContext&, const Tensor& self, Ints kernel_size, Ints dilation, Ints padding,
                      Ints stride, const Tensor& out) {
  const Fold f = unfold_of(self.meta(), {kernel_size, dilation, padding, stride});
  dispatch_floating(self.dtype(), "self", [&](auto zero) {
    using T = decltype(zero);
    const T* src = self.data_ptr<T>();
    T* dst = out.data_ptr<T>();
    for_patch_elements(f, [&](int64_t column, int64_t pixel) { dst[column] = pixel >= 0 ? src[pixel] : T(0); });
  });
}

}  // namespace

void register_distance_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor",
                    .shape = cdist_shape,
                    .cpu = cdist_cpu,
                    .reference = cdist_reference});
  define(builtins, {.schema = "aten::cdist(Tensor x1, Tensor x2, float p=2.0, int? compute_mode=None) -> Tensor",
                    .shape = cdist_shape,
                    .cpu = cdist_cpu,
                    .reference = cdist_reference});
  define(builtins, {.schema = "aten::_pdist_forward(Tensor self, float p=2.0) -> Tensor",
                    .shape = pdist_shape,
                    .cpu = pdist_cpu,
                    .reference = pdist_reference});
  define(builtins, {.schema = "aten::pdist(Tensor self, float p=2.0) -> Tensor",
                    .shape = pdist_shape,
                    .cpu = pdist_cpu,
                    .reference = pdist_reference});
  define(builtins,
         {.schema = "aten::im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) "
                    "-> Tensor",
          .shape = im2col_shape,
          .cpu = im2col_cpu,
          .reference = im2col_reference});
  define(builtins, {.schema = "aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, "
                              "int[2] padding, int[2] stride) -> Tensor",
                    .shape = col2im_shape,
                    .cpu = col2im_cpu,
                    .reference = col2im_reference});
}

}  // namespace opgraph::kernels
