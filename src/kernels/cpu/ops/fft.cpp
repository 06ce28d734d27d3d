// Discrete Fourier transforms: _fft_r2c, _fft_c2r and _fft_c2c (what
// torch.fft's functions and torch.stft export to), over any list of dims and
// any sizes; and view_as_real and view_as_complex, which see a complex tensor
// as pairs of reals and back.
//
// A transform over several dims is a 1-D transform along each dim in turn.
// Every 1-D transform runs in complex<double>, whatever the tensor's type, so
// a float32 result carries little more than its final rounding: an iterative
// radix-2 FFT when the length is a power of two, else Bluestein's algorithm,
// which turns a DFT of length n into a circular convolution of a power-of-two
// length m >= 2n - 1, done with radix-2 FFTs. The reference sums the DFT's n^2
// terms in double.
//
// r2c transforms the real input as complex and keeps the first n/2 + 1 points
// of the last dim when onesided. c2r transforms back along every dim but the
// last; along the last it rebuilds the full spectrum of length last_dim_size
// from its first half by Hermitian symmetry, X[n - k] = conj(X[k]), and keeps
// the real part of the inverse transform, as pocketfft does.
//
// normalization is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n,
// n the number of points of the transform (the product over its dims).
#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <vector>

#include "kernels/cpu/util/dims.h"
#include "kernels/cpu/util/parallel.h"
#include "kernels/cpu/util/rows.h"
#include "kernels/define.h"

