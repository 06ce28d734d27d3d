// A recursive-descent parser for PyTorch's operator schema language.
#include "opgraph/registry/schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

struct BaseTypeName {
  std::string_view name;
  Type::Kind kind;
};
constexpr BaseTypeName kBaseTypes[] = {
    {"Tensor", Type::Kind::Tensor},
    {"int", Type::Kind::Int},
    {"SymInt", Type::Kind::Int},
    {"float", Type::Kind::Float},
    {"bool", Type::Kind::Bool},
    {"str", Type::Kind::Str},
    {"Scalar", Type::Kind::Scalar},
    {"ScalarType", Type::Kind::ScalarType},
    {"Device", Type::Kind::Device},
    {"Layout", Type::Kind::Layout},
    {"MemoryFormat", Type::Kind::MemoryFormat},
    {"Generator", Type::Kind::Generator},
    {"SymBool", Type::Kind::Bool},
};

std::string_view kind_name(Type::Kind kind) {
  for (const auto& base : kBaseTypes) {
    if (base.kind == kind) return base.name;
  }
  return "?";
}

// SymInt and SymBool: an int or bool that may be a symbolic size or condition.
std::string_view symbolic_name(Type::Kind kind, bool symbolic) {
  if (!symbolic) return kind_name(kind);
  return kind == Type::Kind::Bool ? "SymBool" : "SymInt";
}

// ATen writes a ScalarType default as its c10::ScalarType number
// (randperm's dtype=4, long); these are the numbers of opgraph's dtypes.
constexpr std::pair<int64_t, DType> kAtenNumbers[] = {
    {0, DType::UInt8},     {1, DType::Int8},      {3, DType::Int32},       {4, DType::Int64},
    {5, DType::Float16},   {6, DType::Float32},   {7, DType::Float64},     {11, DType::Bool},
    {15, DType::BFloat16}, {9, DType::Complex64}, {10, DType::Complex128},
};

std::optional<DType> dtype_from_aten_number(int64_t number) {
  for (const auto& [n, dtype] : kAtenNumbers) {
    if (n == number) return dtype;
  }
  return std::nullopt;
}

int64_t aten_number(DType dtype) {
  for (const auto& [n, d] : kAtenNumbers) {
    if (d == dtype) return n;
  }
  throw Error(detail::concat("dtype ", dtype_name(dtype), " has no ATen ScalarType number"));
}

// The largest N in a fixed-size list type such as int[N]; ATen's go up to 6.
constexpr int64_t kMaxListSize = 1024;

