// The graph's JSON form (see opgraph/graph/graph.h). Reading checks every
// field and names the one that is wrong: "graph JSON: nodes[2] ('relu_0').inputs: ...".
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/json_summary.h"
#include "opgraph/graph/graph.h"

namespace opgraph {
namespace {

// Keeps the order of attributes (and every other object) as written.
using Json = nlohmann::ordered_json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(detail::concat("graph JSON: ", where, ": ", what));
}

std::string describe(const Json& value) { return detail::concat(value.type_name(), " ", json_summary(value)); }

const Json& member(const Json& object, const char* key, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end()) fail(where, detail::concat("missing field '", key, "'"));
  return *it;
}

const Json& object_of(const Json& value, const std::string& where) {
  if (!value.is_object()) fail(where, "expected an object, got " + describe(value));
  return value;
}

const Json& array_of(const Json& value, const std::string& where) {
  if (!value.is_array()) fail(where, "expected an array, got " + describe(value));
  return value;
}

// An optional array field of the document: empty when absent.
const Json& optional_array(const Json& root, const char* key) {
  static const Json empty = Json::array();
  auto it = root.find(key);
  return it == root.end() ? empty : array_of(*it, key);
}

std::string string_of(const Json& value, const std::string& where) {
  if (!value.is_string()) fail(where, "expected a string, got " + describe(value));
  return value.get<std::string>();
}

int64_t int_of(const Json& value, const std::string& where) {
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (value.is_number_unsigned() && value.get<uint64_t>() > kMax) {
    fail(where, "integer " + json_summary(value) + " does not fit in int64");
  }
  if (!value.is_number_integer()) fail(where, "expected an integer, got " + describe(value));
  return value.get<int64_t>();
}

// Numbers, and "inf", "-inf", "nan", which JSON has no numbers for.
double float_of(const Json& value, const std::string& where) {
  if (value.is_number()) return value.get<double>();
  if (value == "inf") return std::numeric_limits<double>::infinity();
  if (value == "-inf") return -std::numeric_limits<double>::infinity();
  if (value == "nan") return std::numeric_limits<double>::quiet_NaN();
  fail(where, "expected a number (or \"inf\", \"-inf\", \"nan\"), got " + describe(value));
}

Json float_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

bool bool_of(const Json& value, const std::string& where) {
  if (!value.is_boolean()) fail(where, "expected true or false, got " + describe(value));
  return value.get<bool>();
}

template <typename T, typename Read>
std::vector<T> list_of(const Json& value, const std::string& where, Read read) {
  std::vector<T> items;
  for (size_t i = 0; const Json& item : array_of(value, where)) {
    items.push_back(read(item, detail::concat(where, "[", i++, "]")));
  }
  return items;
}

DType dtype_of(const Json& value, const std::string& where) {
  const std::string name = string_of(value, where);
  std::optional<DType> dtype = dtype_from_name(name);
  if (!dtype) fail(where, "unknown dtype '" + name + "'");
  return *dtype;
}

Dim dim_of(const Json& value, const std::string& where) {
  if (value.is_string()) {
    std::string symbol = value.get<std::string>();
    if (symbol.empty()) fail(where, "a symbolic dimension needs a name");
    return Dim(std::move(symbol));
  }
  const int64_t size = int_of(value, where);
  if (size < 0) fail(where, detail::concat("dimension ", size, " is negative"));
  return Dim(size);
}

ValueInfo value_info_of(const Json& value, const std::string& where) {
  object_of(value, where);
  ValueInfo info;
  info.name = string_of(member(value, "name", where), where + ".name");
  const std::string here = where + " ('" + info.name + "')";
  info.dtype = dtype_of(member(value, "dtype", here), here + ".dtype");
  info.shape = list_of<Dim>(member(value, "shape", here), here + ".shape", dim_of);
  return info;
}

Json value_info_json(const ValueInfo& info) {
  Json shape = Json::array();
  for (const Dim& dim : info.shape) shape.push_back(dim.is_symbolic() ? Json(dim.symbol) : Json(dim.size));
  return {{"name", info.name}, {"dtype", std::string(dtype_name(info.dtype))}, {"shape", shape}};
}

StateInfo state_info_of(const Json& value, const std::string& where) {
  StateInfo state{.value = value_info_of(value, where)};
  const std::string here = where + " ('" + state.value.name + "')";
  if (auto initial = value.find("initial"); initial != value.end()) {
    state.initial = string_of(*initial, here + ".initial");
  }
  if (auto update = value.find("update"); update != value.end()) state.update = string_of(*update, here + ".update");
  return state;
}

