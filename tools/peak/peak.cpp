// This machine's ceilings for float32 kernels: the FMA peak per core and the
// memory bandwidth, at a given number of threads, so that a benchmark can say
// what fraction of them a model reaches. Built and run by bench/peak.py.
//
//   peak THREADS   prints one JSON object:
//   {"isa": "avx512", "threads": 2, "fma_gflops_per_core": 250.1, "fma_gflops": 181.2, "triad_gbs": 41.0,
//    "read_gbs": 45.2}
//
// The FMA loop: float32 fused multiply-adds on independent vector
// accumulators (AVX-512 where the CPU has it, AVX2 otherwise), enough of
// them to cover the FMA latency on every FMA port, so that nothing waits for
// a result; all threads run it at once. fma_gflops_per_core: its FLOPs per
// second of CPU time of the slowest thread, what a core does while it runs
// the loop, which other processes on a shared machine do not lower (they
// take time from it, not speed). fma_gflops: the FLOPs of all threads per
// wall second, which they do. triad_gbs: STREAM's triad a[i] = b[i] + s * c[i]
// on float64 arrays far larger than the caches, per wall second, counting
// 24 bytes per element as STREAM does (the write-allocate read of a is not
// counted). read_gbs: the sum of a float32 array as large, per wall
// second: the one stream a decode step's weights make, which reads without
// writing (on one core it runs well above the triad, whose writes
// share the core's outstanding misses). Each figure is the best of 20
// repetitions.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Independent accumulators: FMA latency (4 to 5 cycles) times 2 FMA ports,
// rounded up, so that the chains never stall each other.
constexpr int kChains = 12;
constexpr long kFmaIterations = 50'000'000;  // per thread: a tenth of a second or so

template <int N>
float sum_of(const float (&lanes)[N]) {
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

// Each function runs kFmaIterations rounds of kChains vector FMAs and returns
// a value derived from the accumulators, so that none is optimized away.
__attribute__((target("avx512f"))) float fma_avx512(long iterations) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(1.0f + 1e-3f * c);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  // Unrolled, the accumulators live in registers (not in the array's memory).
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  float lanes[16];
  _mm512_storeu_ps(lanes, sum);
  return sum_of(lanes);
}

__attribute__((target("avx2,fma"))) float fma_avx2(long iterations) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(1.0f + 1e-3f * c);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm256_add_ps(sum, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  return sum_of(lanes);
}

// The best of some repetitions of a parallel loop: its wall seconds, and
// the CPU seconds of its slowest thread.
struct Seconds {
  double wall = 1e30;
  double thread_cpu = 1e30;
};

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Runs work(thread index) on `threads` threads at once, `repeats` times.
template <typename Work>
Seconds best_parallel_seconds(int threads, int repeats, const Work& work) {
  Seconds best;
  for (int r = 0; r < repeats; ++r) {
    std::vector<double> cpu(threads);
    const auto timed = [&](int t) {
      const double start = thread_cpu_seconds();
      work(t);
      cpu[t] = thread_cpu_seconds() - start;
    };
    const auto start = Clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(timed, t);
    timed(0);
    for (auto& thread : pool) thread.join();
    best.wall = std::min(best.wall, std::chrono::duration<double>(Clock::now() - start).count());
    best.thread_cpu = std::min(best.thread_cpu, *std::max_element(cpu.begin(), cpu.end()));
  }
  return best;
}

volatile float fma_sink;  // keeps the accumulators' results alive

struct Fma {
  double gflops_per_core;
  double gflops;
};

Fma fma_gflops(int threads, bool avx512) {
  const int lanes = avx512 ? 16 : 8;
  const Seconds seconds = best_parallel_seconds(
      threads, 20, [avx512](int) { fma_sink = avx512 ? fma_avx512(kFmaIterations) : fma_avx2(kFmaIterations); });
  const double per_thread = 2.0 * lanes * kChains * kFmaIterations / 1e9;
  return {per_thread / seconds.thread_cpu, per_thread * threads / seconds.wall};
}

