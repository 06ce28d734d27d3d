// Convolutions over few pixels with a Session's large weight
// (kernels/cpu/engines/conv_few_pixels.h): which it takes, and its values against
// the plain loops', on one to three threads, in both blocked layouts, with
// every epilogue.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/cpu/engines/conv.h"
#include "kernels/cpu/engines/conv_few_pixels.h"
#include "kernels/cpu/onednn/blocked_layout.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape, DType::Float32);
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_ptr<float>()[i] = uniform(generator);
  return t;
}

enum class Residual { None, Separate, InOutput };

// 512 channels to 256 at 7x7 by a 3x3 kernel: a 4.7 MB weight; 16 panels
// of 16 output channels, in groups of 3 (five) and 1 on one thread, of 3, 3
// and 2 on two, of 3 and 2 or 3 and 3 on three.
struct Case {
  int64_t batch = 1, channels = 512, out_channels = 256, size = 7, kernel = 3, stride = 1, padding = 1;
  int64_t in_block = 16, out_block = 16;  // 16, or the channels: channels-last
  bool bias = true;
  Residual residual = Residual::None;
  Activation activation = Activation::ReLU;

  ConvParams params() const {
    ConvParams p;
    p.stride = {stride, stride};
    p.padding = p.padding_end = {padding, padding};
    p.dilation = {1, 1};
    return p;
  }
  int64_t out_size() const { return (size + 2 * padding - kernel) / stride + 1; }
  Shape input_dims() const { return {batch, channels, size, size}; }
  Shape out_dims() const { return {batch, out_channels, out_size(), out_size()}; }
};

Tensor blocked(const KernelContext& context, const Tensor& plain, int64_t block) {
  Tensor t = Tensor::empty(blocked_dims(plain.shape(), block), DType::Float32);
  convert_blocks(context, plain.shape(), block, plain.data_ptr<float>(), t.data_ptr<float>(), true);
  return t;
}

// Runs the case on the kernel with `threads` threads (expecting it to take
// the convolution), twice (packing the weight, then on the packed copy),
// and compares with oneDNN's convolution on the plain layout, which the
// convolutions' other tests hold to the plain loops (whose 58 million
// multiply-adds a case took too long under AddressSanitizer).
void expect_onednns_values(const Case& c, int threads) {
  ThreadPool pool(threads);
  PreparedWeights weight_constant({false, true}, Precision::Float32);
  const KernelContext session = prepared_context(pool, weight_constant);
  const Tensor input = random_tensor(c.input_dims(), 1);
  const Tensor weight = random_tensor({c.out_channels, c.channels, c.kernel, c.kernel}, 2);
  const Tensor bias = c.bias ? random_tensor({c.out_channels}, 3) : Tensor();
  const Tensor residual = random_tensor(c.out_dims(), 4);

  Tensor expected = Tensor::empty(c.out_dims(), DType::Float32);
  conv_forward(session, input, weight, bias, expected, c.params(), Activation::None, /*reference=*/false);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double sum = double(expected.data_ptr<float>()[i]) +
                       (c.residual == Residual::None ? 0.0 : double(residual.data_ptr<float>()[i]));
    expected.data_ptr<float>()[i] = static_cast<float>(activation_reference(c.activation, sum));
  }

  const Tensor blocked_input = blocked(session, input, c.in_block);
  const Tensor blocked_residual = blocked(session, residual, c.out_block);
  for (int run = 0; run < 2; ++run) {
    const Tensor out = c.residual == Residual::InOutput
                           ? blocked(session, residual, c.out_block)
                           : Tensor::empty(blocked_dims(c.out_dims(), c.out_block), DType::Float32);
    const Tensor added = c.residual == Residual::Separate   ? blocked_residual
                         : c.residual == Residual::InOutput ? out
                                                            : Tensor();
    ASSERT_TRUE(few_pixel_conv(session, blocked_input, c.input_dims(), weight, bias, added, out, c.out_dims(),
                               c.params(), c.activation));
    Tensor got = Tensor::empty(c.out_dims(), DType::Float32);
    convert_blocks(session, c.out_dims(), c.out_block, out.data_ptr<float>(), got.data_ptr<float>(), false);
    for (int64_t i = 0; i < got.numel(); ++i) {
      const float want = expected.data_ptr<float>()[i];
      ASSERT_NEAR(got.data_ptr<float>()[i], want, 1e-4f + 1e-5f * std::abs(want)) << "element " << i << ", run " << run;
    }
  }
}

