// Positions in index tensors and advanced indexing's plan
// (kernels/cpu/util/indexing.h): index dtypes, positions in range (negative
// ones counting from the end where allowed), the indexed result's shape and
// the offsets it reads.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/util/indexing.h"
#include "testing.h"

namespace opgraph::kernels {
namespace {

using Ints = std::vector<int64_t>;

using opgraph::testing::error_of;

TEST(CheckIndexDtype, Int64AndInt32Pass) {
  EXPECT_NO_THROW(check_index_dtype({DType::Int64, {3}}));
  EXPECT_NO_THROW(check_index_dtype({DType::Int32, {}}));
}

TEST(CheckIndexDtype, OthersNameTheArgument) {
  EXPECT_NE(
      error_of([] { check_index_dtype({DType::Float32, {2}}); }).find("index: expected int64 or int32, got float32[2]"),
      std::string::npos);
  EXPECT_NE(error_of([] { check_index_dtype({DType::Bool, {}}, "indices"); }).find("indices: expected int64 or int32"),
            std::string::npos);
}

TEST(Position, InRange) {
  const int64_t index[] = {0, 4, 2};
  EXPECT_EQ(position(index, 0, 5), 0);
  EXPECT_EQ(position(index, 1, 5), 4);
  EXPECT_EQ(position(index, 2, 5), 2);
  const int32_t narrow[] = {1};
  EXPECT_EQ(position(narrow, 0, 2), 1);
}

TEST(Position, NegativeCountsFromTheEndOnlyWhenAllowed) {
  const int64_t index[] = {-1, -5, -6};
  EXPECT_EQ(position<true>(index, 0, 5), 4);
  EXPECT_EQ(position<true>(index, 1, 5), 0);
  EXPECT_THROW(position<true>(index, 2, 5), Error);
  EXPECT_THROW(position(index, 0, 5), Error);
}

TEST(Position, OutOfRangeSaysWhereAndTheSize) {
  const int64_t index[] = {0, 5};
  EXPECT_NE(error_of([&] { position(index, 1, 5); }).find("index: 5 at position 1 is out of range for a dim of size 5"),
            std::string::npos);
  // Nothing is in range of an empty dim.
  EXPECT_THROW(position(index, 0, 0), Error);
  EXPECT_THROW(position<true>(index, 0, 0), Error);
}

TEST(DispatchIndex, TheTypeOfTheDtype) {
  size_t size = 0;
  dispatch_index(DType::Int64, [&](auto zero) { size = sizeof(zero); });
  EXPECT_EQ(size, 8u);
  dispatch_index(DType::Int32, [&](auto zero) { size = sizeof(zero); });
  EXPECT_EQ(size, 4u);
}

Indexing plan(const Ints& self, std::vector<const TensorMeta*> indices) {
  return plan_indexing(TensorMeta{DType::Float32, Shape(self)}, std::span<const TensorMeta* const>(indices));
}

TEST(PlanIndexing, OneLeadingIndexTakesItsPlace) {
  const TensorMeta i{DType::Int64, {2}};
  const Indexing p = plan({5, 6, 7}, {&i});
  EXPECT_EQ(p.out_shape, Shape({2, 6, 7}));
  EXPECT_EQ(p.self_dim, (Ints{-1, 1, 2}));
  EXPECT_EQ(p.indexed, Ints{0});
  EXPECT_EQ(p.self_strides, Strides({42, 7, 1}));
  // The dims after the index read self in order: one block from dim 1 on.
  EXPECT_EQ(p.block_start(3, [](size_t) { return true; }), 1u);
  EXPECT_EQ(p.block_start(3, [](size_t k) { return k >= 2; }), 2u);
}

TEST(PlanIndexing, AdjacentIndicesBroadcastInPlace) {
  const TensorMeta i{DType::Int64, {2, 1}}, j{DType::Int32, {3}};
  const Indexing p = plan({5, 6, 7, 8}, {nullptr, &i, &j});
  EXPECT_EQ(p.out_shape, Shape({5, 2, 3, 8}));
  EXPECT_EQ(p.self_dim, (Ints{0, -1, -1, 3}));
  EXPECT_EQ(p.indexed, (Ints{1, 2}));
  EXPECT_EQ(p.block_start(4, [](size_t) { return true; }), 3u);
}

TEST(PlanIndexing, SeparatedIndicesGoFirst) {
  const TensorMeta i{DType::Int64, {3}}, j{DType::Int64, {3}};
  const Indexing p = plan({5, 6, 7}, {&i, nullptr, &j});
  EXPECT_EQ(p.out_shape, Shape({3, 6}));
  EXPECT_EQ(p.self_dim, (Ints{-1, 1}));
  EXPECT_EQ(p.indexed, (Ints{0, 2}));
  // The last dim of self is indexed: no block.
  EXPECT_EQ(p.block_start(3, [](size_t) { return true; }), 2u);
}

TEST(PlanIndexing, IndicesThatDoNotBroadcastAreAnError) {
  const TensorMeta i{DType::Int64, {2}}, j{DType::Int64, {3}};
  EXPECT_THROW(plan({5, 6}, {&i, &j}), Error);
}

TEST(IndexingOffset, ReadsThroughTheIndexWithNegativesFromTheEnd) {
  Tensor index = Tensor::empty({2}, DType::Int64);
  index.data_ptr<int64_t>()[0] = 4;
  index.data_ptr<int64_t>()[1] = -1;  // also 4 on a dim of 5
  Tensor self = Tensor::empty({5, 6}, DType::Float32);
  const std::vector<Tensor> indices{index, Tensor()};
  const Indexing p = plan_indexing(self.meta(), std::span<const Tensor>(indices));
  EXPECT_EQ(p.out_shape, Shape({2, 6}));
  EXPECT_EQ(p.offset(Ints{0, 3}, self, indices), 4 * 6 + 3);
  EXPECT_EQ(p.offset(Ints{1, 2}, self, indices), 4 * 6 + 2);
  // Only the first dims given: the rest at 0.
  EXPECT_EQ(p.offset(Ints{1}, self, indices), 4 * 6);
  index.data_ptr<int64_t>()[1] = 5;
  EXPECT_THROW(p.offset(Ints{1, 0}, self, indices), Error);
}

}  // namespace
}  // namespace opgraph::kernels
