// The shape functions' input checks (kernels/cpu/util/shape_checks.h): what
// passes, and errors that name the argument, the expectation and the value.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "kernels/cpu/util/shape_checks.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

using opgraph::testing::error_of;

TEST(CheckFloating, FloatsPass) {
  EXPECT_NO_THROW(check_floating({DType::Float32, {2, 3}}, "self"));
  EXPECT_NO_THROW(check_floating({DType::Float64, {}}, "self"));
  EXPECT_NO_THROW(check_floating({DType::Float32, {0}}, "self"));
}

TEST(CheckFloating, OthersNameTheArgumentAndTheMeta) {
  const std::string message = error_of([] { check_floating({DType::Int64, {2, 3}}, "weight"); });
  EXPECT_NE(message.find("weight: expected float32 or float64, got int64[2, 3]"), std::string::npos) << message;
  EXPECT_THROW(check_floating({DType::Bool, {}}, "x"), Error);
  EXPECT_THROW(check_floating({DType::Int32, {1}}, "x"), Error);
}

TEST(CheckSameMeta, EqualMetasPass) {
  EXPECT_NO_THROW(check_same_meta({DType::Float32, {2, 3}}, "grad", {DType::Float32, {2, 3}}, "self"));
  EXPECT_NO_THROW(check_same_meta({DType::Int64, {}}, "grad", {DType::Int64, {}}, "self"));
}

TEST(CheckSameMeta, ADifferentShapeOrDtypeNamesBoth) {
  std::string message =
      error_of([] { check_same_meta({DType::Float32, {3, 2}}, "grad", {DType::Float32, {2, 3}}, "self"); });
  EXPECT_NE(message.find("grad: expected float32[2, 3] like self, got float32[3, 2]"), std::string::npos) << message;
  message = error_of([] { check_same_meta({DType::Float64, {2}}, "grad", {DType::Float32, {2}}, "self"); });
  EXPECT_NE(message.find("grad: expected float32[2] like self, got float64[2]"), std::string::npos) << message;
  // A 0-d tensor is not a one-element one.
  EXPECT_THROW(check_same_meta({DType::Float32, {}}, "grad", {DType::Float32, {1}}, "self"), Error);
}

TEST(CheckDtypeArgument, NoneOrTheInputsOwnDtypePass) {
  EXPECT_NO_THROW(check_dtype_argument(std::nullopt, "dtype", DType::Float32));
  EXPECT_NO_THROW(check_dtype_argument(DType::Float32, "dtype", DType::Float32));
  EXPECT_NO_THROW(check_dtype_argument(DType::Int64, "dtype", DType::Int64));
}

TEST(CheckDtypeArgument, AConversionIsRefused) {
  const std::string message = error_of([] { check_dtype_argument(DType::Float64, "dtype", DType::Float32); });
  EXPECT_NE(message.find("dtype: expected None or float32 (the input's dtype; conversion is not supported), got "
                         "float64"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace opgraph::kernels