class FewPixelConv : public testing::Test {
 protected:
  void SetUp() override {
    if (cpu_capability() != CpuCapability::Avx512) GTEST_SKIP() << "the kernel runs on AVX-512 CPUs only";
  }
};

TEST_F(FewPixelConv, ShapesOnOneToThreeThreads) {
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    expect_onednns_values({}, threads);
    // Stride 2 from 14x14, as in a ResNet's last stage.
    expect_onednns_values({.size = 14, .stride = 2}, threads);
    // 1x1, read in place: 2048 channels to 512, a 4 MiB weight.
    expect_onednns_values({.channels = 2048, .out_channels = 512, .kernel = 1, .padding = 0}, threads);
    // 1x1 with stride 2: gathered.
    expect_onednns_values({.channels = 2048, .out_channels = 512, .size = 14, .kernel = 1, .stride = 2, .padding = 0},
                          threads);
    // Two images (98 pixels); 8x8 (64: a last tile of 1) and 9x9 (81: of 4).
    expect_onednns_values({.batch = 2}, threads);
    expect_onednns_values({.size = 8}, threads);
    expect_onednns_values({.size = 9}, threads);
  }
}

TEST_F(FewPixelConv, ChannelsLast) {
  expect_onednns_values({.in_block = 512, .out_block = 256}, 2);
  expect_onednns_values({.batch = 2, .in_block = 512}, 1);
  expect_onednns_values({.channels = 2048, .out_channels = 512, .kernel = 1, .padding = 0, .out_block = 512}, 3);
}

TEST_F(FewPixelConv, EveryEpilogue) {
  for (Activation activation : {Activation::None, Activation::ReLU, Activation::GELU, Activation::GELUTanh,
                                Activation::Sigmoid, Activation::Tanh, Activation::ReLU6, Activation::SiLU}) {
    SCOPED_TRACE(testing::Message() << "activation " << static_cast<int>(activation));
    expect_onednns_values({.activation = activation}, 2);
  }
  expect_onednns_values({.bias = false}, 2);
  expect_onednns_values({.residual = Residual::Separate}, 2);
  expect_onednns_values({.residual = Residual::InOutput}, 1);
  expect_onednns_values({.batch = 2, .bias = false, .residual = Residual::InOutput, .activation = Activation::SiLU}, 3);
}

TEST(FewPixelConvRefuses, OtherConvolutions) {
  ThreadPool pool(2);
  PreparedWeights weight_constant({false, true}, Precision::Float32);
  PreparedWeights weight_in_bf16({false, true}, Precision::BFloat16);
  PreparedWeights input_constant({true, false}, Precision::Float32);
  const KernelContext session = prepared_context(pool, weight_constant);
  const KernelContext bf16 = prepared_context(pool, weight_in_bf16);
  const KernelContext changing_weight = prepared_context(pool, input_constant);
  const auto refuses = [&](const KernelContext& context, const Case& c, int64_t groups = 1) {
    ConvParams p = c.params();
    p.groups = groups;
    const Tensor weight = random_tensor({c.out_channels, c.channels / groups, c.kernel, c.kernel}, 2);
    const Tensor input = blocked(context, random_tensor(c.input_dims(), 1), c.in_block);
    const Tensor out = Tensor::zeros(blocked_dims(c.out_dims(), c.out_block), DType::Float32);
    const bool took = few_pixel_conv(context, input, c.input_dims(), weight, Tensor(), Tensor(), out, c.out_dims(), p,
                                     Activation::Sigmoid);
    for (int64_t i = 0; i < out.numel(); ++i) EXPECT_EQ(out.data_ptr<float>()[i], 0.0f) << "element " << i;
    return !took;
  };
  EXPECT_TRUE(refuses(session, {.batch = 3}));                 // 147 pixels
  EXPECT_TRUE(refuses(session, {.size = 6}));                  // 6x6: padding taps
  EXPECT_TRUE(refuses(session, {.kernel = 1, .padding = 0}));  // 512 KiB: stays in cache
  EXPECT_TRUE(refuses(bf16, {}));                              // bfloat16 products
  EXPECT_TRUE(refuses(changing_weight, {}));                   // a weight that may change
  EXPECT_TRUE(refuses(session, {.in_block = 8}));              // blocks of 8
  EXPECT_TRUE(refuses(session, {.out_block = 8}));
  EXPECT_TRUE(refuses(session, {.channels = 1024}, 2));               // grouped
  EXPECT_TRUE(refuses(session, {.channels = 520, .in_block = 520}));  // channels-last, 520 channels
  EXPECT_TRUE(refuses(session, {.out_channels = 248}));               // a last block of 8 channels
}

}  // namespace
}  // namespace opgraph::kernels
