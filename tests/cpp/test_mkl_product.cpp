// Products with a Session's float32 weight on MKL (kernels/cpu/mkl/mkl_product.h):
// which products it takes, and their values against oneDNN's, on one to
// three threads, with every epilogue.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cpu/mkl/mkl_product.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/core/thread_pool.h"
#include "product_cases.h"

namespace opgraph::kernels {
namespace {

// Runs the case on MKL with `threads` threads (expecting MKL to take it) and
// on oneDNN, which the products' other tests hold to the plain reference
// (whose loops took minutes here under AddressSanitizer), and compares.
void expect_onednn_values(const Case& c, int threads) {
  const Tensors tensors(c);
  ThreadPool pool(threads);
  PreparedWeights prepared({false, true}, Precision::Float32);
  const KernelContext session = prepared_context(pool, prepared), no_session{&pool};
  const Tensor out = Tensor::empty({c.m, c.n}, DType::Float32), expected = Tensor::empty({c.m, c.n}, DType::Float32);
  run_product(no_session, tensors.product(c, expected), DType::Float32, /*reference=*/false);
  for (int run = 0; run < 2; ++run) {  // packing the weight, then on the packed copy
    ASSERT_TRUE(mkl_product(session, tensors.product(c, out)));
    for (int64_t i = 0; i < c.m * c.n; ++i) {
      const float want = expected.data_ptr<float>()[i];
      ASSERT_NEAR(out.data_ptr<float>()[i], want, 1e-4f + 1e-5f * std::abs(want)) << "element " << i << ", run " << run;
    }
  }
}

TEST(MklProduct, TallProductsOnOneToThreeThreads) {
  // 260 columns: slices of 96, 80 and 84 on three threads; 300 rows: no
  // multiple of any block; 800 rows: split over the threads instead.
  for (int threads : {1, 2, 3}) {
    for (int64_t m : {128, 300, 800}) {
      SCOPED_TRACE(testing::Message() << threads << " threads, " << m << " rows");
      expect_onednn_values({.m = m}, threads);
      expect_onednn_values({.m = m, .transposed_weight = false}, threads);
      expect_onednn_values({.m = m, .transposed_a = true}, threads);
    }
  }
}

TEST(MklProduct, OnePackedCopyServesShortAndTallProducts) {
  // 128 rows split the columns among the threads, 800 the rows: both read the same slices.
  const Case short_case{.m = 128}, tall_case{.m = 800};
  const Tensors short_tensors(short_case), tall_tensors(tall_case);
  ThreadPool pool(2);
  PreparedWeights prepared({false, true}, Precision::Float32);
  const KernelContext session = prepared_context(pool, prepared);
  const Tensor short_out = Tensor::empty({128, short_case.n}, DType::Float32);
  const Tensor tall_out = Tensor::empty({800, tall_case.n}, DType::Float32);
  ASSERT_TRUE(mkl_product(session, short_tensors.product(short_case, short_out)));
  Product tall = tall_tensors.product(tall_case, tall_out);
  tall.w = operand(short_tensors.w, 2, /*transposed=*/true);  // the same weight
  ASSERT_TRUE(mkl_product(session, tall));
  EXPECT_EQ(prepared.forms(), 1u);
}

TEST(MklProduct, EveryEpilogue) {
  for (Activation activation : {Activation::None, Activation::ReLU, Activation::GELU, Activation::GELUTanh,
                                Activation::Sigmoid, Activation::Tanh, Activation::ReLU6, Activation::SiLU}) {
    SCOPED_TRACE(testing::Message() << "activation " << static_cast<int>(activation));
    expect_onednn_values({.bias = true, .activation = activation}, 2);
  }
  expect_onednn_values({.bias = true, .accumulate = true, .activation = Activation::ReLU}, 2);
  expect_onednn_values({.multiplier = true}, 2);
  expect_onednn_values({.accumulate = true, .multiplier = true, .activation = Activation::SiLU}, 1);
}

TEST(MklProduct, LeavesOtherProductsAlone) {
  ThreadPool pool(2);
  PreparedWeights prepared({false, true}, Precision::Float32), prepared_bf16({false, true}, Precision::BFloat16);
  const KernelContext session = prepared_context(pool, prepared);
  const KernelContext bf16 = prepared_context(pool, prepared_bf16);
  const KernelContext no_session{&pool};
  const Tensors tall(Case{});
  const Tensor out = Tensor::zeros({128, 260}, DType::Float32);

  EXPECT_FALSE(mkl_product(no_session, tall.product({}, out)));  // no Session to pack for
  EXPECT_FALSE(mkl_product(bf16, tall.product({}, out)));        // bfloat16 products
  Product changing = tall.product({}, out);
  changing.constant_w = false;  // a weight that may change between calls
  EXPECT_FALSE(mkl_product(session, changing));
  Product strided = tall.product({}, out);
  strided.a = Operand{tall.a.data(), {128, 256}, {512, 2}};  // every other column: neither dim contiguous
  strided.w = Operand{tall.w.data(), {256, 260}, {2, 512}};
  EXPECT_FALSE(mkl_product(session, strided));
  for (int64_t i = 0; i < 128 * 260; ++i) ASSERT_EQ(out.data_ptr<float>()[i], 0.0f);
}

}  // namespace
}  // namespace opgraph::kernels