// An untyped default value as written, before it is checked against the type.
struct Literal {
  enum class Kind { None, Bool, Int, Float, String, Ident, List } kind;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string text;
  std::vector<Literal> items;
  size_t pos = 0;
};

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Schema parse() {
    Schema schema;
    skip_space();
    std::string first = ident("an operator name");
    if (consume("::")) {
      schema.ns = std::move(first);
      schema.name = ident("an operator name after '::'");
    } else {
      schema.name = std::move(first);
    }
    if (consume(".")) schema.overload = ident("an overload name after '.'");
    expect("(", "'(' to open the argument list");
    parse_arguments(schema);
    expect("->", "'->' before the return types");
    parse_returns(schema);
    skip_space();
    if (pos_ != text_.size()) fail("end of schema");
    return schema;
  }

 private:
  void parse_arguments(Schema& schema) {
    bool kwarg_only = false;
    skip_space();
    if (consume(")")) return;
    for (;;) {
      skip_space();
      if (consume("*")) {
        if (kwarg_only) fail_at(pos_ - 1, "one '*' at most");
        kwarg_only = true;
      } else {
        Argument arg = parse_argument(/*is_return=*/false);
        arg.kwarg_only = kwarg_only;
        for (const auto& other : schema.arguments) {
          if (other.name == arg.name) fail_at(name_pos_, "argument names to be unique; '" + arg.name + "' repeats");
        }
        schema.arguments.push_back(std::move(arg));
      }
      skip_space();
      if (consume(")")) return;
      expect(",", "',' or ')' after an argument");
    }
  }

  void parse_returns(Schema& schema) {
    skip_space();
    if (!consume("(")) {
      schema.returns.push_back(parse_argument(/*is_return=*/true));
      return;
    }
    skip_space();
    if (consume(")")) return;
    for (;;) {
      schema.returns.push_back(parse_argument(/*is_return=*/true));
      skip_space();
      if (consume(")")) return;
      expect(",", "',' or ')' after a return type");
    }
  }

  Argument parse_argument(bool is_return) {
    Argument arg;
    arg.type = parse_type(arg.alias);
    skip_space();
    name_pos_ = pos_;
    if (is_return) {
      if (pos_ < text_.size() && is_ident_start(text_[pos_])) arg.name = ident("a return name");
      return arg;
    }
    arg.name = ident("an argument name");
    skip_space();
    if (consume("=")) {
      skip_space();
      Literal literal = parse_literal();
      arg.default_value = typed_default(literal, arg.type);
    }
    return arg;
  }

  Type parse_type(std::string& alias) {
    skip_space();
    size_t start = pos_;
    std::string base = ident("an argument type");
    Type type;
    bool known = false;
    for (const auto& candidate : kBaseTypes) {
      if (candidate.name == base) {
        type.kind = candidate.kind;
        known = true;
      }
    }
    type.symbolic = base == "SymInt" || base == "SymBool";
    if (!known)
      fail_at(start,
              "a type (Tensor, int, SymInt, float, bool, SymBool, str, Scalar, ScalarType, Device, "
              "Layout, MemoryFormat, Generator)");
    parse_alias(alias);
    const bool optional_base = consume("?");  // Tensor?[] or int?
    if (consume("[")) {
      type.is_list = true;
      type.optional_elements = optional_base;
      skip_space();
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const size_t size_pos = pos_;
        type.list_size = parse_int_token();
        // A one-value default stands for list_size copies (int[2] stride=1):
        // a size no schema needs must not take all memory.
        if (*type.list_size > kMaxListSize) {
          fail_at(size_pos, "a list size of at most " + std::to_string(kMaxListSize));
        }
      }
      expect("]", "']' to close the list type");
      parse_alias(alias);
    } else {
      type.optional = optional_base;
    }
    if (consume("?")) type.optional = true;
    return type;
  }

  // (a), (a!), (a -> *), (a! -> a|b)
  void parse_alias(std::string& alias) {
    if (!consume("(")) return;
    skip_space();
    alias = ident("an alias set name");
    if (consume("!")) alias += "!";
    skip_space();
    // A "-> *" refinement is kept as written, so the schema prints back as ATen's.
    const size_t refinement = pos_;
    while (pos_ < text_.size() && text_[pos_] != ')') ++pos_;
    std::string_view rest = text_.substr(refinement, pos_ - refinement);
    while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
    if (!rest.empty()) alias += " " + std::string(rest);
    expect(")", "')' to close the alias annotation");
  }

  Literal parse_literal() {
    Literal lit;
    lit.pos = pos_;
    if (pos_ >= text_.size()) fail("a default value");
    char c = text_[pos_];
    if (c == '[') {
      ++pos_;
      lit.kind = Literal::Kind::List;
      skip_space();
      if (consume("]")) return lit;
      for (;;) {
        skip_space();
        lit.items.push_back(parse_literal());
        skip_space();
        if (consume("]")) return lit;
        expect(",", "',' or ']' in a list default");
      }
    }
    if (c == '"' || c == '\'') {
      ++pos_;
      lit.kind = Literal::Kind::String;
      while (pos_ < text_.size() && text_[pos_] != c) {
        if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
        lit.text += text_[pos_++];
      }
      expect(std::string(1, c), "a closing quote");
      return lit;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      return parse_number();
    }
    if (is_ident_start(c)) {
      std::string word = ident("a default value");
      if (word == "None") {
        lit.kind = Literal::Kind::None;
      } else if (word == "True" || word == "False") {
        lit.kind = Literal::Kind::Bool;
        lit.b = word == "True";
      } else if (word == "inf" || word == "nan") {
        lit.kind = Literal::Kind::Float;
        lit.f = word == "inf" ? std::numeric_limits<double>::infinity() : std::nan("");
      } else {
        lit.kind = Literal::Kind::Ident;
        lit.text = std::move(word);
      }
      return lit;
    }
    fail("a default value (None, True, False, a number, a string, a list or a name)");
  }

  Literal parse_number() {
    Literal lit;
    lit.pos = pos_;
    const char* begin = text_.data() + pos_;
    const char* limit = text_.data() + text_.size();
    std::string token;
    for (const char* p = begin;
         p < limit && (std::isalnum(static_cast<unsigned char>(*p)) || *p == '.' || *p == '-' || *p == '+'); ++p) {
      token += *p;
    }
    if (token == "-inf") {
      pos_ += token.size();
      lit.kind = Literal::Kind::Float;
      lit.f = -std::numeric_limits<double>::infinity();
      return lit;
    }
    char* end = nullptr;
    bool is_float = token.find_first_of(".eE") != std::string::npos;
    errno = 0;
    if (is_float) {
      lit.kind = Literal::Kind::Float;
      lit.f = std::strtod(token.c_str(), &end);
    } else {
      lit.kind = Literal::Kind::Int;
      lit.i = std::strtoll(token.c_str(), &end, 10);
    }
    size_t used = static_cast<size_t>(end - token.c_str());
    if (used == 0 || errno == ERANGE) fail("a number");
    pos_ += used;
    return lit;
  }

  int64_t parse_int_token() {
    Literal lit = parse_number();
    if (lit.kind != Literal::Kind::Int) fail_at(lit.pos, "an integer");
    return lit.i;
  }

  // Checks a literal against the argument's type and converts it.
  AttrValue typed_default(const Literal& lit, const Type& type) {
    using K = Type::Kind;
    if (lit.kind == Literal::Kind::None) {
      if (!type.optional) fail_at(lit.pos, "a default that is not None for non-optional type " + type.str());
      return std::monostate{};
    }
    if (type.kind == K::Tensor) fail_at(lit.pos, "None as the only default of a Tensor argument");
    if (type.is_list) {
      std::vector<Literal> items;
      if (lit.kind == Literal::Kind::List) {
        items = lit.items;
      } else {  // int[2] stride=1 means [1, 1]
        if (!type.list_size) fail_at(lit.pos, "a list default for type " + type.str());
        items.assign(static_cast<size_t>(*type.list_size), lit);
      }
      if (type.list_size && !items.empty() && static_cast<int64_t>(items.size()) != *type.list_size) {
        fail_at(lit.pos, "a list of " + std::to_string(*type.list_size) + " values for type " + type.str());
      }
      if (type.kind == K::Float) {
        std::vector<double> values;
        for (const auto& item : items) values.push_back(as_float(item));
        return values;
      }
      if (type.kind == K::Int || type.kind == K::Bool) {
        std::vector<int64_t> values;
        for (const auto& item : items) {
          values.push_back(type.kind == K::Int ? as_int(item) : static_cast<int64_t>(as_bool(item)));
        }
        return values;
      }
      fail_at(lit.pos, "no default for list type " + type.str());
    }
    switch (type.kind) {
      case K::Int: return as_int(lit);
      case K::Float: return as_float(lit);
      case K::Bool: return as_bool(lit);
      case K::Str:
        if (lit.kind != Literal::Kind::String) fail_at(lit.pos, "a quoted string default for type str");
        return lit.text;
      case K::Scalar:
        if (lit.kind == Literal::Kind::Int) return lit.i;
        return as_float(lit);
      case K::ScalarType: {
        auto dtype = lit.kind == Literal::Kind::Ident ? dtype_from_name(lit.text)
                     : lit.kind == Literal::Kind::Int ? dtype_from_aten_number(lit.i)
                                                      : std::nullopt;
        if (!dtype) fail_at(lit.pos, "a dtype name (float, long, ...) or ATen number (4) as default for ScalarType");
        return *dtype;
      }
      case K::Device:
      case K::Layout:
      case K::MemoryFormat:
        if (lit.kind != Literal::Kind::Ident && lit.kind != Literal::Kind::String) {
          fail_at(lit.pos, "a name as default for type " + type.str());
        }
        return lit.text;
      default: fail_at(lit.pos, "no default for type " + type.str());
    }
  }

  int64_t as_int(const Literal& lit) {
    if (lit.kind != Literal::Kind::Int) fail_at(lit.pos, "an integer default");
    return lit.i;
  }
  double as_float(const Literal& lit) {
    if (lit.kind == Literal::Kind::Int) return static_cast<double>(lit.i);
    if (lit.kind != Literal::Kind::Float) fail_at(lit.pos, "a number default");
    return lit.f;
  }
  bool as_bool(const Literal& lit) {
    if (lit.kind != Literal::Kind::Bool) fail_at(lit.pos, "True or False");
    return lit.b;
  }

  std::string ident(const char* what) {
    skip_space();
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) fail(what);
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool consume(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }

  void expect(std::string_view token, const char* what) {
    if (!consume(token)) fail(what);
  }

  [[noreturn]] void fail(const std::string& expected) { fail_at(pos_, expected); }

  [[noreturn]] void fail_at(size_t pos, const std::string& expected) {
    std::string found = pos < text_.size() ? "'" + std::string(1, text_[pos]) + "'" : "end of input";
    throw Error(detail::concat("invalid schema: expected ", expected, ", found ", found, " at column ", pos + 1, "\n  ",
                               text_, "\n  ", std::string(pos, ' '), "^"));
  }

  std::string_view text_;
  size_t pos_ = 0;
  size_t name_pos_ = 0;
};

