// What the graph rewrites (graph/optimize.cpp, graph/nchwc_layout.cpp)
// share: how they read a node's uses, attributes and arguments.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "opgraph/graph/graph.h"
#include "opgraph/registry/registry.h"

namespace opgraph {

// How many times each value is read: as a node input, and as a graph output.
std::unordered_map<std::string, int> count_uses(const Graph& graph);

// A node's attributes bound to its op's schema, defaults filled in; nullopt
// when they do not bind, which the Session's checks then report as they
// would without the rewrites.
std::optional<Attrs> bound_attrs(const Node& node, const Registry& registry);

// A Scalar attribute's value, which a node may hold as an int.
double scalar_value(const Attrs& attrs, std::string_view name);

// The one value a tensor argument passes, if it passes exactly one.
const std::string* single_value(const NodeInput& input);

}  // namespace opgraph
