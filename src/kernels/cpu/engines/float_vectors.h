// The float32 vector operations that the register tiles of each instruction
// set share (panel_tiles_kernel.h, dot_panel_tiles_kernel.h): one struct per
// set, each function compiled for that set. A set's Vec derives from its
// struct and adds what its tiles need besides.
#pragma once

#include <immintrin.h>

#define OPGRAPH_AVX512_TARGET [[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")]]
#define OPGRAPH_AVX2_TARGET [[gnu::target("avx2,fma")]]

namespace opgraph::kernels {

struct Avx512Floats {
  using Floats = __m512;
  static constexpr int kLanes = 16;
  OPGRAPH_AVX512_TARGET static Floats zero() { return _mm512_setzero_ps(); }
  OPGRAPH_AVX512_TARGET static Floats load(const float* from) { return _mm512_loadu_ps(from); }
  OPGRAPH_AVX512_TARGET static void store(float* to, Floats v) { _mm512_storeu_ps(to, v); }
  OPGRAPH_AVX512_TARGET static Floats broadcast(float x) { return _mm512_set1_ps(x); }
  OPGRAPH_AVX512_TARGET static Floats add(Floats a, Floats b) { return _mm512_add_ps(a, b); }
  OPGRAPH_AVX512_TARGET static Floats sub(Floats a, Floats b) { return _mm512_sub_ps(a, b); }
  OPGRAPH_AVX512_TARGET static Floats mul(Floats a, Floats b) { return _mm512_mul_ps(a, b); }
  OPGRAPH_AVX512_TARGET static Floats fmadd(Floats a, Floats b, Floats c) { return _mm512_fmadd_ps(a, b, c); }
};

struct Avx2Floats {
  using Floats = __m256;
  static constexpr int kLanes = 8;
  OPGRAPH_AVX2_TARGET static Floats zero() { return _mm256_setzero_ps(); }
  OPGRAPH_AVX2_TARGET static Floats load(const float* from) { return _mm256_loadu_ps(from); }
  OPGRAPH_AVX2_TARGET static void store(float* to, Floats v) { _mm256_storeu_ps(to, v); }
  OPGRAPH_AVX2_TARGET static Floats broadcast(float x) { return _mm256_set1_ps(x); }
  OPGRAPH_AVX2_TARGET static Floats add(Floats a, Floats b) { return _mm256_add_ps(a, b); }
  OPGRAPH_AVX2_TARGET static Floats sub(Floats a, Floats b) { return _mm256_sub_ps(a, b); }
  OPGRAPH_AVX2_TARGET static Floats mul(Floats a, Floats b) { return _mm256_mul_ps(a, b); }
  OPGRAPH_AVX2_TARGET static Floats fmadd(Floats a, Floats b, Floats c) { return _mm256_fmadd_ps(a, b, c); }
};

}  // namespace opgraph::kernels
