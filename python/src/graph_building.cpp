#include "graph_building.h"

#include <nanobind/stl/string.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace opgraph::python {
namespace {

bool is_defined(const Graph& graph, std::string_view name) {
  const auto named = [name](const ValueInfo& value) { return value.name == name; };
  if (std::any_of(graph.inputs.begin(), graph.inputs.end(), named)) return true;
  if (std::any_of(graph.constants.begin(), graph.constants.end(), named)) return true;
  if (std::any_of(graph.states.begin(), graph.states.end(), [&](const StateInfo& s) { return named(s.value); })) {
    return true;
  }
  // From the last node back: a node mostly reads values defined just before it.
  return std::any_of(graph.nodes.rbegin(), graph.nodes.rend(), [name](const Node& node) {
    return std::find(node.outputs.begin(), node.outputs.end(), name) != node.outputs.end();
  });
}

bool has_node(const Graph& graph, std::string_view name) {
  return std::any_of(graph.nodes.begin(), graph.nodes.end(), [name](const Node& node) { return node.name == name; });
}

void check_new_value(const Graph& graph, const std::string& name) {
  OPGRAPH_CHECK(!name.empty(), "a value needs a non-empty name");
  OPGRAPH_CHECK(!is_defined(graph, name), "a value named '", name, "' is already defined");
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::string describe(nb::handle value) {
  return detail::concat(nb::type_name(value.type()).c_str(), " ", nb::repr(value).c_str());
}

// Runs `body`, prefixing an opgraph::Error with `where`; an error that
// starts with the op's name (as Attrs::bind's do) loses it, `where` names it.
template <typename Body>
auto with_context(const std::string& where, Body body, const std::string& op = "") {
  try {
    return body();
  } catch (const Error& e) {
    std::string_view message = e.what();
    if (!op.empty() && message.starts_with(op + ": ")) message.remove_prefix(op.size() + 2);
    throw Error(detail::concat(where, ": ", message));
  }
}

Dim dim_from_python(nb::handle dim, size_t index) {
  if (nb::isinstance<nb::str>(dim)) {
    std::string symbol = nb::cast<std::string>(dim);
    OPGRAPH_CHECK(!symbol.empty(), "shape[", index, "]: a symbolic dimension needs a name");
    return Dim(std::move(symbol));
  }
  const bool is_size = !PyBool_Check(dim.ptr()) && PyIndex_Check(dim.ptr());
  const int64_t size = is_size ? nb::cast<int64_t>(nb::int_(dim)) : -1;
  OPGRAPH_CHECK(size >= 0, "shape[", index, "]: expected a size >= 0 or a symbol name, got ", describe(dim));
  return Dim(size);
}

// --- node inputs ---------------------------------------------------------

std::string value_name(nb::handle item, const std::string& where) {
  OPGRAPH_CHECK(nb::isinstance<nb::str>(item), where, ": expected a value name (str), got ", describe(item));
  return nb::cast<std::string>(item);
}

NodeInput node_input_from_python(nb::handle entry, const std::string& where) {
  if (nb::isinstance<NodeInput>(entry)) return nb::cast<NodeInput>(entry);
  if (entry.is_none()) return NodeInput::none();
  if (PyList_Check(entry.ptr()) || PyTuple_Check(entry.ptr())) {
    std::vector<std::string> names;
    for (size_t k = 0; nb::handle item : nb::borrow<nb::sequence>(entry)) {
      // An empty name stands for a None element of a Tensor?[], as in NodeInput.
      names.push_back(item.is_none() ? std::string() : value_name(item, detail::concat(where, "[", k, "]")));
      ++k;
    }
    return NodeInput::list(std::move(names));
  }
  OPGRAPH_CHECK(nb::isinstance<nb::str>(entry), where,
                ": expected a value name (str), None or a list of value names, got ", describe(entry));
  return NodeInput::value(nb::cast<std::string>(entry));
}

// Checks what `input` gives for the tensor argument `argument` (when the op
// is known) and that every value it names is defined.
void check_node_input(const Graph& graph, const NodeInput& input, const Argument* argument, const std::string& where) {
  if (argument != nullptr) {
    const Type& type = argument->type;
    const char* expected = type.is_list ? "a list of value names" : "a value name";
    // Worded as an op call's missing input is, so that a bad call reads alike from every front end.
    OPGRAPH_CHECK(!input.is_none() || type.optional, where, " is required but was not given (", type.str(),
                  ": expected ", expected, ", got None)");
    OPGRAPH_CHECK(input.is_none() || input.is_list == type.is_list, where, " (", type.str(), "): expected ", expected,
                  ", got ", input.is_list ? "a list" : "'" + input.values[0] + "'");
  }
  for (const std::string& name : input.values) {
    if (name.empty()) {
      OPGRAPH_CHECK(argument == nullptr || argument->type.optional_elements, where, " (",
                    argument ? argument->type.str() : "", "): a None element where a value name is expected");
      continue;
    }
    OPGRAPH_CHECK(is_defined(graph, name), where, ": no value named '", name, "' is defined before this node");
  }
}

std::vector<NodeInput> node_inputs(const Graph& graph, const OpDef* op, nb::handle inputs) {
  OPGRAPH_CHECK(PyList_Check(inputs.ptr()) || PyTuple_Check(inputs.ptr()),
                "inputs: expected a list with one entry per tensor argument, got ", describe(inputs));
  const auto entries = nb::borrow<nb::sequence>(inputs);
  std::vector<const Argument*> arguments;
  if (op != nullptr) {
    std::vector<std::string> names;
    for (const Argument& argument : op->schema.arguments) {
      if (!argument.type.is_tensor()) continue;
      arguments.push_back(&argument);
      names.push_back(argument.name);
    }
    OPGRAPH_CHECK(nb::len(entries) == arguments.size(), "inputs: expected ", arguments.size(),
                  " entries, one per tensor argument (", joined(names), "), got ", nb::len(entries));
  }
  std::vector<NodeInput> result;
  for (size_t k = 0; nb::handle entry : entries) {
    const Argument* argument = op ? arguments[k] : nullptr;
    const std::string where = argument ? "input '" + argument->name + "'" : detail::concat("inputs[", k, "]");
    result.push_back(node_input_from_python(entry, where));
    check_node_input(graph, result.back(), argument, where);
    ++k;
  }
  return result;
}

// --- attributes ----------------------------------------------------------

// Checks that `expression` is one the runtime can evaluate: integers, + - *
// / % and parentheses over symbols of the graph's inputs (the only sizes a
// run binds). The runtime parses it again; this names the mistake early.
void check_size_expression(const Graph& graph, const std::string& expression, const char* name) {
  OPGRAPH_CHECK(!expression.empty(), "attribute '", name, "': an empty size expression");
  std::vector<std::string> symbols;
  for (const ValueInfo& input : graph.inputs) {
    for (const Dim& dim : input.shape) {
      if (dim.is_symbolic()) symbols.push_back(dim.symbol);
    }
  }
  const auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = 0; at < expression.size();) {
    const char c = expression[at];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t end = at;
      while (end < expression.size() && is_word(expression[end])) ++end;
      const std::string symbol = expression.substr(at, end - at);
      OPGRAPH_CHECK(std::find(symbols.begin(), symbols.end(), symbol) != symbols.end(), "attribute '", name,
                    "': the size expression '", expression, "' names '", symbol,
                    "', which is no symbolic dimension of the graph's inputs (",
                    symbols.empty() ? "they have none" : joined(symbols), ")");
      at = end;
      continue;
    }
    OPGRAPH_CHECK(std::isdigit(static_cast<unsigned char>(c)) || std::isspace(static_cast<unsigned char>(c)) ||
                      std::string_view("+-*/%()").find(c) != std::string_view::npos,
                  "attribute '", name, "': '", expression,
                  "' is not a size expression (integers and symbols with + - * // % and parentheses)");
    ++at;
  }
}

