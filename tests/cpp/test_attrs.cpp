// Binding call attributes to a schema: defaults, coercions and errors.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/registry/attrs.h"
#include "opgraph/registry/schema.h"

namespace opgraph {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;

const char* const kSchema =
    "test::op(Tensor x, int n, float alpha=1.0, int[2] stride=1, bool flag=False, str mode=\"same\", "
    "ScalarType? dtype=None, int[] dims=[0, 1], Tensor? bias=None, float[2] scale=0.5, Scalar beta=1) -> Tensor";

class AttrsTest : public ::testing::Test {
 protected:
  Attrs bind(const NamedAttrs& given) const { return Attrs::bind(schema_, given); }

  Schema schema_ = Schema::parse(kSchema);
};

TEST_F(AttrsTest, NamesInSchemaOrderSkippingTensors) {
  Attrs attrs = bind({{"n", int64_t{3}}});
  ASSERT_EQ(attrs.size(), 9u);
  const char* names[] = {"n", "alpha", "stride", "flag", "mode", "dtype", "dims", "scale", "beta"};
  for (size_t i = 0; i < attrs.size(); ++i) EXPECT_EQ(attrs.name(i), names[i]);
}

TEST_F(AttrsTest, NameOutOfRangeThrows) {
  Attrs attrs = bind({{"n", int64_t{3}}});
  try {
    attrs.name(9);
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("index 9 "), std::string::npos) << e.what();
  }
}

TEST_F(AttrsTest, DefaultsFilled) {
  Attrs attrs = bind({{"n", int64_t{3}}});
  EXPECT_EQ(attrs.get<int64_t>("n"), 3);
  EXPECT_EQ(attrs.get<double>("alpha"), 1.0);
  EXPECT_EQ(attrs.get<Ints>("stride"), (Ints{1, 1}));
  EXPECT_EQ(attrs.get<bool>("flag"), false);
  EXPECT_EQ(attrs.get<std::string>("mode"), "same");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(attrs.get("dtype")));
  EXPECT_EQ(attrs.get<Ints>("dims"), (Ints{0, 1}));
  EXPECT_EQ(attrs.get<Floats>("scale"), (Floats{0.5, 0.5}));
  EXPECT_EQ(attrs.get<int64_t>("beta"), 1);
  EXPECT_EQ(attrs[0], AttrValue{int64_t{3}});
}

TEST_F(AttrsTest, GivenValuesReplaceDefaults) {
  Attrs attrs = bind({{"dims", Ints{2}},
                      {"mode", std::string("valid")},
                      {"n", int64_t{-4}},
                      {"alpha", 0.25},
                      {"stride", Ints{2, 3}},
                      {"flag", true},
                      {"dtype", DType::Int64},
                      {"scale", Floats{1.5, 2.5}},
                      {"beta", 0.75}});
  EXPECT_EQ(attrs.get<int64_t>("n"), -4);
  EXPECT_EQ(attrs.get<double>("alpha"), 0.25);
  EXPECT_EQ(attrs.get<Ints>("stride"), (Ints{2, 3}));
  EXPECT_EQ(attrs.get<bool>("flag"), true);
  EXPECT_EQ(attrs.get<std::string>("mode"), "valid");
  EXPECT_EQ(attrs.get<DType>("dtype"), DType::Int64);
  EXPECT_EQ(attrs.get<Ints>("dims"), (Ints{2}));
  EXPECT_EQ(attrs.get<Floats>("scale"), (Floats{1.5, 2.5}));
  EXPECT_EQ(attrs.get<double>("beta"), 0.75);
}

TEST_F(AttrsTest, IntPromotesToFloat) {
  Attrs attrs = bind({{"n", int64_t{1}}, {"alpha", int64_t{2}}, {"scale", Ints{3, 4}}});
  EXPECT_EQ(attrs.get<double>("alpha"), 2.0);
  EXPECT_EQ(attrs.get<Floats>("scale"), (Floats{3.0, 4.0}));
}

TEST_F(AttrsTest, ScalarBroadcastsToFixedSizeList) {
  Attrs attrs = bind({{"n", int64_t{1}}, {"stride", int64_t{3}}, {"scale", 0.5}});
  EXPECT_EQ(attrs.get<Ints>("stride"), (Ints{3, 3}));
  EXPECT_EQ(attrs.get<Floats>("scale"), (Floats{0.5, 0.5}));
  Attrs from_int = bind({{"n", int64_t{1}}, {"scale", int64_t{2}}});
  EXPECT_EQ(from_int.get<Floats>("scale"), (Floats{2.0, 2.0}));
}

// As in ATen, the size in int[2] is a broadcast hint: the op checks lengths.
TEST_F(AttrsTest, FixedSizeListsTakeAnyLength) {
  Attrs attrs = bind({{"n", int64_t{1}}, {"stride", Ints{1, 2, 3}}, {"scale", Floats{1.0}}});
  EXPECT_EQ(attrs.get<Ints>("stride"), (Ints{1, 2, 3}));
  EXPECT_EQ(attrs.get<Floats>("scale"), (Floats{1.0}));
}

