// Runs a kernel's hot loops compiled for the widest vector instructions the
// CPU has.
//
// libopgraph is built for baseline x86-64 (SSE2) so that it loads on any
// x86-64 CPU. dispatch_cpu(fn) calls fn through one of three copies of a
// wrapper: one compiled for AVX-512, one for AVX2 with FMA, one for the
// baseline, each marked `flatten` so that fn and everything it calls is
// inlined into it and vectorized for that copy's instruction set. The loops
// are written once, in plain C++; cpu_capability() picks the copy at run time.
//
// Why not the alternatives:
// - target_clones resolves a function once, at load time, from the CPU alone:
//   no switch could make a machine with AVX-512 run (and test) the baseline
//   copy. It also applies to one named function, where the kernels' loops are
//   lambdas and templates.
// - Compiling the kernel files once per instruction set gives every inline
//   function and template they instantiate (std::vector, the helpers in
//   rows.h) one copy per set, of which the linker keeps any one: baseline
//   code may end up calling an AVX-512 copy on a CPU without AVX-512.
// Here, code for the wider sets exists only inlined into its wrapper, which
// runs only when the CPU has that set. A call that cannot be inlined goes to
// the ordinary, baseline function: slower, never wrong.
//
// Keep fn to loops over memory (one chunk of a parallel_for): everything it
// reaches is compiled three times.
#pragma once

#include "opgraph/core/cpu_capability.h"

namespace opgraph::kernels {

// The three copies; call dispatch_cpu instead.
#if defined(__x86_64__)
template <typename Fn>
[[gnu::target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"), gnu::flatten]] void run_avx512(const Fn& fn) {
  fn();
}

template <typename Fn>
[[gnu::target("avx2,fma"), gnu::flatten]] void run_avx2(const Fn& fn) {
  fn();
}
#endif

template <typename Fn>
[[gnu::flatten]] void run_default(const Fn& fn) {
  fn();
}

template <typename Fn>
void dispatch_cpu(const Fn& fn) {
#if defined(__x86_64__)
  switch (cpu_capability()) {
    case CpuCapability::Avx512: return run_avx512(fn);
    case CpuCapability::Avx2: return run_avx2(fn);
    case CpuCapability::Default: break;
  }
#endif
  run_default(fn);
}

}  // namespace opgraph::kernels
