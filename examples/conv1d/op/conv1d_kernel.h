// conv1d kernels: out[i] = sum_{j < kn, i + j < n} in[i + j] * k[j].
//
// Built for a baseline x86-64 target: each hot loop is compiled for AVX-512,
// AVX2+FMA and SSE2 through target attributes and picked at run time, so one
// binary runs everywhere and uses the widest vectors the CPU has.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

// The helpers below pass vectors wider than the baseline ABI by value; they
// are always inlined into a function of the matching target, so the ABI
// change GCC warns about never applies.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"

namespace conv1d {
namespace detail {

template <typename T, int Bytes>
struct Vec {
  typedef T type __attribute__((vector_size(Bytes)));
};

#define CONV1D_INLINE [[gnu::always_inline]] inline

template <typename V, typename T>
CONV1D_INLINE V load(const T* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <typename V, typename T>
CONV1D_INLINE void store(T* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof v);
}

// Broadcast. x - 0 is exactly x for every x (x + 0 is not, for -0), so this
// folds to a single broadcast where a lane-by-lane fill would not.
template <typename V, typename T>
CONV1D_INLINE V splat(T x) {
  return x - V{};
}

// Calls f(std::integral_constant<int, i>) for i < N: loop indices known at
// compile time, so accumulators index registers rather than memory.
template <int N, typename F>
CONV1D_INLINE void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) [[gnu::always_inline]] {
    (f(std::integral_constant<int, I>{}), ...);
  }(std::make_integer_sequence<int, N>{});
}

// Adds taps k[L*m], m < M, to R vectors of outputs (L = lanes per vector).
// Tap L*m of output vector r reads the input vector at L*(r + m), so one
// load feeds every (r, m) with the same r + m: R + M - 1 loads for R * M
// FMAs instead of one load per FMA. That keeps the loop on the FMA units
// rather than on the load ports, which unaligned loads split across cache
// lines otherwise saturate.
template <int R, int M, typename V, typename T>
CONV1D_INLINE void tap_group(V (&acc)[R], const T* in, const V* k) {
  constexpr int L = sizeof(V) / sizeof(T);
  V w[M];
  unroll<M>([&](auto m) [[gnu::always_inline]] { w[m] = k[L * m]; });
  unroll<R + M - 1>([&](auto q) [[gnu::always_inline]] {
    const V x = load<V>(in + L * q);
    unroll<M>([&](auto m) [[gnu::always_inline]] {
      if constexpr (q - m >= 0 && q - m < R) acc[q - m] = x * w[m] + acc[q - m];
    });
  });
}

// R * L outputs at `out`, all of whose taps lie inside the input.
template <int R, int M, typename V, typename T>
CONV1D_INLINE void block(const T* in, const V* k, T* out, int64_t kn) {
  constexpr int L = sizeof(V) / sizeof(T);
  V acc[R] = {};
  // Taps in phases j0 + L*g; each phase is swept M groups at a time, and its
  // last (groups % M) groups by the tap_group instance of that size.
  for (int64_t j0 = 0; j0 < std::min<int64_t>(L, kn); ++j0) {
    const int64_t groups = (kn - j0 + L - 1) / L;
    int64_t g = 0;
    for (; g + M <= groups; g += M) tap_group<R, M>(acc, in + j0 + L * g, k + j0 + L * g);
    unroll<M - 1>([&](auto m) [[gnu::always_inline]] {
      if (groups - g == m + 1) tap_group<R, m + 1>(acc, in + j0 + L * g, k + j0 + L * g);
    });
  }
  unroll<R>([&](auto r) [[gnu::always_inline]] { store(out + L * r, acc[r]); });
}

template <typename T, int Bytes, int R, int M>
CONV1D_INLINE void forward(const T* in, const T* k, T* out, int64_t n, int64_t kn, int64_t begin,
                           int64_t end) {
  using V = typename Vec<T, Bytes>::type;
  constexpr int64_t B = R * Bytes / sizeof(T);
  int64_t i = begin;
  if (i + B <= end && i + B + kn - 1 <= n) {
    std::unique_ptr<V[]> taps(new V[kn]);
    for (int64_t j = 0; j < kn; ++j) taps[j] = splat<V>(k[j]);
    for (; i + B <= end && i + B + kn - 1 <= n; i += B) block<R, M>(in + i, taps.get(), out + i, kn);
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
    for (int r = 0; r < 4; ++r) acc[r] = load<V>(a + i + L * r) * load<V>(b + i + L * r) + acc[r];
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
#define CONV1D_ISA(name, isa, bytes, R, M)                                                  \
  template <typename T>                                                                        \
  [[gnu::target(isa)]] void forward_##name(const T* in, const T* k, T* out, int64_t n,     \
                                              int64_t kn, int64_t begin, int64_t end) {      \
    forward<T, bytes, R, M>(in, k, out, n, kn, begin, end);                                   \
  }                                                                                            \
  template <typename T>                                                                        \
  [[gnu::target(isa)]] void correlate_##name(const T* g, const T* in, T* k, int64_t n,     \
                                                int64_t begin, int64_t end) {                  \
    correlate<T, bytes>(g, in, k, n, begin, end);                                             \
  }
CONV1D_ISA(avx512, "avx512f", 64, 8, 8)
CONV1D_ISA(avx2, "avx2,fma", 32, 6, 4)
CONV1D_ISA(sse2, "sse2", 16, 4, 2)
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

#pragma GCC diagnostic pop
