// conv1d kernels: out[i] = sum_{j < kn, i + j < n} in[i + j] * k[j].
//
// The package is built for baseline x86-64, so each hot loop is compiled for
// AVX-512, AVX2+FMA and SSE2 through target attributes and picked at run
// time: one binary runs on every x86-64 CPU and uses the widest vectors it
// has. The loops use GCC vector extensions; `a * b + c` on them compiles to
// one FMA instruction where the target has FMA (compilers contract a * b + c
// by default).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#define CONV1D_INLINE [[gnu::always_inline]] inline

namespace conv1d {
namespace detail {

template <typename T, int Bytes>
struct Vec {
  typedef T type __attribute__((vector_size(Bytes)));
};

// The vector at p, at any element offset: an lvalue to load or store.
template <typename V, typename T>
CONV1D_INLINE auto& at(T* p) {
  typedef V unaligned __attribute__((aligned(alignof(T)), may_alias));
  if constexpr (std::is_const_v<T>) {
    return *reinterpret_cast<const unaligned*>(p);
  } else {
    return *reinterpret_cast<unaligned*>(p);
  }
}

// Calls f(std::integral_constant<int, i>) for i < N: indices known at
// compile time, so arrays of vectors live in registers, not memory.
template <int N, typename F>
CONV1D_INLINE void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>)
      [[gnu::always_inline]] { (f(std::integral_constant<int, I>{}), ...); }(std::make_integer_sequence<int, N>{});
}

// R * L outputs at `out` (L lanes per vector), all of whose taps lie inside
// the input; R accumulators stay in registers across all taps.
//
// Taps go phase by phase, j = j0, j0 + L, j0 + 2L, ...: tap j + L reads the
// input vectors of tap j shifted by one, so a window of R input vectors
// slides along and each tap loads one new vector for its R FMAs. Taps in
// order j = 0, 1, 2 would need R unaligned loads per tap, and the loads,
// not the FMAs, would bound the loop.
template <int R, typename V, typename T>
CONV1D_INLINE void block(const T* in, const V* w, T* out, int64_t kn) {
  constexpr int L = sizeof(V) / sizeof(T);
  V acc[R] = {};
  for (int64_t j0 = 0; j0 < std::min<int64_t>(L, kn); ++j0) {
    V x[R];
    unroll<R - 1>([&](auto r) [[gnu::always_inline]] { x[r] = at<V>(in + j0 + L * r); });
    for (int64_t j = j0; j < kn; j += L) {
      x[R - 1] = at<V>(in + j + L * (R - 1));
      unroll<R>([&](auto r) [[gnu::always_inline]] { acc[r] = x[r] * w[j] + acc[r]; });
      unroll<R - 1>([&](auto r) [[gnu::always_inline]] { x[r] = x[r + 1]; });
    }
  }
  unroll<R>([&](auto r) [[gnu::always_inline]] { at<V>(out + L * r) = acc[r]; });
}

template <typename T, int Bytes, int R>
CONV1D_INLINE void forward(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t begin, int64_t end) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t B = R * Bytes / sizeof(T);
  int64_t i = begin;
  if (i + B <= end && i + B + kn - 1 <= n) {
    // Taps broadcast once, so the block loop loads each whole and aligned.
    std::unique_ptr<V[]> w(new V[kn]);
    for (int64_t j = 0; j < kn; ++j) {
      // Not `k[j] - V{}`: GCC lowers that to one insert per lane in this
      // target-independent code, which inlining does not undo.
      w[j] = V{};
      w[j] += k[j];
    }
    for (; i + B <= end && i + B + kn - 1 <= n; i += B) block<R>(in + i, w.get(), out + i, kn);
  }
  // The outputs left: fewer than a block, or near the end of the input where
  // taps run past it. Tap-major so that the inner loop still vectorizes.
  std::fill(out + i, out + end, T(0));
  for (int64_t j = 0; j < kn; ++j) {
    const int64_t stop = std::min(end, n - j);
    for (int64_t t = i; t < stop; ++t) out[t] += in[t + j] * k[j];
  }
}

