#include "opgraph/registry/attrs.h"

#include <algorithm>

namespace opgraph {
namespace {

std::string given_str(const AttrValue& value) {
  static constexpr const char* kinds[] = {"None", "bool", "int", "float", "str", "int[]", "float[]", "ScalarType"};
  std::string text = kinds[value.index()];
  if (!std::holds_alternative<std::monostate>(value)) text += " " + attr_str(value);
  return text;
}

// Converts `value` to the representation of `type`, or returns false.
bool coerce(const Type& type, AttrValue& value) {
  using K = Type::Kind;
  if (std::holds_alternative<std::monostate>(value)) return type.optional;
  if (type.is_list) {
    if (const auto* scalar = std::get_if<int64_t>(&value);
        scalar && type.list_size && (type.kind == K::Int || type.kind == K::Float)) {
      value = std::vector<int64_t>(static_cast<size_t>(*type.list_size), *scalar);
    }
    if (type.kind == K::Float) {
      if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
        value = std::vector<double>(ints->begin(), ints->end());
      }
      if (const auto* scalar = std::get_if<double>(&value); scalar && type.list_size) {
        value = std::vector<double>(static_cast<size_t>(*type.list_size), *scalar);
      }
    }
    // As in ATen, a list's size in the schema (int[2]) only says how far a
    // single value broadcasts; the op itself checks the lengths it accepts.
    if (std::holds_alternative<std::vector<int64_t>>(value)) return type.kind == K::Int || type.kind == K::Bool;
    return std::holds_alternative<std::vector<double>>(value) && type.kind == K::Float;
  }
  switch (type.kind) {
    case K::Int: return std::holds_alternative<int64_t>(value);
    case K::Bool: return std::holds_alternative<bool>(value);
    case K::Float:
      if (const auto* i = std::get_if<int64_t>(&value)) value = static_cast<double>(*i);
      return std::holds_alternative<double>(value);
    case K::Scalar: return std::holds_alternative<int64_t>(value) || std::holds_alternative<double>(value);
    case K::ScalarType:
      if (const auto* name = std::get_if<std::string>(&value)) {
        auto dtype = dtype_from_name(*name);
        if (!dtype) return false;
        value = *dtype;
      }
      return std::holds_alternative<DType>(value);
    case K::Str:
    case K::Device:
    case K::Layout:
    case K::MemoryFormat: return std::holds_alternative<std::string>(value);
    default: return false;
  }
}

}  // namespace

Attrs Attrs::bind(const Schema& schema, const NamedAttrs& given, std::span<const size_t> list_sizes) {
  Attrs attrs;
  attrs.schema_ = &schema;
  auto op = [&schema] { return schema.qualified_name(); };  // only errors need it
  const auto num_lists = static_cast<size_t>(std::count_if(
      schema.arguments.begin(), schema.arguments.end(), [](const Argument& arg) { return arg.type.is_tensor_list(); }));
  if (list_sizes.size() != num_lists) {
    std::string lists;
    for (const Argument& arg : schema.arguments) {
      if (arg.type.is_tensor_list()) lists += (lists.empty() ? "" : ", ") + arg.name;
    }
    throw Error(detail::concat(op(), ": expected the length of each Tensor[] argument (",
                               lists.empty() ? "it has none" : lists, "), got ", list_sizes.size(), " lengths"));
  }
  attrs.list_sizes_.assign(list_sizes.begin(), list_sizes.end());
  size_t used = 0;
  for (const Argument& arg : schema.arguments) {
    if (arg.type.is_tensor()) continue;
    auto it = std::find_if(given.begin(), given.end(), [&](const auto& kv) { return kv.first == arg.name; });
    if (it == given.end()) {
      OPGRAPH_CHECK(arg.default_value.has_value(), op(), ": missing required attribute '", arg.name, "' (",
                    arg.type.str(), ")");
      attrs.values_.push_back(*arg.default_value);
      continue;
    }
    ++used;
    AttrValue value = it->second;
    OPGRAPH_CHECK(coerce(arg.type, value), op(), ": attribute '", arg.name, "' expects ", arg.type.str(), ", got ",
                  given_str(it->second));
    attrs.values_.push_back(std::move(value));
  }
  if (used != given.size()) {
    for (const auto& entry : given) {
      const std::string_view name = entry.first;  // clang with OpenMP cannot capture a binding
      auto same = [&](const auto& kv) { return kv.first == name; };
      OPGRAPH_CHECK(std::count_if(given.begin(), given.end(), same) == 1, op(), ": attribute '", name,
                    "' is given more than once");
      bool known = std::any_of(schema.arguments.begin(), schema.arguments.end(),
                               [&](const Argument& arg) { return arg.name == name && !arg.type.is_tensor(); });
      if (known) continue;
      std::string names;
      for (const Argument& arg : schema.arguments) {
        if (!arg.type.is_tensor()) names += (names.empty() ? "" : ", ") + arg.name;
      }
      throw Error(detail::concat(op(), ": unexpected attribute '", name,
                                 "'; its attributes are: ", names.empty() ? "(none)" : names));
    }
  }
  return attrs;
}

const std::string& Attrs::name(size_t i) const {
  OPGRAPH_CHECK(schema_ != nullptr, "attribute ", i, " requested from unbound attributes");
  size_t index = 0;
  for (const Argument& arg : schema_->arguments) {
    if (arg.type.is_tensor()) continue;
    if (index++ == i) return arg.name;
  }
  throw Error(detail::concat(schema_->qualified_name(), ": attribute index ", i, " is out of range (it has ",
                             values_.size(), ")"));
}

const AttrValue& Attrs::get(std::string_view name) const {
  OPGRAPH_CHECK(schema_ != nullptr, "attribute '", name, "' requested from unbound attributes");
  size_t index = 0;
  for (const Argument& arg : schema_->arguments) {
    if (arg.type.is_tensor()) continue;
    if (arg.name == name) return values_[index];
    ++index;
  }
  throw Error(detail::concat(schema_->qualified_name(), ": no attribute named '", name, "'"));
}

double scalar_attr(const Attrs& attrs, std::string_view name) {
  const AttrValue& value = attrs.get(name);
  const auto* integer = std::get_if<int64_t>(&value);
  return integer ? static_cast<double>(*integer) : attrs.get<double>(name);
}

}  // namespace opgraph
