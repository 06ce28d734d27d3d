// The layout, device and memory_format attributes (kernels/cpu/util/placement.h)
// and the factory ops' size attribute (factory_attrs.h): None or what opgraph's
// results are, else an error naming the attribute.
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
  EXPECT_TRUE(none_or_one_of(AttrValue{}, {"strided"}, true));
  EXPECT_TRUE(none_or_one_of(AttrValue{std::string("strided")}, {"strided"}, true));
  EXPECT_TRUE(none_or_one_of(AttrValue{std::string("torch.strided")}, {"strided"}, true));
  EXPECT_FALSE(none_or_one_of(AttrValue{std::string("torch.strided")}, {"strided"}, false));
  EXPECT_FALSE(none_or_one_of(AttrValue{std::string("torch.sparse_coo")}, {"strided"}, true));
  EXPECT_FALSE(none_or_one_of(AttrValue{std::string("")}, {"strided"}, true));
  // A value of another kind is neither None nor a name.
  EXPECT_FALSE(none_or_one_of(AttrValue{int64_t{0}}, {"strided"}, true));
}

class Placements : public ::testing::Test {
 protected:
  Attrs bind(const NamedAttrs& given) const { return Attrs::bind(schema_, given); }
  Schema schema_ = Schema::parse(
      "test::empty(int[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
      "MemoryFormat? memory_format=None) -> Tensor");
};

TEST_F(Placements, NoneAndTheDenseCpuOnesPass) {
  EXPECT_NO_THROW(check_placement(bind({{"size", std::vector<int64_t>{2}}}), kLayout | kDevice | kMemoryFormat));
  EXPECT_NO_THROW(check_placement(bind({{"size", std::vector<int64_t>{2}},
                                        {"layout", std::string("torch.strided")},
                                        {"device", std::string("cpu:0")},
                                        {"memory_format", std::string("preserve_format")}}),
                                  kLayout | kDevice | kMemoryFormat));
}

TEST_F(Placements, OthersNameTheAttribute) {
  const Attrs attrs = bind({{"size", std::vector<int64_t>{2}}, {"device", std::string("cuda:0")}});
  EXPECT_NO_THROW(check_placement(attrs, kLayout | kMemoryFormat));  // device unchecked
  try {
    check_placement(attrs, kDevice);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device: expected None or cpu, got"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      check_placement(bind({{"size", std::vector<int64_t>{2}}, {"memory_format", std::string("channels_last")}}),
                      kMemoryFormat),
      Error);
}

TEST_F(Placements, SizeAttr) {
  EXPECT_EQ(size_attr(bind({{"size", std::vector<int64_t>{2, 0, 3}}}), "size"), Shape({2, 0, 3}));
  EXPECT_EQ(size_attr(bind({{"size", std::vector<int64_t>{}}}), "size"), Shape({}));
  try {
    size_attr(bind({{"size", std::vector<int64_t>{2, -1}}}), "size");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("size: expected non-negative extents, got [2, -1]"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(is_none(bind({{"size", std::vector<int64_t>{}}}), "dtype"));
  EXPECT_FALSE(is_none(bind({{"size", std::vector<int64_t>{}}, {"dtype", DType::Int64}}), "dtype"));
}

}  // namespace
}  // namespace opgraph::kernels
