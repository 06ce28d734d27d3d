// OutputPool: the buffers of a Session's outputs, taken back when their
// caller lets go of them.
#include <gtest/gtest.h>

#include <vector>

#include "opgraph/opgraph.h"
#include "runtime/output_pool.h"
#include "testing.h"

namespace opgraph {
namespace {

TEST(OutputPool, ABufferLetGoOfIsTakenAgainForTheSameSize) {
  const auto pool = std::make_shared<OutputPool>();
  const TensorMeta meta{DType::Float32, {1000}};
  Tensor first = pool->take(meta);
  const void* address = first.data();
  EXPECT_EQ(first.meta(), meta);
  EXPECT_EQ(first.storage_use_count(), 1);  // the caller's alone
  Tensor view = first.view({10, 100});
  first = Tensor();
  EXPECT_EQ(pool->free_buffers(), 0u);  // a view still holds it
  {
    const Tensor held = pool->take(meta);  // meanwhile: a buffer of its own
    EXPECT_NE(held.data(), address);
  }
  EXPECT_EQ(pool->free_buffers(), 1u);
  view = Tensor();
  EXPECT_EQ(pool->free_buffers(), 2u);
  // Another size allocates anew; the same size takes a waiting buffer.
  const Tensor other = pool->take({DType::Float32, {10}});
  EXPECT_EQ(pool->free_buffers(), 2u);
  const Tensor again = pool->take(meta);
  EXPECT_EQ(pool->free_buffers(), 1u);
}

TEST(OutputPool, KeepsAFewBuffersAndFreesTheRest) {
  const auto pool = std::make_shared<OutputPool>();
  std::vector<Tensor> taken;
  for (int k = 0; k < 20; ++k) taken.push_back(pool->take({DType::Float32, {64}}));
  taken.clear();
  EXPECT_EQ(pool->free_buffers(), OutputPool::kMaxFreeBuffers);
}

TEST(OutputPool, AnOutputOutlivesItsPool) {
  auto pool = std::make_shared<OutputPool>();
  Tensor kept = pool->take({DType::Int64, {3}});
  pool.reset();  // the session is gone; the caller's output is still whole
  kept.data_ptr<int64_t>()[2] = 7;
  EXPECT_EQ(kept.data_ptr<int64_t>()[2], 7);
  kept = Tensor();  // freed, not given back: the sanitizers' run checks it
}

}  // namespace
}  // namespace opgraph