namespace opgraph::kernels {
namespace {

using Complex = std::complex<double>;

// a * b without std::complex's NaN recovery, which keeps the loops from
// vectorizing; an FFT's twiddle factors are finite.
Complex times(Complex a, Complex b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// e^(-i pi numerator / denominator), with the numerator reduced modulo
// 2 * denominator first so that the angle stays exact for large indices.
Complex unit_root(int64_t numerator, int64_t denominator) {
  const int64_t reduced = numerator % (2 * denominator);
  return std::polar(1.0, -std::numbers::pi * static_cast<double>(reduced) / static_cast<double>(denominator));
}

// The forward DFT, X[k] = sum_j x[j] e^(-2 pi i jk/n), of a power-of-two length.
class Radix2 {
 public:
  explicit Radix2(int64_t n) : n_(n), twiddles_(static_cast<size_t>(n / 2)) {
    for (int64_t k = 0; k < n / 2; ++k) twiddles_[k] = unit_root(2 * k, n);
  }

  void forward(Complex* x) const {
    for (int64_t i = 1, j = 0; i < n_; ++i) {  // bit-reversal permutation
      int64_t bit = n_ >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    for (int64_t length = 2; length <= n_; length <<= 1) {
      const int64_t half = length / 2, step = n_ / length;
      for (int64_t start = 0; start < n_; start += length) {
        Complex* even = x + start;
        Complex* odd = even + half;
        for (int64_t k = 0; k < half; ++k) {
          const Complex t = times(twiddles_[k * step], odd[k]);
          odd[k] = even[k] - t;
          even[k] += t;
        }
      }
    }
  }

 private:
  int64_t n_;
  std::vector<Complex> twiddles_;
};

// The DFT of any length n: radix-2 for powers of two, else Bluestein's
// algorithm. jk = (j^2 + k^2 - (k - j)^2) / 2 makes the DFT
// X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j]) with the chirp c[j] = e^(-i pi j^2/n),
// a circular convolution once zero-padded to length m.
class Fft {
 public:
  explicit Fft(int64_t n) : n_(n), m_(is_power_of_two(n) ? n : std::bit_ceil(uint64_t(2 * n - 1))), radix2_(m_) {
    if (m_ == n_) return;
    chirp_.resize(n_);
    kernel_.assign(m_, Complex(0));
    for (int64_t j = 0; j < n_; ++j) chirp_[j] = unit_root(j * j, n_);
    kernel_[0] = std::conj(chirp_[0]);
    for (int64_t j = 1; j < n_; ++j) kernel_[j] = kernel_[m_ - j] = std::conj(chirp_[j]);
    radix2_.forward(kernel_.data());
    for (Complex& value : kernel_) value /= static_cast<double>(m_);  // the inverse transform's 1/m
  }

  // Points of scratch that transform needs.
  int64_t scratch_size() const { return m_ == n_ ? 0 : m_; }

  // x <- its DFT, or with !forward its unnormalized inverse, which is
  // conj(DFT(conj(x))).
  void transform(Complex* x, bool forward, Complex* scratch) const {
    if (!forward) conjugate(x, n_);
    if (m_ == n_) {
      radix2_.forward(x);
    } else {
      for (int64_t j = 0; j < n_; ++j) scratch[j] = times(x[j], chirp_[j]);
      std::fill(scratch + n_, scratch + m_, Complex(0));
      radix2_.forward(scratch);
      for (int64_t k = 0; k < m_; ++k) scratch[k] = std::conj(times(scratch[k], kernel_[k]));
      radix2_.forward(scratch);  // the inverse of the product, conjugated
      for (int64_t k = 0; k < n_; ++k) x[k] = times(std::conj(scratch[k]), chirp_[k]);
    }
    if (!forward) conjugate(x, n_);
  }

 private:
  static bool is_power_of_two(int64_t n) { return (n & (n - 1)) == 0; }
  static void conjugate(Complex* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::conj(x[i]);
  }

  int64_t n_, m_;
  Radix2 radix2_;
  std::vector<Complex> chirp_, kernel_;  // Bluestein's, empty for powers of two
};

// The 1-D transform of one length: the FFT, or with kReference the DFT sum.
template <bool kReference>
class LineDft {
 public:
  explicit LineDft(int64_t n) : n_(n), fft_(kReference ? 1 : n) {
    if constexpr (kReference) {
      roots_.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) roots_[j] = unit_root(2 * j, n);
    }
  }

  // Points of buffer a line needs: the line and the transform's scratch.
  int64_t buffer_size() const { return n_ + (kReference ? n_ : fft_.scratch_size()); }

  // Transforms the line at the start of `buffer`.
  void operator()(Complex* buffer, bool forward) const {
    if constexpr (kReference) {
      sum(buffer, forward, buffer + n_);
    } else {
      fft_.transform(buffer, forward, buffer + n_);
    }
  }

 private:
  // x <- X[k] = sum_j x[j] e^(-2 pi i jk/n) (e^(+...) for the inverse), by the definition.
  void sum(Complex* x, bool forward, Complex* scratch) const {
    for (int64_t k = 0; k < n_; ++k) {
      Complex total = 0;
      for (int64_t j = 0; j < n_; ++j) {
        const Complex root = roots_[(j * k) % n_];
        total += x[j] * (forward ? root : std::conj(root));
      }
      scratch[k] = total;
    }
    std::copy(scratch, scratch + n_, x);
  }

  int64_t n_;
  Fft fft_;
  std::vector<Complex> roots_;  // e^(-2 pi i j/n), the reference's
};

// Runs body(line, buffer) for each of `lines` 1-D transforms of `dft`, in
// parallel for the fast kernel.
template <bool kReference, typename Body>
void for_each_line(const KernelContext& context, const LineDft<kReference>& dft, int64_t lines, int64_t length,
                   Body&& body) {
  const auto run = [&](int64_t begin, int64_t end) {
    std::vector<Complex> buffer(static_cast<size_t>(dft.buffer_size()));
    for (int64_t line = begin; line < end; ++line) body(line, buffer.data());
  };
  if constexpr (kReference) {
    if (lines > 0) run(0, lines);
  } else {
    // A line costs about length * log2(length) operations.
    parallel_rows(context, lines, length * std::bit_width(uint64_t(length)), run);
  }
}

// `data` (contiguous, of `shape`) transformed along `dim`.
template <bool kReference>
void transform_dim(const KernelContext& context, Complex* data, std::span<const int64_t> shape, int64_t dim,
                   bool forward) {
  const DimLayout at = layout_around(shape, dim);
  const LineDft<kReference> dft(at.size);
  for_each_line(context, dft, at.outer * at.inner, at.size, [&](int64_t line, Complex* buffer) {
    Complex* x = data + (line / at.inner) * at.size * at.inner + line % at.inner;
    for (int64_t k = 0; k < at.size; ++k) buffer[k] = x[k * at.inner];
    dft(buffer, forward);
    for (int64_t k = 0; k < at.size; ++k) x[k * at.inner] = buffer[k];
  });
}

// ---- arguments ------------------------------------------------------------------

// Calls fn(T{}) with T the type of a complex dtype's parts.
template <typename Fn>
void dispatch_complex(DType dtype, const char* argument, Fn&& fn) {
  switch (dtype) {
    case DType::Complex64: return fn(float{});
    case DType::Complex128: return fn(double{});
    default: throw Error(detail::concat(argument, ": expected complex64 or complex128, got ", dtype_name(dtype)));
  }
}

// `dim`, wrapped and checked: distinct dims of self, at least one.
std::vector<int64_t> wrapped_dims(const TensorMeta& self, std::span<const int64_t> dim) {
  std::vector<int64_t> dims(dim.begin(), dim.end());
  OPGRAPH_CHECK(self.dim() > 0, "self: expected a tensor with at least one dim to transform, got ", self.str());
  OPGRAPH_CHECK(!dims.empty(), "dim: expected at least one dim to transform, got none");
  for (size_t i = 0; i < dims.size(); ++i) {
    dims[i] = wrap_dim(dims[i], self.dim(), "dim");
    OPGRAPH_CHECK(std::find(dims.begin(), dims.begin() + i, dims[i]) == dims.begin() + i,
                  "dim: expected distinct dims, dim ", dims[i], " is given twice");
  }
  return dims;
}

// The factor normalization asks for, over `points` points.
double scale(int64_t mode, int64_t points) {
  OPGRAPH_CHECK(mode >= 0 && mode <= 2, "normalization: expected 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got ", mode);
  if (mode == 0) return 1.0;
  return mode == 1 ? 1.0 / std::sqrt(static_cast<double>(points)) : 1.0 / static_cast<double>(points);
}

// The shape functions' checks of `dim` and `normalization`: the dims as
// wrapped_dims gives them, each holding at least one point.
std::vector<int64_t> checked_dims(const TensorMeta& self, std::span<const int64_t> dim, int64_t normalization) {
  std::vector<int64_t> dims = wrapped_dims(self, dim);
  for (int64_t dim : dims) {
    OPGRAPH_CHECK(self.shape[dim] > 0, "self: expected at least one point along each transformed dim, got ", self.str(),
                  " (dim ", dim, ")");
  }
  static_cast<void>(scale(normalization, 1));
  return dims;
}

int64_t points(std::span<const int64_t> shape, std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t dim : dims) n *= shape[dim];
  return n;
}

// The input's elements, real or complex, as complex<double>.
std::vector<Complex> load(const Tensor& t) {
  std::vector<Complex> work(static_cast<size_t>(t.numel()));
  const auto copy = [&](const auto* x) {
    for (size_t i = 0; i < work.size(); ++i) work[i] = Complex(x[i]);
  };
  if (is_complex(t.dtype())) {
    dispatch_complex(t.dtype(), "self", [&](auto part) { copy(t.data_ptr<const std::complex<decltype(part)>>()); });
  } else {
    dispatch_floating(t.dtype(), "self", [&](auto part) { copy(t.data_ptr<const decltype(part)>()); });
  }
  return work;
}

// out <- scale * work, out's shape being work's or, along `dim`, its first points.
void store(const std::vector<Complex>& work, std::span<const int64_t> shape, const Tensor& out, int64_t dim,
           double scale) {
  const DimLayout from = layout_around(shape, dim), to = layout_around(out.shape(), dim);
  dispatch_complex(out.dtype(), "out", [&](auto part) {
    using T = decltype(part);
    auto* y = out.data_ptr<std::complex<T>>();
    for (int64_t o = 0; o < to.outer; ++o) {
      for (int64_t k = 0; k < to.size; ++k) {
        const Complex* x = work.data() + (o * from.size + k) * from.inner;
        for (int64_t i = 0; i < to.inner; ++i) *y++ = std::complex<T>(x[i] * scale);
      }
    }
  });
}

// ---- the ops ----------------------------------------------------------------------

TensorMeta r2c_shape(const TensorMeta& self, std::span<const int64_t> dim, int64_t normalization, bool onesided) {
  const std::optional<DType> dtype = complex_dtype_of(self.dtype);
  OPGRAPH_CHECK(dtype.has_value(), "self: expected float32 or float64, got ", self.str());
  const std::vector<int64_t> dims = checked_dims(self, dim, normalization);
  Shape shape = self.shape;
  if (onesided) shape[dims.back()] = shape[dims.back()] / 2 + 1;
  return {*dtype, shape};
}

TensorMeta c2c_shape(const TensorMeta& self, std::span<const int64_t> dim, int64_t normalization, bool) {
  dispatch_complex(self.dtype, "self", [](auto) {});
  static_cast<void>(checked_dims(self, dim, normalization));
  return self;
}

// A transform along each dim, the result kept whole or, along the last dim,
// its first points (onesided r2c, which the output's shape says).
template <bool kReference>
void spectrum(const KernelContext& context, const Tensor& self, std::span<const int64_t> dim, int64_t normalization,
              bool forward, const Tensor& out) {
  const std::vector<int64_t> dims = wrapped_dims(self.meta(), dim);
  std::vector<Complex> work = load(self);
  for (int64_t d : dims) transform_dim<kReference>(context, work.data(), self.shape(), d, forward);
  store(work, self.shape(), out, dims.back(), scale(normalization, points(self.shape(), dims)));
}

// r2c: forward, from a real tensor.
template <bool kReference>
void r2c_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> dim, int64_t normalization,
                bool, const Tensor& out) {
  spectrum<kReference>(context, self, dim, normalization, true, out);
}

template <bool kReference>
void c2c_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> dim, int64_t normalization,
                bool forward, const Tensor& out) {
  spectrum<kReference>(context, self, dim, normalization, forward, out);
}