// The triad, built for the widest vector unit the CPU has.
__attribute__((target_clones("avx512f", "avx2", "default"))) void triad(double* a, const double* b, const double* c,
                                                                        double scalar, long begin, long end) {
  for (long i = begin; i < end; ++i) a[i] = b[i] + scalar * c[i];
}

double triad_gbs(int threads) {
  constexpr long n = 1L << 24;  // 128 MiB per array: four times a large L3
  std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
  const auto range = [threads](int t) { return std::pair{n * t / threads, n * (t + 1) / threads}; };
  const double seconds = best_parallel_seconds(threads, 20, [&](int t) {
                           const auto [begin, end] = range(t);
                           triad(a.data(), b.data(), c.data(), 3.0, begin, end);
                         }).wall;
  if (a[n / 2] != 7.0) std::abort();  // the triad ran and wrote what it should
  return 3.0 * sizeof(double) * n / seconds / 1e9;
}

// Sums of x[begin, end) (end - begin a multiple of 64) in four independent
// vector chains, so that the loads, not the adds' latency, set the pace,
// asking for each cache line 16 KiB ahead: one core's hardware prefetchers
// alone follow a single stream well below the speed its memory gives.
constexpr long kAheadFloats = 16384 / sizeof(float);

__attribute__((target("avx512f"))) float sum_avx512(const float* x, long begin, long end) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (long i = begin; i < end; i += 64) {
    for (int v = 0; v < 4; ++v) {
      _mm_prefetch(reinterpret_cast<const char*>(x + i + kAheadFloats + 16 * v), _MM_HINT_T0);
      acc[v] = _mm512_add_ps(acc[v], _mm512_loadu_ps(x + i + 16 * v));
    }
  }
  float lanes[16];
  _mm512_storeu_ps(lanes, _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
  return sum_of(lanes);
}

__attribute__((target("avx2"))) float sum_avx2(const float* x, long begin, long end) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  for (long i = begin; i < end; i += 64) {
    for (int v = 0; v < 8; ++v) {
      if (v % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(x + i + kAheadFloats + 8 * v), _MM_HINT_T0);
      acc[v % 4] = _mm256_add_ps(acc[v % 4], _mm256_loadu_ps(x + i + 8 * v));
    }
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  return sum_of(lanes);
}

double read_gbs(int threads, bool avx512) {
  constexpr long n = 1L << 28;  // 1 GiB (some CPUs have L3 caches of hundreds of MiB), split in multiples of 64
  std::vector<float> x(n, 1.0f);
  std::vector<float> sums(threads);
  const auto range = [threads](int t) { return std::pair{n / 64 * t / threads * 64, n / 64 * (t + 1) / threads * 64}; };
  const double seconds = best_parallel_seconds(threads, 20, [&](int t) {
                           const auto [begin, end] = range(t);
                           sums[t] = avx512 ? sum_avx512(x.data(), begin, end) : sum_avx2(x.data(), begin, end);
                         }).wall;
  const auto [begin, end] = range(0);
  if (sums[0] != static_cast<float>(end - begin)) std::abort();  // every element was read
  return sizeof(float) * n / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: %s THREADS (a positive count)\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !__builtin_cpu_supports("avx2")) {
    std::fprintf(stderr, "peak: the CPU has neither AVX-512 nor AVX2\n");
    return 1;
  }
  const Fma fma = fma_gflops(threads, avx512);
  const double gbs = triad_gbs(threads);
  const double read = read_gbs(threads, avx512);
  std::printf(
      "{\"isa\": \"%s\", \"threads\": %d, \"fma_gflops_per_core\": %.2f, \"fma_gflops\": %.2f, "
      "\"triad_gbs\": %.2f, \"read_gbs\": %.2f}\n",
      avx512 ? "avx512" : "avx2", threads, fma.gflops_per_core, fma.gflops, gbs, read);
  return 0;
}
