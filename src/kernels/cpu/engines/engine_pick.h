// Which engine runs a class of calls (a product of one shape, say) fastest on
// the CPU at hand, found by timing each engine that can run it on the first
// call of the class and kept per CPU model: in the process, and in a file
// under the cache folder ($OPGRAPH_CACHE_DIR, else ~/.cache/opgraph) that
// later processes on the same CPU model read instead of measuring again.
// Vendor libraries pick their code paths by CPU vendor and ISA, so a rule
// written from one CPU's timings chose the slower engine on another (MKL on
// AMD Zen 4, oneDNN's GEMM on AMD Zen 3).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>

namespace opgraph::kernels {

// One engine's way to run the call.
struct EngineTrial {
  const char* engine;  // its name, as node_engines reports it ("MKL", "oneDNN")
  // Computes the call on the engine and returns true, or returns false,
  // having done nothing, where the engine cannot take it.
  std::function<bool()> run;
};

struct EnginePick {
  size_t trial;      // the index of the engine picked among the trials
  const char* note;  // the engine and why, as node_engines reports it; lives as long as the process
};

// Picks the trial that runs calls of `shape_class` fastest, and runs it on
// this call. The first call of a class on this CPU model (`shape_class`
// names everything the timings depend on besides the CPU: shapes, thread
// count) runs each trial once to make what it prepares (packed weights,
// primitives), then times each in turn, `restore()` before every run putting
// back what a run changes (an accumulated output), and runs the pick last, so
// the call's outputs are the pick's. A later call of the class runs the
// pick, or, where the pick declines it, the first trial that takes it.
// Returns {trials.size(), nullptr}, having run nothing, where none does.
EnginePick pick_engine(const std::string& shape_class, std::span<const EngineTrial> trials,
                       const std::function<void()>& restore);

// The file of this CPU model's picks: one line per class, the class, the
// engine picked and each engine's time.
std::string engine_pick_file();

}  // namespace opgraph::kernels