// An int, int[] or Scalar given as size expressions of the graph's symbols
// ("s0", or [s0, -1] with "s0" a str): 0 stands in for each expression,
// which goes to `expressions` ("" for a fixed item). nullopt when `value`
// holds no expression.
std::optional<AttrValue> symbolic_size(const Graph& graph, nb::handle value, const char* name,
                                       std::vector<std::string>& expressions) {
  const auto expression = [&](nb::handle item) {
    expressions.push_back(nb::cast<std::string>(item));
    check_size_expression(graph, expressions.back(), name);
  };
  if (nb::isinstance<nb::str>(value)) {
    expression(value);
    return AttrValue(int64_t{0});
  }
  if (!PyList_Check(value.ptr()) && !PyTuple_Check(value.ptr())) return std::nullopt;
  const auto items = nb::borrow<nb::sequence>(value);
  if (std::none_of(items.begin(), items.end(), [](nb::handle item) { return nb::isinstance<nb::str>(item); })) {
    return std::nullopt;
  }
  std::vector<int64_t> sizes;
  for (nb::handle item : items) {
    if (nb::isinstance<nb::str>(item)) {
      expression(item);
      sizes.push_back(0);
      continue;
    }
    const AttrValue size = attr_from_python(item, name);
    OPGRAPH_CHECK(std::holds_alternative<int64_t>(size), "attribute '", name,
                  "': expected sizes (ints or size expressions), got ", describe(item));
    expressions.emplace_back();
    sizes.push_back(std::get<int64_t>(size));
  }
  return sizes;
}

