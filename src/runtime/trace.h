// Chrome trace-event JSON for a session's profile.
#pragma once

#include <span>
#include <string>

#include "opgraph/runtime/session.h"

namespace opgraph {

// {"traceEvents": [{"name": node, "cat": "node", "ph": "X", "ts", "dur", "pid",
//  "tid", "args": {"op", "shapes", "run"}}, ...]}: what chrome://tracing and
// Perfetto open.
void write_chrome_trace(const std::string& path, const Graph& graph, std::span<const ProfileEvent> events);

}  // namespace opgraph
