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
  // As it runs, its states folded into inputs and outputs
  // (with_states_as_inputs); the resolved nodes point into it, so it never moves.
  Graph graph;
  // How many of graph.inputs and graph.outputs the graph declares: the
  // states follow them in graph.inputs, their updates in graph.outputs.
  size_t num_inputs = 0, num_outputs = 0;
  std::vector<StateInfo> graph_states;  // as declared
  std::vector<Tensor> state_initials;   // by state: its initial value on the device; undefined for zeros
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
