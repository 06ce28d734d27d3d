// The graph IR and .opg files from Python: opgraph.Graph (read, and built
// through graph_building.h), Node, NodeInput, ValueInfo, save_opg and load_opg.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "graph_building.h"
#include "opgraph/graph/quantize.h"

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
  nb::class_<ValueInfo>(m, "ValueInfo", "The name, dtype and shape of a graph value (an input, constant or output).")
      .def(
          "__init__",
          [](ValueInfo* self, std::string name, nb::handle dtype, nb::handle shape) {
            new (self) ValueInfo(value_info_from_python("ValueInfo", std::move(name), dtype, shape));
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"),
          nb::sig("def __init__(self, name: str, dtype: object, shape: Sequence[int | str]) -> None"),
          "dtype: a name ('float32'), NumPy or PyTorch dtype; shape: sizes, and names for symbolic dimensions.")
      .def_ro("name", &ValueInfo::name)
      .def_prop_ro("dtype", [](const ValueInfo& v) { return std::string(dtype_name(v.dtype)); })
      .def_prop_ro(
          "shape", [](const ValueInfo& v) { return shape_to_python(v.shape); },
          "A tuple of sizes, with symbolic dimensions as their names (str).")
      .def(
          "__eq__", [](const ValueInfo& a, const ValueInfo& b) { return a == b; }, nb::is_operator())
      .def("__copy__", [](const ValueInfo& v) { return v; })
      .def(
          "__deepcopy__", [](const ValueInfo& v, nb::handle) { return v; }, nb::arg("memo"))
      // Pickled as what __init__ takes, so that an IR holding its values pickles as before.
      .def("__getstate__",
           [](const ValueInfo& v) { return nb::make_tuple(v.name, dtype_name(v.dtype), shape_to_python(v.shape)); })
      .def("__setstate__",
           [](ValueInfo* self, const nb::tuple& state) {
             new (self)
                 ValueInfo(value_info_from_python("ValueInfo", nb::cast<std::string>(state[0]), state[1], state[2]));
           })
      .def("__repr__", [](const ValueInfo& v) { return "ValueInfo(" + v.name + ": " + v.type_str() + ")"; });

  nb::class_<NodeInput>(m, "NodeInput",
                        "What a node passes for one tensor argument: a value, a list of values (Tensor[]; an empty "
                        "name is a None element of a Tensor?[]) or nothing (an omitted Tensor?).")
      .def_static("value", &NodeInput::value, nb::arg("name"))
      .def_static("list", &NodeInput::list, nb::arg("names"))
      .def_static("none", &NodeInput::none)
      .def_ro("values", &NodeInput::values)
      .def_ro("is_list", &NodeInput::is_list)
      .def_prop_ro("is_none", &NodeInput::is_none)
      .def(
          "__eq__", [](const NodeInput& a, const NodeInput& b) { return a == b; }, nb::is_operator())
      .def("__repr__", [](const NodeInput& input) {
        if (input.is_none()) return std::string("NodeInput.none()");
        if (!input.is_list) return "NodeInput.value('" + input.values[0] + "')";
        std::string names;
        for (const std::string& name : input.values) names += (names.empty() ? "'" : ", '") + name + "'";
        return "NodeInput.list([" + names + "])";
      });

  nb::class_<Node>(m, "Node", "One op call of a graph: its tensor inputs, outputs and attributes.")
      .def_ro("name", &Node::name)
      .def_ro("op_type", &Node::op_type)
      .def_ro("inputs", &Node::inputs, "One NodeInput per tensor argument of the op's schema, in order.")
      .def_ro("outputs", &Node::outputs)
      .def_prop_ro(
          "attrs",
          [](const Node& node) {
            nb::dict attrs;
            for (const NodeAttr& attr : node.attrs) attrs[attr.name.c_str()] = node_attr_to_python(attr);
            return attrs;
          },
          nb::sig("def attrs(self) -> dict[str, object]"),
          "Attributes by name; a size computed from symbolic dimensions is its expression (str).")
      .def_ro("source", &Node::source)
      .def(
          "__eq__", [](const Node& a, const Node& b) { return a == b; }, nb::is_operator())
      .def("__repr__", [](const Node& node) { return "Node('" + node.name + "', " + node.op_type + ")"; });

  nb::class_<StateInfo>(m, "StateInfo", "A value that persists from run to run: see Graph.add_state.")
      .def_ro("value", &StateInfo::value, "Its name, dtype and shape.")
      .def_ro("initial", &StateInfo::initial, "The constant it starts from; '' for zeros.")
      .def_ro("update", &StateInfo::update, "The value it holds after a run; '' for none.")
      .def("__repr__", [](const StateInfo& state) {
        return detail::concat("StateInfo('", state.value.name, "', ", state.value.type_str(), ")");
      });

  nb::class_<Graph>(m, "Graph",
                    "A graph of op calls over named values, with inputs, constants and outputs: built with add_input, "
                    "add_constant, add_node and add_output, or read from JSON (the form opgraph's C++ API and CLI "
                    "read and write).")
      .def(
          "__init__", [](Graph* self, std::string name) { (new (self) Graph())->name = std::move(name); },
          nb::arg("name") = "")
      .def_static("from_json", &Graph::from_json, nb::arg("json"))
      .def(
          "to_json", [](const Graph& g, std::optional<int> indent) { return g.to_json(indent.value_or(-1)); },
          nb::arg("indent") = nb::none())
      .def_rw("name", &Graph::name)
      .def_ro("inputs", &Graph::inputs)
      .def_ro("outputs", &Graph::outputs)
      .def_ro("constants", &Graph::constants)
      .def_ro("nodes", &Graph::nodes)
      .def_rw("packages", &Graph::packages, "The op packages the nodes need (names or paths); Session loads them.")
      .def_prop_ro("node_names",
                   [](const Graph& g) {
                     std::vector<std::string> names;
                     for (const Node& node : g.nodes) names.push_back(node.name);
                     return names;
                   })
      .def(
          "add_input",
          [](Graph& g, std::string name, nb::handle dtype, nb::handle shape) {
            add_graph_input(g, value_info_from_python("Graph.add_input", std::move(name), dtype, shape));
            return g.inputs.back();
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"),
          nb::sig("def add_input(self, name: str, dtype: object, shape: Sequence[int | str]) -> ValueInfo"),
          "Appends an input fed at each run; shape holds sizes and names of symbolic dimensions.")
      .def(
          "add_constant",
          [](Graph& g, std::string name, nb::handle dtype, nb::handle shape) {
            add_graph_constant(g, value_info_from_python("Graph.add_constant", std::move(name), dtype, shape));
            return g.constants.back();
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"),
          nb::sig("def add_constant(self, name: str, dtype: object, shape: Sequence[int]) -> ValueInfo"),
          "Declares a constant (a weight); its data goes beside the graph, to Session or save_opg.")
      .def(
          "add_node",
          [](Graph& g, std::string op, nb::handle inputs, std::optional<std::vector<std::string>> outputs,
             std::optional<std::string> name, std::string source, std::optional<nb::dict> attributes,
             const nb::kwargs& keywords) {
            nb::dict attrs = attributes ? nb::dict(*attributes) : nb::dict();
            for (auto [key, value] : keywords) {
              OPGRAPH_CHECK(!attrs.contains(key), "Graph.add_node: attribute '", nb::cast<std::string>(key),
                            "' is given both by keyword and in attributes");
              attrs[key] = value;
            }
            return add_graph_node(g, {std::move(op), inputs, std::move(outputs), std::move(name), std::move(source)},
                                  attrs);
          },
          nb::arg("op"), nb::arg("inputs"), nb::arg("outputs") = nb::none(), nb::kw_only(),
          nb::arg("name") = nb::none(), nb::arg("source") = "", nb::arg("attributes") = nb::none(), nb::arg("keywords"),
          nb::sig("def add_node(self, op: str, inputs: Sequence[str | None | Sequence[str | None] | NodeInput], "
                  "outputs: Sequence[str] | None = None, *, name: str | None = None, source: str = '', "
                  "attributes: Mapping[str, object] | None = None, **attrs) -> list[str]"),
          "Appends a call of op (qualified name) and returns its output names. inputs: one entry per tensor "
          "argument of the schema (a value name, None for an omitted Tensor?, a list for a Tensor[]); attrs: the "
          "other arguments by name (an int or int[] may hold size expressions of the inputs' symbolic dimensions, "
          "'2*N'), bound to the schema as op calls bind them; op, inputs, outputs, name, source and attributes "
          "are this method's own: `attributes`, a mapping, passes the others too, and any name (pow.Scalar's "
          "self). outputs and name default to names made from the op's, one output per return of the "
          "schema (a Tensor[] return's items need their names given). An op the registry does not know yet is "
          "kept as given, outputs named, for verify() and Session to check once its package is loaded.")
      .def("add_output", &add_graph_output, nb::arg("name"), "Makes the value `name` an output of the graph.")
      .def_ro("states", &Graph::states)
      .def(
          "add_state",
          [](Graph& g, std::string name, nb::handle dtype, nb::handle shape, std::string initial, std::string update) {
            add_graph_state(g, {value_info_from_python("Graph.add_state", std::move(name), dtype, shape),
                                std::move(initial), std::move(update)});
            return g.states.back();
          },
          nb::arg("name"), nb::arg("dtype"), nb::arg("shape"), nb::kw_only(), nb::arg("initial") = "",
          nb::arg("update") = "",
          nb::sig("def add_state(self, name: str, dtype: object, shape: Sequence[int | str], *, initial: str = '', "
                  "update: str = '') -> StateInfo"),
          "Declares a state: a value nodes read by `name` that persists between runs, in the state objects of "
          "Session.new_state(). It starts as constant `initial` (or zeros) and holds value `update` after each "
          "run (or never changes).")
      .def(
          "verify", [](const Graph& g) { verify(g); },
          "Checks the graph against the registry (load its packages first); raises opgraph.Error naming the node, "
          "op and argument at fault.")
      .def(
          "infer_shapes", [](const Graph& g) { return metas_to_python(infer_shapes(g)); },
          nb::sig("def infer_shapes(self) -> dict[str, ValueInfo]"),
          "The ValueInfo of every value, by name; symbolic dimensions stay symbolic.")
      .def("__copy__", [](const Graph& g) { return g; })
      .def(
          "__eq__", [](const Graph& a, const Graph& b) { return a == b; }, nb::is_operator())
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
      "quantize",
      [](nb::handle model, nb::handle output, const std::string& weights, std::optional<int64_t> group_size,
         const std::vector<std::string>& exclude, bool embeddings) {
        QuantizeOptions options{weight_quantization_from_string("weights", weights, group_size), exclude, embeddings};
        const std::string from = path_string(model), to = path_string(output);
        QuantizeReport report;
        {
          nb::gil_scoped_release release;
          OpgFile opg = load_opg(from);
          report = quantize_weights(opg.graph, opg.weights, options);
          save_opg(to, opg.graph, opg.weights);
        }
        nb::list quantized, kept;
        for (const QuantizeReport::Layer& layer : report.quantized) {
          quantized.append(nb::make_tuple(layer.node, layer.weight, layer.inputs, layer.outputs));
        }
        for (const auto& [node, why] : report.kept) kept.append(nb::make_tuple(node, why));
        nb::dict result;
        result["quantized"] = quantized;
        result["kept"] = kept;
        return result;
      },
      nb::arg("model"), nb::arg("output"), nb::kw_only(), nb::arg("weights"), nb::arg("group_size") = nb::none(),
      nb::arg("exclude") = std::vector<std::string>{}, nb::arg("embeddings") = false,
      nb::sig("def quantize(model: str | os.PathLike, output: str | os.PathLike, *, weights: str, "
              "group_size: int | None = None, exclude: Sequence[str] = (), embeddings: bool = False) -> "
              "dict[str, list[tuple]]"),
      "Writes `model` (an .opg file) to `output` with each linear layer's constant float32 weight stored as "
      "'int8' or 'int4' levels and a float32 scale per output and group of `group_size` inputs (default: all of "
      "them for int8, 32 for int4), as opgraph.quantized_linear nodes; 'int8_asym' and 'int4_asym' add an int8 "
      "zero point per scale. Layers whose node or weight name "
      "matches a glob of `exclude` stay as they are; with `embeddings`, each embedding table is quantized too "
      "(opgraph.quantized_embedding). Returns {'quantized': [(node, weight, inputs, outputs)], "
      "'kept': [(node, why)]}. The op packages the graph names must be loaded.");
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
