// Running the pass list on a graph a PassContext holds (the Session's load).
#pragma once

#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "opgraph/runtime/passes.h"

namespace opgraph {

// Throws opgraph::Error, listing the passes, for a name that no pass has.
void check_pass_names(const std::vector<std::string>& names);

// Makes the passes for options.device in order, one report per pass. The
// context's inferred types carry over from pass to pass until one changes
// the graph.
std::vector<PassReport> run_passes(PassContext& context, const PassOptions& options);

}  // namespace opgraph