template <typename T, int Bytes>
CONV1D_INLINE T dot(const T* a, const T* b, int64_t n) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int L = Bytes / sizeof(T);
  V acc[4] = {};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    unroll<4>([&](auto r) [[gnu::always_inline]] { acc[r] = at<V>(a + i + L * r) * at<V>(b + i + L * r) + acc[r]; });
  }
  const V v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  T sum = 0;
  for (int l = 0; l < L; ++l) sum += v[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// k[j] = sum_{i + j < n} g[i] * in[i + j] for j in [begin, end), over
// slices of i short enough that g and in stay in L1 across all j.
template <typename T, int Bytes>
CONV1D_INLINE void correlate(const T* g, const T* in, T* k, int64_t n, int64_t begin, int64_t end) {
  constexpr int64_t slice = 2048;
  std::fill(k + begin, k + end, T(0));
  for (int64_t c = 0; c < n; c += slice) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t len = std::min(slice, n - j - c);
      if (len > 0) k[j] += dot<T, Bytes>(g + c, in + c + j, len);
    }
  }
}

// One instance of each kernel per instruction set. R accumulators plus the
// R-vector input window fit the register file: 32 vector registers with
// AVX-512, 16 below it.
#define CONV1D_ISA(name, isa, bytes, R)                                                                              \
  template <typename T>                                                                                              \
  [[gnu::target(isa)]] void forward_##name(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t begin,    \
                                           int64_t end) {                                                            \
    forward<T, bytes, R>(in, k, out, n, kn, begin, end);                                                             \
  }                                                                                                                  \
  template <typename T>                                                                                              \
  [[gnu::target(isa)]] void correlate_##name(const T* g, const T* in, T* k, int64_t n, int64_t begin, int64_t end) { \
    correlate<T, bytes>(g, in, k, n, begin, end);                                                                    \
  }
CONV1D_ISA(avx512, "avx512f", 64, 12)
CONV1D_ISA(avx2, "avx2,fma", 32, 7)
CONV1D_ISA(sse2, "sse2", 16, 6)
#undef CONV1D_ISA

enum class Isa { SSE2, AVX2, AVX512 };

inline Isa best_isa() {
  static const Isa isa = __builtin_cpu_supports("avx512f")                                 ? Isa::AVX512
                         : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? Isa::AVX2
                                                                                           : Isa::SSE2;
  return isa;
}

}  // namespace detail

// Outputs [begin, end) of out[i] = sum_{j < kn, i + j < n} in[i + j] * k[j].
template <typename T>
void conv1d_forward(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t begin, int64_t end) {
  switch (detail::best_isa()) {
    case detail::Isa::AVX512: return detail::forward_avx512(in, k, out, n, kn, begin, end);
    case detail::Isa::AVX2: return detail::forward_avx2(in, k, out, n, kn, begin, end);
    case detail::Isa::SSE2: return detail::forward_sse2(in, k, out, n, kn, begin, end);
  }
}

// Outputs [begin, end) of grad_input[t] = sum_{j < kn, 0 <= t - j} grad_out[t - j] * k[j]:
// the forward convolution of grad_out, front-padded with kn - 1 zeros, with
// the reversed kernel.
template <typename T>
void conv1d_grad_input(const T* grad_out, const T* k, T* grad_input, int64_t kn, int64_t begin, int64_t end) {
  if (begin >= end) return;
  const int64_t padded_begin = begin - (kn - 1);
  std::vector<T> window(end - padded_begin, T(0));
  const int64_t first = std::max<int64_t>(padded_begin, 0);
  std::copy(grad_out + first, grad_out + end, window.begin() + (first - padded_begin));
  const std::vector<T> reversed(std::reverse_iterator(k + kn), std::reverse_iterator(k));
  conv1d_forward(window.data(), reversed.data(), grad_input + begin, end - padded_begin, kn, 0, end - begin);
}

// Taps [begin, end) of grad_kernel[j] = sum_{i + j < n} grad_out[i] * in[i + j].
template <typename T>
void conv1d_grad_kernel(const T* grad_out, const T* in, T* grad_kernel, int64_t n, int64_t begin, int64_t end) {
  switch (detail::best_isa()) {
    case detail::Isa::AVX512: return detail::correlate_avx512(grad_out, in, grad_kernel, n, begin, end);
    case detail::Isa::AVX2: return detail::correlate_avx2(grad_out, in, grad_kernel, n, begin, end);
    case detail::Isa::SSE2: return detail::correlate_sse2(grad_out, in, grad_kernel, n, begin, end);
  }
}

}  // namespace conv1d

#undef CONV1D_INLINE