const char* key_of(nb::handle key) {
  const char* utf8 = PyUnicode_AsUTF8(key.ptr());
  if (!utf8) throw nb::python_error();
  return utf8;
}

// The attributes of a call of a registered op: bound to its schema (types
// checked, defaults filled in), in schema order.
std::vector<NodeAttr> bound_attrs(const Graph& graph, const Schema& schema, const std::vector<NodeInput>& inputs,
                                  const nb::dict& given) {
  std::vector<size_t> list_sizes;
  for (const NodeInput& input : inputs) {
    if (input.is_list) list_sizes.push_back(input.values.size());
  }
  NamedAttrs named;
  std::map<std::string, std::vector<std::string>, std::less<>> expressions;
  for (auto [key, value] : given) {
    const char* name = key_of(key);
    auto argument = std::find_if(schema.arguments.begin(), schema.arguments.end(),
                                 [&](const Argument& a) { return a.name == name && !a.type.is_tensor(); });
    const bool is_size = argument != schema.arguments.end() &&
                         (argument->type.kind == Type::Kind::Int || argument->type.kind == Type::Kind::Scalar);
    std::vector<std::string> sizes;
    std::optional<AttrValue> symbolic = is_size ? symbolic_size(graph, value, name, sizes) : std::nullopt;
    named.emplace_back(name, symbolic ? std::move(*symbolic) : attr_from_python(value, name));
    if (!sizes.empty()) expressions.emplace(name, std::move(sizes));
  }
  const Attrs attrs = Attrs::bind(schema, named, list_sizes);
  std::vector<NodeAttr> result;
  size_t index = 0;
  for (const Argument& argument : schema.arguments) {
    if (argument.type.is_tensor()) continue;
    NodeAttr attr;
    attr.name = argument.name;
    attr.value = attrs[index++];
    attr.bool_list = argument.type.kind == Type::Kind::Bool && argument.type.is_list;
    if (auto it = expressions.find(argument.name); it != expressions.end()) attr.expressions = std::move(it->second);
    result.push_back(std::move(attr));
  }
  return result;
}

// The attributes of an op the registry does not know yet, as given.
std::vector<NodeAttr> given_attrs(const nb::dict& given) {
  std::vector<NodeAttr> result;
  for (auto [key, value] : given) {
    const char* name = key_of(key);
    result.emplace_back().name = name;
    result.back().value = attr_from_python(value, name);
  }
  return result;
}

// --- outputs -------------------------------------------------------------

std::vector<std::string> output_names(const Graph& graph, const OpDef* op, const std::string& node,
                                      const std::optional<std::vector<std::string>>& given) {
  OPGRAPH_CHECK(given || op, "the registry does not know this op (load its package first), so give the outputs' names");
  std::vector<std::string> names;
  if (given) {
    names = *given;
    OPGRAPH_CHECK(!op || op->returns_list() || names.size() == op->num_outputs(), "outputs: the op returns ",
                  op ? op->num_outputs() : 0, " tensors, got ", names.size(), " names");
  } else if (op->num_outputs() == 1) {
    names = {node};
  } else {
    for (size_t k = 0; k < op->num_outputs(); ++k) names.push_back(detail::concat(node, "_out", k));
  }
  for (size_t k = 0; k < names.size(); ++k) {
    with_context(detail::concat("outputs[", k, "]"), [&] { check_new_value(graph, names[k]); });
    OPGRAPH_CHECK(std::count(names.begin(), names.end(), names[k]) == 1, "outputs: '", names[k],
                  "' is named more than once");
  }
  return names;
}

