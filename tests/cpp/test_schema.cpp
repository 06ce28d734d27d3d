// Parsing and printing operator schemas in PyTorch's syntax.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/registry/schema.h"

namespace opgraph {
namespace {

using K = Type::Kind;
using Ints = std::vector<int64_t>;

Type type(K kind) {
  Type t;
  t.kind = kind;
  return t;
}
Type list(K kind, std::optional<int64_t> size = std::nullopt) {
  Type t = type(kind);
  t.is_list = true;
  t.list_size = size;
  return t;
}
Type optional(Type t) {
  t.optional = true;
  return t;
}
Type symbolic(Type t) {
  t.symbolic = true;
  return t;
}

struct ExpectedArg {
  ExpectedArg(std::string name, Type type, bool kwarg_only = false,
              std::optional<AttrValue> default_value = std::nullopt)
      : name(std::move(name)), type(type), kwarg_only(kwarg_only), default_value(std::move(default_value)) {}

  std::string name;
  Type type;
  bool kwarg_only;
  std::optional<AttrValue> default_value;
};

void expect_arguments(const std::vector<Argument>& actual, const std::vector<ExpectedArg>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    SCOPED_TRACE("argument " + std::to_string(i) + " '" + expected[i].name + "'");
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].type, expected[i].type) << actual[i].type.str() << " vs " << expected[i].type.str();
    EXPECT_EQ(actual[i].kwarg_only, expected[i].kwarg_only);
    EXPECT_EQ(actual[i].default_value, expected[i].default_value);
  }
}

const Type kTensor = type(K::Tensor);

TEST(SchemaTest, ParsesEveryField) {
  Schema s = Schema::parse(
      "ns::name.overload(Tensor x, Tensor? bias=None, *, int stride=1, int[] dims=[0,1], float alpha=1.0, "
      "bool flag=False, str mode=\"same\", ScalarType? dtype=None) -> (Tensor, Tensor)");
  EXPECT_EQ(s.ns, "ns");
  EXPECT_EQ(s.name, "name");
  EXPECT_EQ(s.overload, "overload");
  expect_arguments(s.arguments, {
                                    {"x", kTensor},
                                    {"bias", optional(type(K::Tensor)), false, AttrValue{}},
                                    {"stride", type(K::Int), true, AttrValue{int64_t{1}}},
                                    {"dims", list(K::Int), true, AttrValue{Ints{0, 1}}},
                                    {"alpha", type(K::Float), true, AttrValue{1.0}},
                                    {"flag", type(K::Bool), true, AttrValue{false}},
                                    {"mode", type(K::Str), true, AttrValue{std::string("same")}},
                                    {"dtype", optional(type(K::ScalarType)), true, AttrValue{}},
                                });
  expect_arguments(s.returns, {{"", kTensor}, {"", kTensor}});
  EXPECT_TRUE(s.arguments[0].type.is_tensor());
  EXPECT_TRUE(s.arguments[1].type.optional);
  EXPECT_FALSE(s.arguments[1].type.is_list);
  EXPECT_TRUE(s.arguments[3].type.is_list);
  EXPECT_FALSE(s.arguments[3].type.list_size.has_value());
  EXPECT_TRUE(std::holds_alternative<std::monostate>(*s.arguments[7].default_value));
}

TEST(SchemaTest, PlainReturn) {
  Schema s = Schema::parse("ns::relu(Tensor x) -> Tensor");
  expect_arguments(s.returns, {{"", kTensor}});
  EXPECT_EQ(s.str(), "ns::relu(Tensor x) -> Tensor");
}

TEST(SchemaTest, NamedReturns) {
  Schema s = Schema::parse("ns::topk(Tensor self, int k) -> (Tensor values, Tensor indices)");
  expect_arguments(s.returns, {{"values", kTensor}, {"indices", kTensor}});
  EXPECT_EQ(s.str(), "ns::topk(Tensor self, int k) -> (Tensor values, Tensor indices)");
}