// c2r's input holds, along the last transformed dim, at least the first
// last_dim_size / 2 + 1 points of the spectrum (torch.fft.irfft trims it to
// exactly that many; the rest is ignored).
TensorMeta c2r_shape(const TensorMeta& self, std::span<const int64_t> dim, int64_t normalization, int64_t length) {
  dispatch_complex(self.dtype, "self", [](auto) {});
  const std::vector<int64_t> dims = checked_dims(self, dim, normalization);
  OPGRAPH_CHECK(length >= 1, "last_dim_size: expected at least 1, got ", length);
  OPGRAPH_CHECK(self.shape[dims.back()] >= length / 2 + 1,
                "self: expected at least last_dim_size / 2 + 1 = ", length / 2 + 1, " points along dim ", dims.back(),
                " for last_dim_size ", length, ", got ", self.str());
  Shape shape = self.shape;
  shape[dims.back()] = length;
  return {real_part_dtype(self.dtype), shape};
}

// The output's shape holds last_dim_size.
template <bool kReference>
void c2r_kernel(const KernelContext& context, const Tensor& self, std::span<const int64_t> dim, int64_t normalization,
                int64_t, const Tensor& out) {
  const std::vector<int64_t> dims = wrapped_dims(self.meta(), dim);
  const int64_t last = dims.back();
  std::vector<Complex> work = load(self);
  for (size_t i = 0; i + 1 < dims.size(); ++i) {
    transform_dim<kReference>(context, work.data(), self.shape(), dims[i], false);
  }
  const double factor = scale(normalization, points(out.shape(), dims));
  const DimLayout in = layout_around(self.shape(), last);
  const int64_t length = out.size(last);
  const LineDft<kReference> dft(length);
  dispatch_floating(out.dtype(), "out", [&](auto part) {
    using T = decltype(part);
    T* y = out.data_ptr<T>();
    for_each_line(context, dft, in.outer * in.inner, length, [&](int64_t line, Complex* buffer) {
      const int64_t outer = line / in.inner, inner = line % in.inner;
      const Complex* x = work.data() + outer * in.size * in.inner + inner;
      for (int64_t k = 0; k < length; ++k) {
        buffer[k] = k <= length / 2 ? x[k * in.inner] : std::conj(x[(length - k) * in.inner]);
      }
      dft(buffer, false);
      T* row = y + outer * length * in.inner + inner;
      for (int64_t k = 0; k < length; ++k) row[k * in.inner] = static_cast<T>(buffer[k].real() * factor);
    });
  });
}

