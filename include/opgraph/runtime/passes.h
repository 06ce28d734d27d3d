// The graph passes: rewrites a Session makes at load so that a graph runs
// faster, each leaving every output the same up to float rounding, as ONNX
// Runtime's graph transformers do. graph_passes() is the list, in the order
// they run; SessionOptions::disabled_passes turns any of them off by name, and
// `opgraph inspect --passes` shows what each rewrote in a model.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"

namespace opgraph {

struct PassInfo {
  std::string name;                 // "fuse_activations"
  std::string summary;              // what it rewrites into what
  std::vector<DeviceType> devices;  // where a Session makes it
};

// Every pass, in the order a Session makes them.
const std::vector<PassInfo>& graph_passes();

// What one pass did to a graph.
struct PassReport {
  std::string pass;
  // The nodes it made or changed, as "name: op" ("conv_0: opgraph::conv2d").
  // A node that absorbs others keeps its own name.
  std::vector<std::string> rewritten;
  size_t removed = 0;    // nodes it dropped
  bool skipped = false;  // disabled, or not for the graph's device
  bool changed() const { return !rewritten.empty() || removed > 0; }
};

struct PassOptions {
  Device device = Device::cpu();
  Precision precision = Precision::Float32;  // see SessionOptions::precision
  WeightQuantization weights = {};           // see SessionOptions::weights
  std::vector<std::string> disabled = {};    // names of passes not to make
};

// Makes the passes for options.device in order, as a Session does at load;
// one report per pass of graph_passes(). Throws opgraph::Error for a graph
// that does not verify, before any rewrite, and for a disabled name that no
// pass has.
std::vector<PassReport> optimize(Graph& graph, Weights& weights, const PassOptions& options = {},
                                 const Registry& registry = Registry::global());

}  // namespace opgraph
