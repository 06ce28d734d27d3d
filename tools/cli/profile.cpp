// opgraph profile: per-node times of repeated runs, as a Chrome trace and a
// summary table.
#include <cstdio>
#include <iostream>

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

int profile_main(const Args& args) {
  const std::string& trace = args.required("--trace");
  const int64_t iterations = args.integer("--iters", 10, 1);
  SessionOptions options = session_options(args);
  options.profile = true;
  const Session session(args.operand(), options);
  const std::vector<Tensor> inputs = model_inputs(session, args, /*random_fill=*/true);
  for (int64_t i = 0; i < iterations; ++i) session.run(inputs);
  session.write_chrome_trace(trace);

  const std::vector<Node>& nodes = session.graph().nodes;
  const std::vector<ProfileEvent> events = session.profile_events();
  std::vector<double> node_us(nodes.size(), 0.0);
  double all_us = 0;
  for (const ProfileEvent& event : events) {
    node_us[event.node] += event.duration_us;
    all_us += event.duration_us;
  }
  std::vector<TableRow> rows = {{"#", "name", "op", "mean us", "share"}};
  for (size_t i = 0; i < nodes.size(); ++i) {
    rows.push_back({std::to_string(i), nodes[i].name, nodes[i].op_type,
                    fixed(node_us[i] / static_cast<double>(iterations), "%.2f"),
                    fixed(all_us > 0 ? 100 * node_us[i] / all_us : 0, "%.1f%%")});
  }
  print_table(std::cout, rows);
  std::cout << "wrote " << trace << ": " << events.size() << " events (" << nodes.size() << " nodes x " << iterations
            << " runs); open it in Perfetto (ui.perfetto.dev) or chrome://tracing\n";
  return 0;
}

}  // namespace

Command profile_command() {
  return {"profile",
          "model.opg",
          "time every node of repeated runs and write a Chrome trace (Perfetto, chrome://tracing)",
          "Inputs not given with --input are random, as for 'opgraph bench'. The trace holds one event per node "
          "per run.",
          {{"--trace", "FILE", "where to write the trace JSON; required"},
           {"--iters", "I", "runs to record (default 10)"},
           threads_flag(),
           input_flag(),
           dim_flag(),
           package_path_flag()},
          profile_main};
}

}  // namespace opgraph::cli