// ---- view_as_real, view_as_complex ------------------------------------------------

TensorMeta view_as_real_shape(const TensorMeta& self) {
  dispatch_complex(self.dtype, "self", [](auto) {});
  Shape shape = self.shape;
  shape.push_back(2);
  return {real_part_dtype(self.dtype), shape};
}

TensorMeta view_as_complex_shape(const TensorMeta& self) {
  const std::optional<DType> dtype = complex_dtype_of(self.dtype);
  OPGRAPH_CHECK(dtype.has_value(), "self: expected float32 or float64, got ", self.str());
  OPGRAPH_CHECK(self.dim() > 0 && self.shape.back() == 2, "self: expected a last dim of size 2 (real, imaginary), got ",
                self.str());
  return {*dtype, Shape(self.shape.begin(), self.shape.end() - 1)};
}

// Both views lay out the same bytes: complex numbers are (real, imaginary)
// pairs. Inputs arrive contiguous, so the copy is one memcpy.
void reinterpret_cpu(const KernelContext&, const Tensor& self, const Tensor& out) {
  std::memcpy(out.data(), self.data(), out.nbytes());
}

// Part by part, through std::complex's accessors.
void reinterpret_reference(const KernelContext&, const Tensor& self, const Tensor& out) {
  const bool to_real = is_complex(self.dtype());
  const Tensor& complex = to_real ? self : out;
  const Tensor& real = to_real ? out : self;
  dispatch_complex(complex.dtype(), "self", [&](auto part) {
    using T = decltype(part);
    auto* z = complex.data_ptr<std::complex<T>>();
    T* x = real.data_ptr<T>();
    for (int64_t i = 0; i < complex.numel(); ++i) {
      if (to_real) {
        x[2 * i] = z[i].real();
        x[2 * i + 1] = z[i].imag();
      } else {
        z[i] = {x[2 * i], x[2 * i + 1]};
      }
    }
  });
}

}  // namespace