Json state_info_json(const StateInfo& state) {
  Json json = value_info_json(state.value);
  if (!state.initial.empty()) json["initial"] = state.initial;
  if (!state.update.empty()) json["update"] = state.update;
  return json;
}

NodeInput node_input_of(const Json& value, const std::string& where) {
  if (value.is_null()) return NodeInput::none();
  if (value.is_array()) {
    // null stands for a None element of a Tensor?[] (the empty name in NodeInput).
    const auto element = [](const Json& item, const std::string& at) {
      return item.is_null() ? std::string() : string_of(item, at);
    };
    return NodeInput::list(list_of<std::string>(value, where, element));
  }
  if (!value.is_string()) fail(where, "expected a value name, null or a list of value names, got " + describe(value));
  return NodeInput::value(value.get<std::string>());
}

Json node_input_json(const NodeInput& input) {
  if (input.is_list) {
    Json list = Json::array();
    for (const std::string& value : input.values) list.push_back(value.empty() ? Json(nullptr) : Json(value));
    return list;
  }
  if (input.is_none()) return nullptr;
  return input.values[0];
}

constexpr const char* kAttrTypes = "int, float, bool, str, ints, floats, bools, dtype, symint, symints, none";

// One item of a symint(s) attribute: an integer, or an expression of the
// graph's symbols (kept in `expressions`, with 0 standing in the value).
int64_t symint_of(const Json& item, const std::string& where, std::vector<std::string>& expressions) {
  if (item.is_string()) {
    expressions.push_back(item.get<std::string>());
    if (expressions.back().empty()) fail(where, "an empty size expression");
    return 0;
  }
  expressions.emplace_back();
  return int_of(item, where);
}

NodeAttr attr_of(const std::string& name, const Json& value, const std::string& where) {
  object_of(value, where);
  const std::string type = string_of(member(value, "type", where), where + ".type");
  NodeAttr attr{name, std::monostate{}, false};
  if (type == "none") {
    if (value.contains("value") && !value["value"].is_null()) fail(where, "an attribute of type none has no value");
    return attr;
  }
  const Json& v = member(value, "value", where);
  const std::string at = where + ".value";
  if (type == "int") {
    attr.value = int_of(v, at);
  } else if (type == "float") {
    attr.value = float_of(v, at);
  } else if (type == "bool") {
    attr.value = bool_of(v, at);
  } else if (type == "str") {
    attr.value = string_of(v, at);
  } else if (type == "ints") {
    attr.value = list_of<int64_t>(v, at, int_of);
  } else if (type == "floats") {
    attr.value = list_of<double>(v, at, float_of);
  } else if (type == "bools") {
    attr.value =
        list_of<int64_t>(v, at, [](const Json& item, const std::string& w) -> int64_t { return bool_of(item, w); });
    attr.bool_list = true;
  } else if (type == "dtype") {
    attr.value = dtype_of(v, at);
  } else if (type == "symint") {
    attr.value = symint_of(v, at, attr.expressions);
  } else if (type == "symints") {
    attr.value = list_of<int64_t>(
        v, at, [&](const Json& item, const std::string& w) { return symint_of(item, w, attr.expressions); });
  } else {
    fail(where + ".type", "unknown attribute type '" + type + "' (expected one of " + kAttrTypes + ")");
  }
  if (std::all_of(attr.expressions.begin(), attr.expressions.end(), [](const std::string& e) { return e.empty(); })) {
    attr.expressions.clear();  // sizes that turned out fixed
  }
  return attr;
}

// A symint(s) attribute: each item its expression, or its integer where it has none.
Json symbolic_attr_json(const NodeAttr& attr) {
  const auto item = [&](size_t k, int64_t size) -> Json {
    return attr.expressions[k].empty() ? Json(size) : Json(attr.expressions[k]);
  };
  if (const auto* size = std::get_if<int64_t>(&attr.value)) return {{"type", "symint"}, {"value", item(0, *size)}};
  const auto& sizes = std::get<std::vector<int64_t>>(attr.value);
  Json items = Json::array();
  for (size_t k = 0; k < sizes.size(); ++k) items.push_back(item(k, sizes[k]));
  return {{"type", "symints"}, {"value", items}};
}