TEST_F(AttrsTest, ScalarTypeGivenByName) {
  EXPECT_EQ(bind({{"n", int64_t{1}}, {"dtype", std::string("float16")}}).get<DType>("dtype"), DType::Float16);
  EXPECT_EQ(bind({{"n", int64_t{1}}, {"dtype", std::string("Long")}}).get<DType>("dtype"), DType::Int64);
}

TEST_F(AttrsTest, NoneForOptional) {
  Attrs attrs = bind({{"n", int64_t{1}}, {"dtype", AttrValue{}}});
  EXPECT_TRUE(std::holds_alternative<std::monostate>(attrs.get("dtype")));
}

TEST_F(AttrsTest, GetWithWrongTypeThrows) {
  Attrs attrs = bind({{"n", int64_t{1}}});
  try {
    attrs.get<double>("n");
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'n'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attrs.get<std::string>("alpha"), Error);
  EXPECT_THROW(attrs.get<int64_t>("dtype"), Error);
}

TEST_F(AttrsTest, GetUnknownNameThrows) {
  Attrs attrs = bind({{"n", int64_t{1}}});
  try {
    attrs.get("nope");
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test::op"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(attrs.get("x"), Error);  // tensors are not attributes
  EXPECT_THROW(Attrs().get("n"), Error);
}

TEST(AttrsNoAttributes, UnknownNameSaysNone) {
  Schema schema = Schema::parse("test::relu(Tensor x) -> Tensor");
  EXPECT_EQ(Attrs::bind(schema, {}).size(), 0u);
  try {
    Attrs::bind(schema, {{"alpha", 1.0}});
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(none)"), std::string::npos) << e.what();
  }
}

TEST(AttrsTensorLists, ListsAreInputsWhoseLengthsTheAttributesCarry) {
  Schema schema = Schema::parse("test::join(Tensor[] xs, Tensor scale, Tensor[] ys, int dim=0) -> Tensor");
  const std::vector<size_t> lengths{3, 0};
  Attrs attrs = Attrs::bind(schema, {{"dim", int64_t{1}}}, lengths);
  ASSERT_EQ(attrs.size(), 1u);
  EXPECT_EQ(attrs.name(0), "dim");
  EXPECT_EQ(attrs.get<int64_t>("dim"), 1);
  EXPECT_EQ(std::vector<size_t>(attrs.list_sizes().begin(), attrs.list_sizes().end()), lengths);
  try {
    Attrs::bind(schema, {}, std::vector<size_t>{3});
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test::join: expected the length of each Tensor[] argument (xs, ys), got 1"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Attrs::bind(schema, {{"xs", int64_t{1}}}, lengths), Error);  // a list is not an attribute
  EXPECT_THROW(Attrs::bind(Schema::parse("test::relu(Tensor x) -> Tensor"), {}, lengths), Error);
}

// ---------------------------------------------------------------------------
// Binding errors name the op and the argument.

struct BindError {
  const char* name;
  NamedAttrs given;
  std::vector<std::string> message_parts;

  friend void PrintTo(const BindError& b, std::ostream* os) { *os << b.name; }
};

class AttrsBindErrorTest : public AttrsTest, public ::testing::WithParamInterface<BindError> {};

TEST_P(AttrsBindErrorTest, Throws) {
  const BindError& c = GetParam();
  try {
    bind(c.given);
    FAIL() << "bound without error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test::op"), std::string::npos) << message;
    for (const std::string& part : c.message_parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, AttrsBindErrorTest,
    ::testing::Values(
        BindError{"MissingRequired", {{"alpha", 2.0}}, {"missing required attribute 'n'"}},
        BindError{"StringForInt", {{"n", std::string("3")}}, {"'n'", "expects int"}},
        BindError{"BoolForInt", {{"n", true}}, {"'n'", "expects int", "bool"}},
        BindError{"FloatForInt", {{"n", 1.5}}, {"'n'", "expects int", "1.5"}},
        BindError{"NoneForNonOptional", {{"n", AttrValue{}}}, {"'n'", "None"}},
        BindError{"FloatListForIntList", {{"n", int64_t{1}}, {"dims", Floats{1.0}}}, {"'dims'", "int[]"}},
        BindError{"ScalarForUnsizedList", {{"n", int64_t{1}}, {"dims", int64_t{2}}}, {"'dims'"}},
        BindError{"IntForStr", {{"n", int64_t{1}}, {"mode", int64_t{3}}}, {"'mode'", "str"}},
        BindError{"StringForScalar", {{"n", int64_t{1}}, {"beta", std::string("one")}}, {"'beta'", "Scalar"}},
        BindError{"UnknownDTypeName", {{"n", int64_t{1}}, {"dtype", std::string("float128")}}, {"'dtype'"}},
        BindError{"UnknownName",
                  {{"n", int64_t{1}}, {"nn", int64_t{2}}},
                  {"unexpected attribute 'nn'", "n, alpha, stride, flag, mode, dtype, dims, scale, beta"}},
        BindError{"TensorName", {{"n", int64_t{1}}, {"bias", int64_t{2}}}, {"unexpected attribute 'bias'"}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace opgraph