// "aten::add.Tensor" -> "add": what a node is named after when no name is given.
std::string op_base_name(const std::string& op) {
  const size_t start = op.find("::") + 2;
  return op.substr(start, op.find('.', start) - start);
}

std::string fresh_node_name(const Graph& graph, const std::string& base) {
  for (size_t k = graph.nodes.size();; ++k) {
    std::string name = detail::concat(base, "_", k);
    if (!has_node(graph, name) && !is_defined(graph, name)) return name;
  }
}

}  // namespace

ValueInfo value_info_from_python(const std::string& where, std::string name, nb::handle dtype, nb::handle shape) {
  return with_context(where + " '" + name + "'", [&] {
    ValueInfo info{std::move(name), dtype_from_python(dtype, "dtype"), {}};
    OPGRAPH_CHECK(PyList_Check(shape.ptr()) || PyTuple_Check(shape.ptr()),
                  "shape: expected a list of sizes and symbol names, got ", describe(shape));
    for (size_t k = 0; nb::handle dim : nb::borrow<nb::sequence>(shape))
      info.shape.push_back(dim_from_python(dim, k++));
    return info;
  });
}

void add_graph_input(Graph& graph, ValueInfo info) {
  with_context("Graph.add_input", [&] { check_new_value(graph, info.name); });
  graph.inputs.push_back(std::move(info));
}

void add_graph_constant(Graph& graph, ValueInfo info) {
  with_context("Graph.add_constant", [&] {
    check_new_value(graph, info.name);
    OPGRAPH_CHECK(std::none_of(info.shape.begin(), info.shape.end(), [](const Dim& d) { return d.is_symbolic(); }),
                  "constant '", info.name, "': a constant's shape is static, got ", symbolic_shape_str(info.shape));
  });
  graph.constants.push_back(std::move(info));
}

void add_graph_state(Graph& graph, StateInfo state) {
  with_context("Graph.add_state", [&] { check_new_value(graph, state.value.name); });
  graph.states.push_back(std::move(state));
}

void add_graph_output(Graph& graph, const std::string& name) {
  OPGRAPH_CHECK(is_defined(graph, name), "Graph.add_output: no value named '", name, "' is defined in graph '",
                graph.name, "'");
  graph.outputs.push_back(name);
}

std::vector<std::string> add_graph_node(Graph& graph, const NodeSpec& spec, const nb::dict& attrs) {
  OPGRAPH_CHECK(spec.op.find("::") != std::string::npos, "Graph.add_node: op '", spec.op,
                "' is not a qualified name (namespace::name[.overload])");
  const OpDef* op = Registry::global().find(spec.op);
  Node node;
  node.op_type = spec.op;
  node.name = spec.name ? *spec.name : fresh_node_name(graph, op_base_name(spec.op));
  node.source = spec.source;
  with_context(
      "Graph.add_node: node '" + node.name + "' (" + spec.op + ")",
      [&] {
        OPGRAPH_CHECK(!node.name.empty(), "a node needs a non-empty name");
        OPGRAPH_CHECK(!has_node(graph, node.name), "a node of that name is already in the graph");
        node.inputs = node_inputs(graph, op, spec.inputs);
        node.attrs = op ? bound_attrs(graph, op->schema, node.inputs, attrs) : given_attrs(attrs);
        node.outputs = output_names(graph, op, node.name, spec.outputs);
      },
      spec.op);
  graph.nodes.push_back(std::move(node));
  return graph.nodes.back().outputs;
}

nb::object node_attr_to_python(const NodeAttr& attr) {
  if (const auto* sizes = std::get_if<std::vector<int64_t>>(&attr.value);
      sizes && (attr.bool_list || attr.is_symbolic())) {
    nb::list items;
    for (size_t k = 0; k < sizes->size(); ++k) {
      if (attr.bool_list) {
        items.append(nb::bool_((*sizes)[k] != 0));
      } else if (attr.expressions[k].empty()) {
        items.append((*sizes)[k]);
      } else {
        items.append(nb::str(attr.expressions[k].c_str()));
      }
    }
    return items;
  }
  if (attr.is_symbolic()) return nb::str(attr.expressions[0].c_str());
  return attr_to_python(attr.value);
}

}  // namespace opgraph::python