// Whether a Device, Layout or MemoryFormat default prints bare (cpu,
// contiguous_format) and parses back as the same name: an identifier other
// than the words a default's parser reads as values. Others print quoted.
bool is_bare_name(const std::string& s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return s != "None" && s != "True" && s != "False" && s != "inf" && s != "nan";
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

template <typename T>
std::string list_str(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    if constexpr (std::is_same_v<T, double>) {
      out += attr_str(AttrValue(values[i]));
    } else {
      out += std::to_string(values[i]);
    }
  }
  return out + "]";
}

}  // namespace

std::string attr_str(const AttrValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "None";
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
          if (std::isnan(v)) return "nan";
          char buffer[32];
          std::snprintf(buffer, sizeof buffer, "%.17g", v);
          std::string text = buffer;
          if (text.find_first_of(".e") == std::string::npos) text += ".0";
          return text;
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quoted(v);
        } else if constexpr (std::is_same_v<T, DType>) {
          return std::string(dtype_name(v));
        } else {
          return list_str(v);
        }
      },
      value);
}

std::string Type::str() const {
  std::string text(symbolic_name(kind, symbolic));
  if (optional_elements) text += "?";
  if (is_list) text += list_size ? "[" + std::to_string(*list_size) + "]" : "[]";
  if (optional) text += "?";
  return text;
}

