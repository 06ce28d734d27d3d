// conv1d kernels: out[i] = sum_{j < kn, i + j < n} in[i + j] * k[j].
//
// Built for a baseline x86-64 target: each hot loop is compiled for AVX-512,
// AVX2+FMA and SSE2 through target attributes and picked at run time, so one
// binary runs everywhere and uses the widest vectors the CPU has.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace conv1d {
namespace detail {

template <typename T, int Bytes>
struct Vec {
  typedef T type __attribute__((vector_size(Bytes)));
};

#define CONV1D_INLINE [[gnu::always_inline]] inline

// The vector at p, at any element offset: an lvalue to load or store.
template <typename V, typename T>
CONV1D_INLINE auto& at(T* p) {
  typedef V unaligned __attribute__((aligned(alignof(T)), may_alias));
  if constexpr (std::is_const_v<T>) return *reinterpret_cast<const unaligned*>(p);
  else return *reinterpret_cast<unaligned*>(p);
}

// Calls f(std::integral_constant<int, i>) for i < N: loop indices known at
// compile time, so accumulators index registers rather than memory.
template <int N, typename F>
CONV1D_INLINE void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) [[gnu::always_inline]] {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// R * L outputs at `out` (L = lanes per vector), all of whose taps lie
// inside the input; R accumulators stay in registers across all taps.
//
// Taps go phase by phase, j = j0, j0 + L, j0 + 2L, ...: tap j + L reads the
// input vectors of tap j shifted by one, so a window of R input vectors
// slides along and each tap loads one new vector for its R FMAs. Visiting
// taps in order j = 0, 1, 2 would need R unaligned loads per tap, and those
// loads, not the FMAs, would bound the loop.
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
CONV1D_INLINE void forward(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t begin,
                           int64_t end) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t B = R * Bytes / sizeof(T);
  int64_t i = begin;
  if (i + B <= end && i + B + kn - 1 <= n) {
    // Taps broadcast once up front: the block loop then loads them whole.
    std::unique_ptr<V[]> w(new V[kn]);
    for (int64_t j = 0; j < kn; ++j) {
      w[j] = V{};
      w[j] += k[j];  // `k[j] - V{}` would build the vector lane by lane here
    }
    for (; i + B <= end && i + B + kn - 1 <= n; i += B) block<R>(in + i, w.get(), out + i, kn);
  }
  // The outputs left over: fewer than a block, or near the end of the input
  // where taps run past it. Tap-major so the inner loop still vectorizes.
  std::fill(out + i, out + end, T(0));
  for (int64_t j = 0; j < kn; ++j) {
    const int64_t stop = std::min(end, n - j);
    for (int64_t t = i; t < stop; ++t) out[t] += in[t + j] * k[j];
  }
}

template <typename T, int Bytes>
CONV1D_INLINE T dot(const T* a, const T* b, int64_t n) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t L = Bytes / sizeof(T);
  V acc[4] = {};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L)
    for (int r = 0; r < 4; ++r) acc[r] = at<V>(a + i + L * r) * at<V>(b + i + L * r) + acc[r];
  V v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  T sum = 0;
  for (int l = 0; l < L; ++l) sum += v[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Outputs j in [begin, end) of k[j] = sum_{i + j < n} g[i] * in[i + j], in
// slices of i that keep both operands in L1 across all j.
template <typename T, int Bytes>
CONV1D_INLINE void correlate(const T* g, const T* in, T* k, int64_t n, int64_t begin, int64_t end) {
  constexpr int64_t slice = 2048;
  std::fill(k + begin, k + end, T(0));
  for (int64_t c = 0; c < n; c += slice)
    for (int64_t j = begin; j < end; ++j) {
      const int64_t len = std::min(slice, n - j - c);
      if (len > 0) k[j] += dot<T, Bytes>(g + c, in + c + j, len);
    }
}

// One instance of each kernel per instruction set; R and M fit the register
// file (32 vector registers with AVX-512, 16 below it).
#define CONV1D_ISA(name, isa, bytes, R)                                                  \
  template <typename T>                                                                        \
  [[gnu::target(isa)]] void forward_##name(const T* in, const T* k, T* out, int64_t n,     \
                                              int64_t kn, int64_t begin, int64_t end) {      \
    forward<T, bytes, R>(in, k, out, n, kn, begin, end);                                   \
  }                                                                                            \
  template <typename T>                                                                        \
  [[gnu::target(isa)]] void correlate_##name(const T* g, const T* in, T* k, int64_t n,     \
                                                int64_t begin, int64_t end) {                  \
    correlate<T, bytes>(g, in, k, n, begin, end);                                             \
  }
CONV1D_ISA(avx512, "avx512f", 64, 8)
CONV1D_ISA(avx2, "avx2,fma", 32, 6)
CONV1D_ISA(sse2, "sse2", 16, 4)
#undef CONV1D_ISA

enum class Isa { SSE2, AVX2, AVX512 };

inline Isa isa() {
  static const Isa best = __builtin_cpu_supports("avx512f") ? Isa::AVX512
                          : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                              ? Isa::AVX2
                              : Isa::SSE2;
  return best;
}

}  // namespace detail

// Outputs [out_begin, out_end) of the convolution of in[0, n) with k[0, kn).
template <typename T>
void conv1d_forward(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t out_begin,
                    int64_t out_end) {
  switch (detail::isa()) {
    case detail::Isa::AVX512: return detail::forward_avx512(in, k, out, n, kn, out_begin, out_end);
    case detail::Isa::AVX2: return detail::forward_avx2(in, k, out, n, kn, out_begin, out_end);
    case detail::Isa::SSE2: return detail::forward_sse2(in, k, out, n, kn, out_begin, out_end);
  }
}

// Taps [begin, end) of grad_kernel[j] = sum_{i + j < n} grad_out[i] * in[i + j].
template <typename T>
void conv1d_grad_kernel(const T* grad_out, const T* in, T* grad_kernel, int64_t n, int64_t begin,
                        int64_t end) {
  switch (detail::isa()) {
    case detail::Isa::AVX512: return detail::correlate_avx512(grad_out, in, grad_kernel, n, begin, end);
    case detail::Isa::AVX2: return detail::correlate_avx2(grad_out, in, grad_kernel, n, begin, end);
    case detail::Isa::SSE2: return detail::correlate_sse2(grad_out, in, grad_kernel, n, begin, end);
  }
}

// grad_input[t] = sum_{j < kn, 0 <= t - j < n} grad_out[t - j] * k[j] is the
// forward convolution of grad_out, front-padded with kn - 1 zeros, with the
// reversed kernel. Returns the padded input and reversed kernel for
// conv1d_forward(padded, reversed, grad_input, n + kn - 1, kn, t0, t1).
template <typename T>
std::pair<std::vector<T>, std::vector<T>> grad_input_operands(const T* grad_out, const T* k,
                                                              int64_t n, int64_t kn) {
  std::vector<T> padded(n + kn - 1, T(0));
  std::copy(grad_out, grad_out + n, padded.begin() + (kn - 1));
  return {std::move(padded), std::vector<T>(std::reverse_iterator(k + kn), std::reverse_iterator(k))};
}

}  // namespace conv1d
