// Operator schemas in PyTorch's syntax, e.g.
//   ns::name.overload(Tensor x, Tensor? bias=None, *, int[] dims=[0,1],
//                     ScalarType? dtype=None) -> (Tensor, Tensor)
// so the string that declares an opgraph op declares it in torch.library too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "opgraph/core/dtype.h"

namespace opgraph {

// The value of a non-tensor argument (an "attribute"). monostate is None.
// Device, Layout and MemoryFormat values are carried as their names.
using AttrValue =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, DType>;

std::string attr_str(const AttrValue& value);  // as a schema default: None, 3, [0, 1], "same"

struct Type {
  enum class Kind : uint8_t {
    Tensor,
    Int,  // int and SymInt
    Float,
    Bool,
    Str,
    Scalar,      // int or float
    ScalarType,  // a dtype
    Device,
    Layout,
    MemoryFormat,
    Generator,
  };
  Kind kind = Kind::Tensor;
  bool is_list = false;
  std::optional<int64_t> list_size;  // int[2]
  bool optional = false;             // Tensor?, int[]?
  bool optional_elements = false;    // Tensor?[]: a list whose elements may be None
  bool symbolic = false;             // spelled SymInt or SymBool: may be a symbolic size or condition

  // A tensor input (Tensor, Tensor? or Tensor[]) rather than an attribute.
  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_tensor_list() const { return kind == Kind::Tensor && is_list; }
  // Whether the tensor (or, for a list, one element of it) may be None.
  bool may_be_none() const { return is_list ? optional_elements : optional; }
  bool operator==(const Type&) const = default;
  std::string str() const;  // "int[2]?"
};

struct Argument {
  std::string name;  // may be empty for returns
  Type type;
  std::optional<AttrValue> default_value;
  bool kwarg_only = false;
  std::string alias;  // "a" in Tensor(a), "a!" in Tensor(a!), "a -> *" in Tensor(a -> *)
  // The alias set (before any "-> *" refinement) is written to: "a!".
  bool is_mutable() const {
    const std::string_view set = std::string_view(alias).substr(0, alias.find(' '));
    return !set.empty() && set.back() == '!';
  }
  bool operator==(const Argument&) const = default;
  std::string str() const;
};

struct Schema {
  std::string ns;        // "aten"; empty when the string had no namespace
  std::string name;      // "add"
  std::string overload;  // "Tensor"; may be empty
  std::vector<Argument> arguments;
  std::vector<Argument> returns;

  // Throws opgraph::Error whose message quotes the schema and puts a caret
  // under the character where parsing failed.
  static Schema parse(std::string_view text);

  std::string qualified_name() const;  // "ns::name" (".overload" when given)
  std::string str() const;             // round-trips through parse()
  bool operator==(const Schema&) const = default;
};

}  // namespace opgraph