void register_fft_ops(BuiltinOps& builtins) {
  define(builtins, {.schema = "aten::_fft_r2c(Tensor self, int[] dim, int normalization, bool onesided) -> Tensor",
                    .shape = r2c_shape,
                    OPGRAPH_CPU_AND_REFERENCE(r2c_kernel)});
  define(builtins,
         {.schema = "aten::_fft_c2r(Tensor self, int[] dim, int normalization, SymInt last_dim_size) -> Tensor",
          .shape = c2r_shape,
          OPGRAPH_CPU_AND_REFERENCE(c2r_kernel)});
  define(builtins, {.schema = "aten::_fft_c2c(Tensor self, SymInt[] dim, int normalization, bool forward) -> Tensor",
                    .shape = c2c_shape,
                    OPGRAPH_CPU_AND_REFERENCE(c2c_kernel)});
  define(builtins, {.schema = "aten::view_as_real(Tensor(a) self) -> Tensor(a)",
                    .shape = view_as_real_shape,
                    .cpu = reinterpret_cpu,
                    .reference = reinterpret_reference});
  define(builtins, {.schema = "aten::view_as_complex(Tensor(a) self) -> Tensor(a)",
                    .shape = view_as_complex_shape,
                    .cpu = reinterpret_cpu,
                    .reference = reinterpret_reference});
}

}  // namespace opgraph::kernels
