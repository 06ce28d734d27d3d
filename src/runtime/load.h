// A Session's load: what it does once with a graph before any run. It loads
// the op packages the graph names, checks the graph, makes the graph passes
// (runtime/passes.h), resolves every node's op and its kernel for the
// session's device, puts the constants there, and has each kernel that wants
// to prepare what it keeps about its node (OpDef::prepare).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/resolved.h"
#include "opgraph/runtime/session.h"

namespace opgraph {

struct LoadedGraph {
  Graph graph;  // as it runs; the resolved nodes point into it, so it never moves
  ResolvedGraph resolved;
  std::vector<ValueInfo> types;  // by ValueId, with symbolic dimensions
  std::vector<PassReport> pass_reports;
  std::vector<Tensor> constants;         // by position in graph.constants: contiguous, on the device
  std::vector<const KernelFn*> kernels;  // by node
  // By node: what its op's OpDef::prepare made for it (null where the op
  // prepares nothing). Kernels keep their own state safe across runs.
  std::vector<std::unique_ptr<KernelState>> states;
};

// Throws opgraph::Error for options it cannot meet, a graph that does not
// verify (naming its nodes as given), an op without a kernel for the device,
// or weights that do not match the graph's constants.
std::unique_ptr<const LoadedGraph> load_graph(Graph graph, Weights weights, const SessionOptions& options,
                                              const std::vector<std::string>& search_paths);

}  // namespace opgraph
