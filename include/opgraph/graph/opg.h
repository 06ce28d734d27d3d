// .opg files: a graph and its weights in one valid safetensors file.
//
//   [8 bytes: header length N, little-endian]
//   [N bytes: JSON header]  {"__metadata__": {"opgraph.version": "1",
//                                             "opgraph.graph": "<graph JSON>",
//                                             "opgraph.packages": "[\"mylib\"]"},
//                            "w0": {"dtype": "F32", "shape": [16, 3, 3, 3],
//                                   "data_offsets": [0, 1728]}, ...}
//   [data: the weights, back to back]
//
// The weights are the graph's constants, stored under their names, so any
// safetensors reader reads them. Loading maps the file into memory and
// checks everything before trusting it: header length, header JSON, format
// version, tensor dtypes, shapes and byte ranges, and the graph itself.
#pragma once

#include <string>
#include <unordered_map>

#include "opgraph/core/tensor.h"
#include "opgraph/graph/graph.h"

namespace opgraph {

inline constexpr const char* kOpgVersion = "1";

using Weights = std::unordered_map<std::string, Tensor>;

struct OpgFile {
  Graph graph;
  // Views into the mapped file; each keeps the mapping alive. The mapping is
  // private: writing to a weight changes this process's copy only.
  Weights weights;
};

// Throws opgraph::Error unless `weights` holds exactly one cpu tensor per
// constant of the graph, of the declared dtype and shape.
void check_weights(const Graph& graph, const Weights& weights);

// Writes `graph` and one tensor per constant (dtype and shape as declared).
// Throws opgraph::Error for a missing, extra or mismatched weight, a graph
// that fails verify_structure(), or a file that cannot be written.
void save_opg(const std::string& path, const Graph& graph, const Weights& weights);

// Throws opgraph::Error naming the file and what is wrong (tensor, node, byte
// offsets) for any file that is not a well-formed .opg.
OpgFile load_opg(const std::string& path);

}  // namespace opgraph