std::string Argument::str() const {
  std::string text(symbolic_name(type.kind, type.symbolic));
  if (!alias.empty()) text += "(" + alias + ")";
  if (type.optional_elements) text += "?";
  if (type.is_list) text += type.list_size ? "[" + std::to_string(*type.list_size) + "]" : "[]";
  if (type.optional) text += "?";
  if (!name.empty()) text += " " + name;
  if (default_value) {
    // Device/Layout/MemoryFormat defaults are names, not strings.
    bool bare =
        type.kind == Type::Kind::Device || type.kind == Type::Kind::Layout || type.kind == Type::Kind::MemoryFormat;
    const auto* s = std::get_if<std::string>(&*default_value);
    const auto* ints = std::get_if<std::vector<int64_t>>(&*default_value);
    if (bare && s && is_bare_name(*s)) {
      text += "=" + *s;
    } else if (const auto* dtype = std::get_if<DType>(&*default_value)) {  // as ATen prints them
      text += "=" + std::to_string(aten_number(*dtype));
    } else if (ints && type.list_size && *type.list_size > 1 && static_cast<int64_t>(ints->size()) == *type.list_size &&
               std::all_of(ints->begin(), ints->end(), [&](int64_t v) { return v == ints->front(); }) &&
               type.kind == Type::Kind::Int && !type.symbolic) {
      // As ATen prints an int[N] whose items are equal: int[2] padding=0 (a SymInt[2] keeps [0, 0]).
      text += "=" + std::to_string(ints->front());
    } else if (type.kind == Type::Kind::Bool && ints) {  // bool[] defaults are held as 0/1
      std::string items;
      for (int64_t v : *ints) items += (items.empty() ? "" : ", ") + std::string(v ? "True" : "False");
      text += "=[" + items + "]";
    } else {
      text += "=" + attr_str(*default_value);
    }
  }
  return text;
}

Schema Schema::parse(std::string_view text) { return Parser(text).parse(); }

std::string Schema::qualified_name() const {
  std::string text = ns.empty() ? name : ns + "::" + name;
  if (!overload.empty()) text += "." + overload;
  return text;
}

std::string Schema::str() const {
  std::string text = qualified_name() + "(";
  bool star = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i) text += ", ";
    if (arguments[i].kwarg_only && !star) {
      text += "*, ";
      star = true;
    }
    text += arguments[i].str();
  }
  text += ") -> ";
  if (returns.size() == 1 && returns[0].name.empty()) return text + returns[0].str();
  text += "(";
  for (size_t i = 0; i < returns.size(); ++i) text += (i ? ", " : "") + returns[i].str();
  return text + ")";
}

}  // namespace opgraph