Json attr_json(const NodeAttr& attr) {
  if (attr.is_symbolic()) return symbolic_attr_json(attr);
  return std::visit(
      [&attr](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return {{"type", "none"}};
        } else if constexpr (std::is_same_v<T, bool>) {
          return {{"type", "bool"}, {"value", v}};
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return {{"type", "int"}, {"value", v}};
        } else if constexpr (std::is_same_v<T, double>) {
          return {{"type", "float"}, {"value", float_json(v)}};
        } else if constexpr (std::is_same_v<T, std::string>) {
          return {{"type", "str"}, {"value", v}};
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          if (!attr.bool_list) return {{"type", "ints"}, {"value", v}};
          Json bools = Json::array();
          for (int64_t b : v) bools.push_back(b != 0);
          return {{"type", "bools"}, {"value", bools}};
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          Json floats = Json::array();
          for (double f : v) floats.push_back(float_json(f));
          return {{"type", "floats"}, {"value", floats}};
        } else {
          static_assert(std::is_same_v<T, DType>);
          return {{"type", "dtype"}, {"value", std::string(dtype_name(v))}};
        }
      },
      attr.value);
}

Node node_of(const Json& value, const std::string& where) {
  object_of(value, where);
  Node node;
  node.name = string_of(member(value, "name", where), where + ".name");
  const std::string here = where + " ('" + node.name + "')";
  node.op_type = string_of(member(value, "op_type", here), here + ".op_type");
  node.inputs = list_of<NodeInput>(member(value, "inputs", here), here + ".inputs", node_input_of);
  node.outputs = list_of<std::string>(member(value, "outputs", here), here + ".outputs", string_of);
  if (auto attrs = value.find("attrs"); attrs != value.end()) {
    for (const auto& [name, attr] : object_of(*attrs, here + ".attrs").items()) {
      node.attrs.push_back(attr_of(name, attr, here + ".attrs." + name));
    }
  }
  if (auto source = value.find("source"); source != value.end()) node.source = string_of(*source, here + ".source");
  return node;
}

Json node_json(const Node& node) {
  Json inputs = Json::array(), attrs = Json::object();
  for (const NodeInput& input : node.inputs) inputs.push_back(node_input_json(input));
  for (const NodeAttr& attr : node.attrs) attrs[attr.name] = attr_json(attr);
  Json json = {
      {"name", node.name}, {"op_type", node.op_type}, {"inputs", inputs}, {"outputs", node.outputs}, {"attrs", attrs}};
  if (!node.source.empty()) json["source"] = node.source;
  return json;
}

}  // namespace

Graph Graph::from_json(std::string_view text) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(detail::concat("graph JSON: not valid JSON: ", e.what()));
  }
  object_of(root, "the document");
  Graph graph;
  if (auto name = root.find("name"); name != root.end()) graph.name = string_of(*name, "name");
  graph.inputs = list_of<ValueInfo>(member(root, "inputs", "the graph"), "inputs", value_info_of);
  graph.outputs = list_of<std::string>(
      member(root, "outputs", "the graph"), "outputs", [](const Json& output, const std::string& where) {
        return string_of(member(object_of(output, where), "name", where), where + ".name");
      });
  graph.constants = list_of<ValueInfo>(optional_array(root, "constants"), "constants", value_info_of);
  graph.nodes = list_of<Node>(member(root, "nodes", "the graph"), "nodes", node_of);
  graph.packages = list_of<std::string>(optional_array(root, "packages"), "packages", string_of);
  graph.states = list_of<StateInfo>(optional_array(root, "states"), "states", state_info_of);
  return graph;
}

std::string Graph::to_json(int indent) const {
  Json inputs_json = Json::array(), outputs_json = Json::array(), constants_json = Json::array(),
       nodes_json = Json::array();
  for (const ValueInfo& input : inputs) inputs_json.push_back(value_info_json(input));
  for (const std::string& output : outputs) outputs_json.push_back({{"name", output}});
  for (const ValueInfo& constant : constants) constants_json.push_back(value_info_json(constant));
  for (const Node& node : nodes) nodes_json.push_back(node_json(node));
  Json root = {{"name", name},        {"inputs", inputs_json}, {"outputs", outputs_json}, {"constants", constants_json},
               {"nodes", nodes_json}, {"packages", packages}};
  // Only a graph with state says so, so that graphs without keep the form
  // that readers older than states take.
  if (!states.empty()) {
    Json states_json = Json::array();
    for (const StateInfo& state : states) states_json.push_back(state_info_json(state));
    root["states"] = states_json;
  }
  try {
    return root.dump(indent);
  } catch (const Json::exception& e) {  // a name that is not valid UTF-8
    throw Error(detail::concat("graph '", name, "': cannot write JSON: ", e.what()));
  }
}

}  // namespace opgraph
