// The graph IR and .opg files from Python: opgraph.Graph, opgraph.ValueInfo,
// save_opg and load_opg.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace opgraph::python {

namespace {

Graph graph_from_python(nb::handle graph) {
  if (nb::isinstance<Graph>(graph)) return nb::cast<Graph>(graph);
  OPGRAPH_CHECK(nb::isinstance<nb::str>(graph), "expected an opgraph.Graph or its JSON text, got ",
                nb::type_name(graph.type()).c_str());
  return Graph::from_json(nb::cast<std::string>(graph));
}

nb::dict metas_to_python(const std::unordered_map<std::string, ValueInfo>& values) {
  nb::dict dict;
  for (const auto& [name, info] : values) dict[nb::str(name.c_str())] = nb::cast(info);
  return dict;
}

}  // namespace

void init_graph(nb::module_& m) {
  nb::class_<ValueInfo>(m, "ValueInfo", "The name, dtype and shape of a graph input, output or constant.")
      .def_ro("name", &ValueInfo::name)
      .def_prop_ro("dtype", [](const ValueInfo& v) { return std::string(dtype_name(v.dtype)); })
      .def_prop_ro(
          "shape", [](const ValueInfo& v) { return shape_to_python(v.shape); },
          "A tuple of sizes, with symbolic dimensions as their names (str).")
      .def("__eq__", [](const ValueInfo& a, const ValueInfo& b) { return a == b; })
      .def("__repr__", [](const ValueInfo& v) { return "ValueInfo(" + v.name + ": " + v.type_str() + ")"; });

  nb::class_<Graph>(m, "Graph",
                    "A graph of op calls over named values, with inputs, constants and outputs. Its JSON form is "
                    "the one opgraph's C++ API reads and writes.")
      .def_static("from_json", &Graph::from_json, nb::arg("json"))
      .def(
          "to_json", [](const Graph& g, std::optional<int> indent) { return g.to_json(indent.value_or(-1)); },
          nb::arg("indent") = nb::none())
      .def_ro("name", &Graph::name)
      .def_ro("inputs", &Graph::inputs)
      .def_ro("outputs", &Graph::outputs)
      .def_ro("constants", &Graph::constants)
      .def_ro("packages", &Graph::packages)
      .def_prop_ro("node_names",
                   [](const Graph& g) {
                     std::vector<std::string> names;
                     for (const Node& node : g.nodes) names.push_back(node.name);
                     return names;
                   })
      .def(
          "verify", [](const Graph& g) { verify(g); },
          "Checks the graph against the registry (load its packages first); raises opgraph.Error naming the node, "
          "op and argument at fault.")
      .def(
          "infer_shapes", [](const Graph& g) { return metas_to_python(infer_shapes(g)); },
          nb::sig("def infer_shapes(self) -> dict[str, ValueInfo]"),
          "The ValueInfo of every value, by name; symbolic dimensions stay symbolic.")
      .def("__eq__", [](const Graph& a, const Graph& b) { return a == b; })
      .def("__repr__", [](const Graph& g) {
        return detail::concat("Graph('", g.name, "', ", g.inputs.size(), " inputs, ", g.nodes.size(), " nodes, ",
                              g.outputs.size(), " outputs)");
      });

  m.def(
      "save_opg",
      [](nb::handle path, nb::handle graph, nb::handle weights) {
        std::vector<InputArray> keep;
        const Graph g = graph_from_python(graph);
        const Weights tensors = weights_from_python(weights, /*copy=*/false, keep);
        const std::string file = path_string(path);
        nb::gil_scoped_release release;
        save_opg(file, g, tensors);
      },
      nb::arg("path"), nb::arg("graph"), nb::arg("weights") = nb::none(),
      nb::sig("def save_opg(path: str | os.PathLike, graph: Graph | str, weights: dict[str, object] | None = None) "
              "-> None"),
      "Writes an .opg file (a safetensors file): the graph (an opgraph.Graph or its JSON) and one array per "
      "constant.");
  m.def(
      "load_opg",
      [](nb::handle path) {
        OpgFile opg = load_opg(path_string(path));
        nb::dict weights;
        for (const auto& [name, tensor] : opg.weights) weights[nb::str(name.c_str())] = to_numpy(tensor);
        return nb::make_tuple(nb::cast(std::move(opg.graph)), weights);
      },
      nb::arg("path"), nb::sig("def load_opg(path: str | os.PathLike) -> tuple[Graph, dict[str, numpy.ndarray]]"),
      "Reads an .opg file: (graph, weights). The weights are NumPy arrays over the mapped file (writing to one "
      "changes this process's copy only).");
}

}  // namespace opgraph::python
