// The layout, device and memory_format attributes (kernels/cpu/util/placement.h),
// checked where an op's schema has them, and the factory ops' size attribute
// (factory_attrs.h): None or what opgraph's results are, else an error naming
// the attribute.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/util/factory_attrs.h"
#include "kernels/cpu/util/placement.h"
#include "opgraph/registry/attrs.h"
#include "opgraph/registry/schema.h"

namespace opgraph::kernels {
namespace {

TEST(NoneOrOneOf, NamesWithOrWithoutTorch) {
  EXPECT_TRUE(none_or_one_of(std::nullopt, {"strided"}, true));
  EXPECT_TRUE(none_or_one_of("strided", {"strided"}, true));
  EXPECT_TRUE(none_or_one_of("torch.strided", {"strided"}, true));
  EXPECT_FALSE(none_or_one_of("torch.strided", {"strided"}, false));
  EXPECT_FALSE(none_or_one_of("torch.sparse_coo", {"strided"}, true));
  EXPECT_FALSE(none_or_one_of("", {"strided"}, true));
}

class Placements : public ::testing::Test {
 protected:
  Attrs bind(const NamedAttrs& given) const { return Attrs::bind(schema_, given); }
  Schema schema_ = Schema::parse(
      "test::empty(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "MemoryFormat? memory_format=None) -> Tensor");
  PlacementPositions positions_{schema_};
};

TEST_F(Placements, NoneAndTheDenseCpuOnesPass) {
  EXPECT_NO_THROW(positions_.check(bind({{"size", std::vector<int64_t>{2}}})));
  EXPECT_NO_THROW(positions_.check(bind({{"size", std::vector<int64_t>{2}},
                                         {"layout", std::string("torch.strided")},
                                         {"device", std::string("cpu:0")},
                                         {"memory_format", std::string("preserve_format")}})));
}

TEST_F(Placements, OthersNameTheAttribute) {
  try {
    positions_.check(bind({{"size", std::vector<int64_t>{2}}, {"device", std::string("cuda:0")}}));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device: expected None or cpu, got \"cuda:0\""), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(
      positions_.check(bind({{"size", std::vector<int64_t>{2}}, {"memory_format", std::string("channels_last")}})),
      Error);
}

TEST_F(Placements, OnlyWhatTheSchemaHasIsChecked) {
  const Schema clone = Schema::parse("test::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor");
  const PlacementPositions positions(clone);
  EXPECT_FALSE(positions.layout.has_value());
  EXPECT_FALSE(positions.device.has_value());
  EXPECT_NO_THROW(positions.check(Attrs::bind(clone, {{"memory_format", std::string("contiguous_format")}})));
}

TEST(CheckedSize, NonNegativeExtents) {
  EXPECT_EQ(checked_size(std::vector<int64_t>{2, 0, 3}, "size"), Shape({2, 0, 3}));
  EXPECT_EQ(checked_size(std::vector<int64_t>{}, "size"), Shape({}));
  try {
    checked_size(std::vector<int64_t>{2, -1}, "size");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size: expected non-negative extents, got [2, -1]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace opgraph::kernels
