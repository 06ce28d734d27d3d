// The one check of a typed kernel's or shape function's parameters against
// its op's schema, made when the op is defined (see typed.h).
#include "typed.h"

#include <algorithm>

namespace opgraph::kernels {
namespace {

using Role = ParamInfo::Role;

// How a typed function takes an argument of `type`, for messages.
std::string spelling_for(const Type& type, bool shape) {
  using K = Type::Kind;
  if (type.is_tensor()) {
    if (type.is_list) return shape ? "std::span<const TensorMeta* const>" : "std::span<const Tensor>";
    if (type.optional) return shape ? "const TensorMeta*" : "const Tensor*";
    return shape ? "const TensorMeta&" : "const Tensor&";
  }
  std::string value;
  switch (type.kind) {
    case K::Int: value = type.is_list ? "std::span<const int64_t>" : "int64_t"; break;
    case K::Bool: value = type.is_list ? "std::span<const int64_t>" : "bool"; break;
    case K::Float: value = type.is_list ? "std::span<const double>" : "double"; break;
    case K::Scalar: value = "double"; break;
    case K::ScalarType: value = "DType"; break;
    case K::Str:
    case K::Device:
    case K::Layout:
    case K::MemoryFormat: value = "std::string_view"; break;
    default: return "(no typed parameter: define the op with a raw function)";
  }
  return type.optional ? "std::optional<" + value + ">" : value;
}

bool fits(const ParamInfo& param, const Type& type) {
  switch (param.role) {
    case Role::Tensor: return type.is_tensor() && !type.is_list && !type.optional;
    case Role::OptionalTensor: return type.is_tensor() && !type.is_list && type.optional;
    case Role::TensorList: return type.is_tensor_list();
    case Role::Attribute: return !type.is_tensor() && param.takes(type);
    case Role::Context: return false;
  }
  return false;
}

}  // namespace

size_t check_params(const Schema& schema, std::string_view role, std::string_view source,
                    std::span<const ParamInfo> params) {
  const bool kernel = !params.empty() && params[0].role == Role::Context;
  const size_t first = kernel ? 1 : 0;
  auto fail = [&](auto&&... what) {
    throw Error(detail::concat(schema.qualified_name(), " (", source, "): the ", role, " ", what...));
  };
  const size_t num_arguments = schema.arguments.size();
  for (size_t i = 0; i < num_arguments; ++i) {
    const Argument& argument = schema.arguments[i];
    const size_t position = first + i;
    const std::string expected = spelling_for(argument.type, !kernel);
    if (position >= params.size()) {
      fail("takes ", params.size(), " parameters, too few for schema argument ", i + 1, " '", argument.name, "' (",
           argument.type.str(), ", taken as ", expected, ")");
    }
    const ParamInfo& param = params[position];
    if (!fits(param, argument.type)) {
      fail("takes ", param.spelling, " as parameter ", position + 1, " where schema argument ", i + 1, " '",
           argument.name, "' is ", argument.type.str(), ", taken as ", expected);
    }
  }
  const std::span<const ParamInfo> outputs = params.subspan(std::min(params.size(), first + num_arguments));
  if (!kernel) {
    if (!outputs.empty()) {
      fail("takes ", params.size(), " parameters where the schema has ", num_arguments, " arguments (parameter ",
           num_arguments + 1, " is ", outputs[0].spelling, ")");
    }
    return num_arguments;
  }
  const bool returns_list = schema.returns.size() == 1 && schema.returns[0].type.is_tensor_list();
  const bool all_at_once = outputs.size() == 1 && outputs[0].role == Role::TensorList;
  const bool one_each =
      !returns_list && outputs.size() == schema.returns.size() &&
      std::all_of(outputs.begin(), outputs.end(), [](const ParamInfo& p) { return p.role == Role::Tensor; });
  if (!all_at_once && !one_each) {
    fail("takes ", outputs.size(), " parameters after the schema's ", num_arguments,
         " arguments; its outputs are taken as ",
         returns_list ? std::string("one std::span<const Tensor>")
                      : detail::concat(schema.returns.size(),
                                       " const Tensor& (one per returned Tensor) or one "
                                       "std::span<const Tensor>"));
  }
  return num_arguments;
}

std::optional<size_t> attribute_index(const Schema& schema, std::string_view name) {
  size_t index = 0;
  for (const Argument& argument : schema.arguments) {
    if (argument.type.is_tensor()) continue;
    if (argument.name == name) return index;
    ++index;
  }
  return std::nullopt;
}

}  // namespace opgraph::kernels