TEST(SchemaTest, EmptyReturnsAndArguments) {
  Schema s = Schema::parse("ns::noop() -> ()");
  EXPECT_TRUE(s.arguments.empty());
  EXPECT_TRUE(s.returns.empty());
  EXPECT_EQ(s.str(), "ns::noop() -> ()");
}

TEST(SchemaTest, ListsOfOptionalTensors) {
  Schema s = Schema::parse("aten::index.Tensor(Tensor self, Tensor?[] indices, int[]? sizes=None) -> Tensor");
  const Type& indices = s.arguments[1].type;
  EXPECT_TRUE(indices.is_tensor_list());
  EXPECT_TRUE(indices.optional_elements);
  EXPECT_FALSE(indices.optional);  // the list itself must be given
  EXPECT_TRUE(indices.may_be_none());
  EXPECT_FALSE(s.arguments[2].type.optional_elements);  // int[]?: an optional list of ints
  EXPECT_TRUE(s.arguments[2].type.optional);
  EXPECT_EQ(indices.str(), "Tensor?[]");
  EXPECT_EQ(s.str(), "aten::index.Tensor(Tensor self, Tensor?[] indices, int[]? sizes=None) -> Tensor");
}

TEST(SchemaTest, TensorListReturn) {
  Schema s = Schema::parse("aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_TRUE(s.returns[0].type.is_tensor_list());
  EXPECT_EQ(s.returns[0].alias, "a");
  EXPECT_EQ(s.str(), "aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]");
}

TEST(SchemaTest, MutableAlias) {
  Schema s = Schema::parse("ns::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
  EXPECT_EQ(s.arguments[0].alias, "a!");
  EXPECT_TRUE(s.arguments[0].is_mutable());
  EXPECT_EQ(s.arguments[1].alias, "");
  EXPECT_FALSE(s.arguments[1].is_mutable());
  EXPECT_EQ(s.returns[0].alias, "a!");
  EXPECT_EQ(s.str(), "ns::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)");
}

TEST(SchemaTest, MutableOutArgument) {
  Schema s = Schema::parse("ns::add.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)");
  EXPECT_EQ(s.arguments[2].name, "out");
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_TRUE(s.arguments[2].is_mutable());
}

TEST(SchemaTest, ViewAlias) {
  Schema s = Schema::parse("ns::view(Tensor(a) self, SymInt[] size) -> Tensor(a)");
  EXPECT_EQ(s.arguments[0].alias, "a");
  EXPECT_FALSE(s.arguments[0].is_mutable());
  EXPECT_EQ(s.returns[0].alias, "a");
}

TEST(SchemaTest, AliasWithRefinement) {
  Schema s = Schema::parse("ns::unbind(Tensor(a -> *) self, int dim=0) -> Tensor");
  EXPECT_EQ(s.arguments[0].alias, "a -> *");  // kept, so the schema prints back as written
  EXPECT_FALSE(s.arguments[0].is_mutable());
  EXPECT_TRUE(Schema::parse("ns::f(Tensor(a! -> *) self) -> Tensor").arguments[0].is_mutable());
  EXPECT_EQ(s.str(), "ns::unbind(Tensor(a -> *) self, int dim=0) -> Tensor");
  EXPECT_EQ(s.arguments[0].name, "self");
  EXPECT_EQ(s.arguments[1].default_value, AttrValue{int64_t{0}});
}

TEST(SchemaTest, FixedSizeListBroadcastsScalarDefault) {
  Schema s = Schema::parse("ns::pool(Tensor x, int[2] stride=1, float[3] scale=0.5) -> Tensor");
  expect_arguments(s.arguments, {
                                    {"x", kTensor},
                                    {"stride", list(K::Int, 2), false, AttrValue{Ints{1, 1}}},
                                    {"scale", list(K::Float, 3), false, AttrValue{std::vector<double>{0.5, 0.5, 0.5}}},
                                });
}

TEST(SchemaTest, SymIntIsAnIntThatKeepsItsSpelling) {
  Schema s = Schema::parse("ns::reshape(Tensor x, SymInt[] shape, SymInt n) -> Tensor");
  expect_arguments(s.arguments, {{"x", kTensor}, {"shape", symbolic(list(K::Int))}, {"n", symbolic(type(K::Int))}});
  EXPECT_EQ(s.str(), "ns::reshape(Tensor x, SymInt[] shape, SymInt n) -> Tensor");
}

TEST(SchemaTest, NumericDefaults) {
  Schema s = Schema::parse(
      "ns::f(Tensor x, int dim=-1, int[] dims=[-1, -2], float eps=1e-05, float lo=-inf, float hi=inf, "
      "float big=2.5E3, Scalar alpha=1, Scalar beta=0.5) -> Tensor");
  expect_arguments(s.arguments, {
                                    {"x", kTensor},
                                    {"dim", type(K::Int), false, AttrValue{int64_t{-1}}},
                                    {"dims", list(K::Int), false, AttrValue{Ints{-1, -2}}},
                                    {"eps", type(K::Float), false, AttrValue{1e-05}},
                                    {"lo", type(K::Float), false, AttrValue{-std::numeric_limits<double>::infinity()}},
                                    {"hi", type(K::Float), false, AttrValue{std::numeric_limits<double>::infinity()}},
                                    {"big", type(K::Float), false, AttrValue{2500.0}},
                                    {"alpha", type(K::Scalar), false, AttrValue{int64_t{1}}},
                                    {"beta", type(K::Scalar), false, AttrValue{0.5}},
                                });
}

TEST(SchemaTest, IntDefaultForFloatIsFloat) {
  Schema s = Schema::parse("ns::f(Tensor x, float alpha=1, float[] w=[1, 2.5]) -> Tensor");
  EXPECT_EQ(s.arguments[1].default_value, AttrValue{1.0});
  EXPECT_EQ(s.arguments[2].default_value, AttrValue{(std::vector<double>{1.0, 2.5})});
}

TEST(SchemaTest, StringDefaults) {
  Schema s = Schema::parse(R"(ns::f(Tensor x, str a='none', str b="it's", str c="say \"hi\"", str d='') -> Tensor)");
  EXPECT_EQ(s.arguments[1].default_value, AttrValue{std::string("none")});
  EXPECT_EQ(s.arguments[2].default_value, AttrValue{std::string("it's")});
  EXPECT_EQ(s.arguments[3].default_value, AttrValue{std::string("say \"hi\"")});
  EXPECT_EQ(s.arguments[4].default_value, AttrValue{std::string()});
  EXPECT_EQ(Schema::parse(s.str()), s);
}

TEST(SchemaTest, ScalarTypeDefault) {
  Schema s = Schema::parse("ns::f(Tensor x, ScalarType dtype=float, ScalarType? out_dtype=Long) -> Tensor");
  EXPECT_EQ(s.arguments[1].default_value, AttrValue{DType::Float32});
  EXPECT_EQ(s.arguments[2].default_value, AttrValue{DType::Int64});
  // ATen prints ScalarType defaults as c10::ScalarType numbers, and so does opgraph.
  Schema aten = Schema::parse("aten::randperm(SymInt n, *, ScalarType? dtype=4) -> Tensor");
  EXPECT_EQ(aten.arguments[1].default_value, AttrValue{DType::Int64});
  EXPECT_EQ(aten.str(), "aten::randperm(SymInt n, *, ScalarType? dtype=4) -> Tensor");
  EXPECT_EQ(s.arguments[1].str(), "ScalarType dtype=6");
}

TEST(SchemaTest, LayoutDeviceMemoryFormat) {
  Schema s = Schema::parse(
      "ns::empty(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "MemoryFormat? memory_format=None, MemoryFormat fmt=contiguous_format, Generator? generator=None) -> Tensor");
  expect_arguments(s.arguments, {
                                    {"size", symbolic(list(K::Int))},
                                    {"dtype", optional(type(K::ScalarType)), true, AttrValue{}},
                                    {"layout", optional(type(K::Layout)), true, AttrValue{}},
                                    {"device", optional(type(K::Device)), true, AttrValue{}},
                                    {"memory_format", optional(type(K::MemoryFormat)), true, AttrValue{}},
                                    {"fmt", type(K::MemoryFormat), true, AttrValue{std::string("contiguous_format")}},
                                    {"generator", optional(type(K::Generator)), true, AttrValue{}},
                                });
  EXPECT_NE(s.str().find("MemoryFormat fmt=contiguous_format"), std::string::npos) << s.str();
}

TEST(SchemaTest, NoNamespace) {
  Schema s = Schema::parse("relu(Tensor x) -> Tensor");
  EXPECT_EQ(s.ns, "");
  EXPECT_EQ(s.name, "relu");
  EXPECT_EQ(s.qualified_name(), "relu");
  EXPECT_EQ(s.str(), "relu(Tensor x) -> Tensor");
}

TEST(SchemaTest, QualifiedName) {
  EXPECT_EQ(Schema::parse("aten::add.Tensor(Tensor self, Tensor other) -> Tensor").qualified_name(),
            "aten::add.Tensor");
  EXPECT_EQ(Schema::parse("aten::relu(Tensor self) -> Tensor").qualified_name(), "aten::relu");
  EXPECT_EQ(Schema::parse("relu.out(Tensor self) -> Tensor").qualified_name(), "relu.out");
}

TEST(SchemaTest, WhitespaceIsInsignificant) {
  EXPECT_EQ(Schema::parse("  ns::f( Tensor  x ,int[ 2 ] k = [ 1 , 2 ] )->( Tensor )  "),
            Schema::parse("ns::f(Tensor x, int[2] k=[1, 2]) -> (Tensor)"));
}

TEST(SchemaTest, FloatDefaultPrintsAsFloat) {
  EXPECT_EQ(Schema::parse("ns::f(Tensor x, float a=1) -> Tensor").str(), "ns::f(Tensor x, float a=1.0) -> Tensor");
  EXPECT_EQ(attr_str(AttrValue{0.5}), "0.5");
  EXPECT_EQ(attr_str(AttrValue{Ints{0, 1}}), "[0, 1]");
  EXPECT_EQ(attr_str(AttrValue{std::string("same")}), "\"same\"");
  EXPECT_EQ(attr_str(AttrValue{}), "None");
}

// ---------------------------------------------------------------------------
// Real ATen schemas

TEST(SchemaTest, AtenConv2d) {
  Schema s = Schema::parse(
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
      "SymInt[2] dilation=1, SymInt groups=1) -> Tensor");
  const Type int2 = symbolic(list(K::Int, 2));
  expect_arguments(s.arguments, {
                                    {"input", kTensor},
                                    {"weight", kTensor},
                                    {"bias", optional(type(K::Tensor)), false, AttrValue{}},
                                    {"stride", int2, false, AttrValue{Ints{1, 1}}},
                                    {"padding", int2, false, AttrValue{Ints{0, 0}}},
                                    {"dilation", int2, false, AttrValue{Ints{1, 1}}},
                                    {"groups", symbolic(type(K::Int)), false, AttrValue{int64_t{1}}},
                                });
}

TEST(SchemaTest, AtenAddTensor) {
  Schema s = Schema::parse("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.overload, "Tensor");
  expect_arguments(s.arguments,
                   {{"self", kTensor}, {"other", kTensor}, {"alpha", type(K::Scalar), true, AttrValue{int64_t{1}}}});
  EXPECT_EQ(s.str(), "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
}

TEST(SchemaTest, AtenMaxPool2dEmptyListDefault) {
  Schema s = Schema::parse(
      "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
      "bool ceil_mode=False) -> Tensor");
  EXPECT_FALSE(s.arguments[1].default_value.has_value());
  EXPECT_EQ(s.arguments[2].default_value, AttrValue{Ints{}});
  EXPECT_EQ(s.arguments[3].default_value, AttrValue{(Ints{0, 0})});
  EXPECT_EQ(s.arguments[5].default_value, AttrValue{false});
}

TEST(SchemaTest, AtenLayerNorm) {
  Schema s = Schema::parse(
      "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
      "float eps=1e-05, bool cudnn_enable=True) -> Tensor");
  EXPECT_EQ(s.arguments[4].default_value, AttrValue{1e-05});
  EXPECT_EQ(s.arguments[5].default_value, AttrValue{true});
}

TEST(SchemaTest, AtenBatchNormThreeReturns) {
  Schema s = Schema::parse(
      "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
      "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)");
  EXPECT_EQ(s.name, "_native_batch_norm_legit_no_training");
  EXPECT_EQ(s.arguments.size(), 7u);
  EXPECT_TRUE(s.arguments[1].type.optional);
  EXPECT_FALSE(s.arguments[1].default_value.has_value());
  EXPECT_EQ(s.returns.size(), 3u);
}

TEST(SchemaTest, AtenCatTakesATensorList) {
  Schema cat = Schema::parse("aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
  expect_arguments(cat.arguments, {{"tensors", list(K::Tensor)}, {"dim", type(K::Int), false, AttrValue{int64_t{0}}}});
  EXPECT_TRUE(cat.arguments[0].type.is_tensor());
  EXPECT_TRUE(cat.arguments[0].type.is_tensor_list());
  EXPECT_FALSE(cat.arguments[1].type.is_tensor());
  EXPECT_EQ(cat.str(), "aten::cat(Tensor[] tensors, int dim=0) -> Tensor");
}

TEST(SchemaTest, AtenSoftmaxAndGelu) {
  Schema softmax = Schema::parse("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(softmax.qualified_name(), "aten::softmax.int");
  EXPECT_EQ(softmax.arguments[2].default_value, AttrValue{});
  Schema gelu = Schema::parse("aten::gelu(Tensor self, *, str approximate='none') -> Tensor");
  expect_arguments(gelu.arguments,
                   {{"self", kTensor}, {"approximate", type(K::Str), true, AttrValue{std::string("none")}}});
}

// ---------------------------------------------------------------------------
// Round trip: parse(s.str()) == s

class SchemaRoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SchemaRoundTripTest, ParseOfStrIsEqual) {
  Schema s = Schema::parse(GetParam());
  Schema again = Schema::parse(s.str());
  EXPECT_EQ(again, s) << s.str();
  EXPECT_EQ(again.str(), s.str());
}

INSTANTIATE_TEST_SUITE_P(
    Schemas, SchemaRoundTripTest,
    ::testing::Values(
        "ns::name.overload(Tensor x, Tensor? bias=None, *, int stride=1, int[] dims=[0,1], float alpha=1.0, "
        "bool flag=False, str mode=\"same\", ScalarType? dtype=None) -> (Tensor, Tensor)",
        "ns::relu(Tensor x) -> Tensor", "ns::topk(Tensor self, int k) -> (Tensor values, Tensor indices)",
        "ns::noop() -> ()", "ns::single(Tensor x) -> (Tensor out)",
        "ns::add_(Tensor(a!) self, Tensor other) -> Tensor(a!)", "ns::unbind(Tensor(a -> *) self, int dim=0) -> Tensor",
        "ns::pool(Tensor x, int[2] stride=1) -> Tensor",
        "ns::f(Tensor x, int dim=-1, float eps=1e-05, float lo=-inf, float hi=inf, float third=0.1) -> Tensor",
        R"(ns::f(Tensor x, str a='none', str b="it's", str c="say \"hi\"") -> Tensor)",
        "ns::f(Tensor x, ScalarType dtype=float, MemoryFormat? memory_format=None, Layout? layout=None) -> Tensor",
        "ns::f(Tensor x, MemoryFormat fmt=contiguous_format, bool[3] mask=[True, False, True]) -> Tensor",
        "relu(Tensor x) -> Tensor",
        "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0, "
        "SymInt[2] dilation=1, SymInt groups=1) -> Tensor",
        "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
        "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
        "bool ceil_mode=False) -> Tensor",
        "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enable=True) -> Tensor",
        "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
        "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
        "aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
        "aten::gelu(Tensor self, *, str approximate='none') -> Tensor"));

// ---------------------------------------------------------------------------
// Errors: the message quotes the schema and puts a caret under the offending
// character. In the table, '^' marks that character and is removed before
// parsing.

struct BadSchema {
  const char* name;
  const char* marked_text;

  friend void PrintTo(const BadSchema& b, std::ostream* os) { *os << b.marked_text; }
};

class SchemaErrorTest : public ::testing::TestWithParam<BadSchema> {};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    out.push_back(text.substr(start, end - start));
  }
  out.push_back(text.substr(start));
  return out;
}

TEST_P(SchemaErrorTest, PointsAtOffendingCharacter) {
  std::string text = GetParam().marked_text;
  const size_t column = text.find('^');
  ASSERT_NE(column, std::string::npos);
  text.erase(column, 1);

  std::string message;
  try {
    Schema::parse(text);
    FAIL() << "parsed without error: " << text;
  } catch (const Error& e) {
    message = e.what();
  }
  std::vector<std::string> parts = lines(message);
  ASSERT_EQ(parts.size(), 3u) << message;
  EXPECT_EQ(parts[0].rfind("invalid schema", 0), 0u) << message;
  EXPECT_NE(parts[0].find("at column " + std::to_string(column + 1)), std::string::npos) << message;
  EXPECT_EQ(parts[1], "  " + text);
  EXPECT_EQ(parts[2], "  " + std::string(column, ' ') + "^") << message;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, SchemaErrorTest,
    ::testing::Values(BadSchema{"MissingCloseParen", "ns::f(Tensor x ^-> Tensor"},
                      BadSchema{"MissingOpenParen", "ns::f ^-> Tensor"},
                      BadSchema{"UnknownType", "ns::f(Tensor x, ^Tensr y) -> Tensor"},
                      BadSchema{"MissingArrow", "ns::f(Tensor x) ^Tensor"},
                      BadSchema{"MissingReturns", "ns::f(Tensor x) -> ^"},
                      BadSchema{"GarbageAfterReturns", "ns::f(Tensor x) -> (Tensor) ^extra"},
                      BadSchema{"GarbageAfterNamedReturn", "ns::f(Tensor x) -> Tensor out ^)"},
                      BadSchema{"NoneForNonOptional", "ns::f(Tensor x, int n=^None) -> Tensor"},
                      BadSchema{"FloatForInt", "ns::f(Tensor x, int n=^1.5) -> Tensor"},
                      BadSchema{"DuplicateArgument", "ns::f(Tensor x, int n, float ^n) -> Tensor"},
                      BadSchema{"TwoStars", "ns::f(Tensor x, *, int a, ^*, int b) -> Tensor"},
                      BadSchema{"UnterminatedString", "ns::f(Tensor x, str s=\"abc) -> Tensor^"},
                      BadSchema{"IntForStr", "ns::f(Tensor x, str s=^3) -> Tensor"},
                      BadSchema{"TensorDefault", "ns::f(Tensor x=^1) -> Tensor"},
                      BadSchema{"ListTooLong", "ns::f(Tensor x, int[2] k=^[1, 2, 3]) -> Tensor"},
                      BadSchema{"ScalarDefaultForList", "ns::f(Tensor x, int[] k=^1) -> Tensor"},
                      BadSchema{"UnknownDType", "ns::f(Tensor x, ScalarType t=^float128) -> Tensor"},
                      BadSchema{"BoolAsInt", "ns::f(Tensor x, bool b=^1) -> Tensor"},
                      BadSchema{"MissingName", "ns::f(Tensor ^) -> Tensor"}, BadSchema{"Empty", "^"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace opgraph
