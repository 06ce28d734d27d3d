#include "runtime/trace.h"

#include <unistd.h>

#include <fstream>

#include <nlohmann/json.hpp>

namespace opgraph {

void write_chrome_trace(const std::string& path, const Graph& graph, std::span<const ProfileEvent> events) {
  nlohmann::ordered_json trace_events = nlohmann::ordered_json::array();
  const int pid = static_cast<int>(::getpid());
  for (const ProfileEvent& event : events) {
    const Node& node = graph.nodes.at(event.node);
    trace_events.push_back({{"name", node.name},
                            {"cat", "node"},
                            {"ph", "X"},
                            {"ts", event.start_us},
                            {"dur", event.duration_us},
                            {"pid", pid},
                            {"tid", event.thread},
                            {"args", {{"op", node.op_type}, {"shapes", event.shapes}, {"run", event.run}}}});
  }
  const nlohmann::ordered_json trace = {{"traceEvents", std::move(trace_events)}, {"displayTimeUnit", "ms"}};
  std::ofstream out(path, std::ios::trunc);
  OPGRAPH_CHECK(out.good(), "write_chrome_trace: cannot open '", path, "' for writing");
  out << trace.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
  out.close();
  OPGRAPH_CHECK(out.good(), "write_chrome_trace: writing '", path, "' failed");
}

}  // namespace opgraph
