// opgraph profile: per-node times of repeated runs, as a Chrome trace and two
// summary tables: by node in graph order, and by op from the costliest down.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

#include "commands.h"
#include "model.h"
#include "report.h"

namespace opgraph::cli {
namespace {

std::string fixed(double value, const char* format) {
  char text[32];
  std::snprintf(text, sizeof(text), format, value);
  return text;
}

// Per op: its nodes' count and their summed mean time, costliest first.
std::vector<TableRow> by_op(const std::vector<Node>& nodes, const std::vector<double>& mean_us, double all_us) {
  std::map<std::string, std::pair<int, double>> ops;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto& [count, us] = ops[nodes[i].op_type];
    ++count;
    us += mean_us[i];
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> sorted(ops.begin(), ops.end());
  std::ranges::stable_sort(sorted, [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::vector<TableRow> rows = {{"op", "nodes", "mean us", "share"}};
  for (const auto& [op, stats] : sorted) {
    rows.push_back({op, std::to_string(stats.first), fixed(stats.second, "%.2f"),
                    fixed(all_us > 0 ? 100 * stats.second / all_us : 0, "%.1f%%")});
  }
  return rows;
}

int profile_main(const Args& args) {
  const std::string& trace = args.required("--trace");
  const int64_t warmup = args.integer("--warmup", 1, 0);
  const int64_t iterations = args.integer("--iters", 10, 1);
  SessionOptions options = session_options(args);
  options.profile = true;
  const Session session(args.operand(), options);
  const std::vector<Tensor> inputs = model_inputs(session, args, /*random_fill=*/true);
  State state = model_state(session, args, inputs);
  for (int64_t i = 0; i < warmup; ++i) session.run(inputs, &state);
  session.clear_profile_events();
  for (int64_t i = 0; i < iterations; ++i) session.run(inputs, &state);
  session.write_chrome_trace(trace);

  const std::vector<Node>& nodes = session.graph().nodes;
  const std::vector<ProfileEvent> events = session.profile_events();
  std::vector<double> mean_us(nodes.size(), 0.0);
  double all_us = 0;
  for (const ProfileEvent& event : events) {
    mean_us[event.node] += event.duration_us / static_cast<double>(iterations);
    all_us += event.duration_us / static_cast<double>(iterations);
  }
  const std::vector<std::string> engines = session.node_engines();
  std::vector<TableRow> rows = {{"#", "name", "op", "mean us", "share", "engine"}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    rows.push_back({std::to_string(i), nodes[i].name, nodes[i].op_type, fixed(mean_us[i], "%.2f"),
                    fixed(all_us > 0 ? 100 * mean_us[i] / all_us : 0, "%.1f%%"), engines[i]});
  }
  print_table(std::cout, rows);
  std::cout << "\nby op, over " << fixed(all_us / 1000, "%.2f") << " ms of node time per run:\n";
  print_table(std::cout, by_op(nodes, mean_us, all_us));
  std::cout << "wrote " << trace << ": " << events.size() << " events (" << nodes.size() << " nodes x " << iterations
            << " runs after " << warmup << " warm-up); open it in Perfetto (ui.perfetto.dev) or chrome://tracing\n";
  return 0;
}

}  // namespace

Command profile_command() {
  return {"profile",
          "model.opg",
          "time every node of repeated runs and write a Chrome trace (Perfetto, chrome://tracing)",
          "Inputs not given with --input are random, as for 'opgraph bench'. The trace holds one event per node "
          "per recorded run; the warm-up runs before them, whose first one also packs weights and makes oneDNN "
          "primitives, are not recorded. The table gives each node's mean time and, for a node with products by "
          "a constant weight, the engines they ran on and why (see --products).",
          {{"--trace", "FILE", "where to write the trace JSON; required"},
           {"--iters", "I", "runs to record (default 10)"},
           {"--warmup", "W", "unrecorded runs first (default 1)"},
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
          profile_main};
}

}  // namespace opgraph::cli
