// opgraph bench: latency percentiles, throughput and memory of repeated runs
// of a model on fixed inputs.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "commands.h"
#include "model.h"
#include "opgraph/core/thread_pool.h"
#include "report.h"

namespace opgraph::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Nearest rank: the smallest time that at least `percent` of the runs took.
double percentile(const std::vector<double>& sorted, double percent) {
  const size_t rank = static_cast<size_t>(std::ceil(percent / 100 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

size_t max_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;  // Linux counts KiB
}

std::string input_types(const std::vector<Tensor>& inputs, const Session& session) {
  std::vector<std::string> types;
  for (size_t k = 0; k < inputs.size(); ++k) types.push_back(session.inputs()[k].name + ": " + inputs[k].str());
  return joined(types, "none");
}

int bench_main(const Args& args) {
  const int64_t warmup = args.integer("--warmup", 10, 0);
  const int64_t iterations = args.integer("--iters", 100, 1);
  const SessionOptions options = session_options(args);
  const Session session(args.operand(), options);
  const std::vector<Tensor> inputs = model_inputs(session, args, /*random_fill=*/true);
  State state = model_state(session, args, inputs);

  for (int64_t i = 0; i < warmup; ++i) session.run(inputs, &state);
  std::vector<double> milliseconds;
  milliseconds.reserve(static_cast<size_t>(iterations));
  size_t output_bytes = 0;
  const Clock::time_point begin = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    const Clock::time_point start = Clock::now();
    const std::vector<Tensor> outputs = session.run(inputs, &state);
    milliseconds.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    output_bytes = 0;
    for (const Tensor& output : outputs) output_bytes += output.nbytes();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  std::sort(milliseconds.begin(), milliseconds.end());
  const double mean = std::accumulate(milliseconds.begin(), milliseconds.end(), 0.0) / static_cast<double>(iterations);

  const size_t arena_bytes = session.planned_peak_bytes();
  std::printf("model: %s (%zu nodes)\n", args.operand().c_str(), session.graph().nodes.size());
  std::printf("inputs: %s\n", input_types(inputs, session).c_str());
  std::printf("threads: %d, warmup runs: %lld, timed runs: %lld\n",
              options.threads > 0 ? options.threads : get_num_threads(), static_cast<long long>(warmup),
              static_cast<long long>(iterations));
  for (double percent : {50, 90, 99}) {
    std::printf("p%.0f: %.4f ms\n", percent, percentile(milliseconds, percent));
  }
  std::printf("mean: %.4f ms, min: %.4f ms, max: %.4f ms\n", mean, milliseconds.front(), milliseconds.back());
  std::printf("throughput: %.1f runs/s\n", static_cast<double>(iterations) / seconds);
  std::printf("peak memory: %s (planned arena %s + outputs %s; without reuse the arena would be %s)\n",
              format_bytes(arena_bytes + output_bytes).c_str(), format_bytes(arena_bytes).c_str(),
              format_bytes(output_bytes).c_str(), format_bytes(session.naive_bytes()).c_str());
  std::printf("max RSS: %s\n", format_bytes(max_rss_bytes()).c_str());
  return 0;
}

}  // namespace

Command bench_command() {
  return {"bench",
          "model.opg",
          "time repeated runs: latency percentiles, throughput and peak memory",
          "Inputs not given with --input are random (normal floats; integers and bools 0 or 1) of the declared "
          "dtype and shape;\nsymbolic dimensions take their sizes from --dim or from the input files. Peak memory "
          "is the memory plan's\narena plus one run's outputs; max RSS is the whole process's.",
          {{"--iters", "I", "timed runs (default 100)"},
           {"--warmup", "W", "untimed runs first (default 10)"},
           threads_flag(),
           precision_flag(),
           weights_flag(),
           group_size_flag(),
           activations_flag(),
           products_flag(),
           disable_pass_flag(),
           input_flag(),
           dim_flag(),
           package_path_flag()},
          bench_main};
}

}  // namespace opgraph::cli
