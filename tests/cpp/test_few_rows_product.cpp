// Products of a few rows on a Session's weight packed into panels
// (kernels/cpu/engines/few_rows_product.h, panel_tiles.h): each row of a
// product of several gives the bits that row's product alone gives, and
// oneDNN's values, with every epilogue, in float32 and bfloat16 panels, on
// one to three threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/engines/dot_panel_tiles.h"
#include "kernels/cpu/engines/few_rows_product.h"
#include "kernels/cpu/engines/panel_tiles.h"
#include "kernels/cpu/util/prepared_weights.h"
#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/thread_pool.h"
#include "product_cases.h"

namespace opgraph::kernels {
namespace {

// 600 rows of w: no multiple of the tiles' blocks of 32; 309 columns: two
// panels of 128, then strips of 16, the last one padded.
constexpr int64_t kInner = 600, kColumns = 309;

// Row r of p alone: a one-row product on the same weight and epilogue.
Product row_of(const Product& p, int64_t r) {
  const auto row = [r](Operand o) {
    if (o.shape[0] != 1) o.data = static_cast<float*>(o.data) + r * o.strides[0];
    o.shape[0] = 1;
    return o;
  };
  Product alone = p;
  alone.a = row(p.a);
  alone.dst = row(p.dst);
  if (p.multiplier) alone.multiplier = row(*p.multiplier);
  return alone;
}

// Runs the case's product of c.m rows in a Session of `precision` on the
// panels, then each of its rows alone, and compares them bit for bit; then
// compares the values with oneDNN's float32 product, outside a Session.
void expect_rows_as_alone(const Case& c, int threads, Precision precision, bool backward = false) {
  SCOPED_TRACE(testing::Message() << c.m << " rows, " << threads << " threads, "
                                  << (precision == Precision::BFloat16 ? "bfloat16" : "float32") << " panels");
  const Tensors tensors(c);
  ThreadPool pool(threads);
  PreparedWeights prepared({false, true}, precision);
  const KernelContext session = prepared_context(pool, prepared), no_session{&pool};
  const Tensor out = Tensor::empty({c.m, c.n}, DType::Float32), alone = Tensor::empty({c.m, c.n}, DType::Float32);
  const Tensor expected = Tensor::empty({c.m, c.n}, DType::Float32);
  Product batch = tensors.product(c, out);
  batch.w_backward = backward;
  ASSERT_TRUE(few_rows_times_matrix(session, batch));
  const Product rows = tensors.product(c, alone);
  for (int64_t r = 0; r < c.m; ++r) ASSERT_TRUE(few_rows_times_matrix(session, row_of(rows, r)));
  EXPECT_EQ(prepared.forms(), 1u);  // one packed copy serves every row count
  run_product(no_session, tensors.product(c, expected), DType::Float32, /*reference=*/false);
  const float tolerance = precision == Precision::BFloat16 ? 5e-2f : 1e-4f;
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    const float got = out.data_ptr<float>()[i], want = expected.data_ptr<float>()[i];
    ASSERT_EQ(got, alone.data_ptr<float>()[i]) << "row " << i / c.n << ", column " << i % c.n;
    ASSERT_NEAR(got, want, tolerance * (1 + std::abs(want))) << "row " << i / c.n << ", column " << i % c.n;
  }
}

class FewRowsProduct : public testing::Test {
 protected:
  void SetUp() override {
    if (!runs_panel_rows()) GTEST_SKIP() << "products on the panels need AVX2 or AVX-512, which this CPU lacks";
  }
};

TEST_F(FewRowsProduct, RowsGiveTheirAloneBitsOnOneToThreeThreads) {
  for (int threads : {1, 2, 3}) {
    // 5, 7 and 13 rows end in a partial tile of rows; the last of each list is the most taken.
    for (int64_t m : {int64_t{2}, int64_t{5}, int64_t{6}, int64_t{7}, int64_t{13}, kMaxPanelRows}) {
      expect_rows_as_alone({.m = m, .k = kInner, .n = kColumns}, threads, Precision::Float32);
    }
    for (int64_t m : {int64_t{2}, int64_t{7}, kMaxBFloat16PanelRows}) {
      expect_rows_as_alone({.m = m, .k = kInner, .n = kColumns}, threads, Precision::BFloat16);
    }
  }
}

TEST_F(FewRowsProduct, WeightsStreamedFromMemorySplitTheirRowsAmongThreads) {
  // Past kCachedWeightBytes of streamed weights, a product of few columns
  // splits w's rows among its threads and prefetches; its rows still give
  // their alone bits.
  const std::shared_ptr<void> streamed = streamed_buffer(size_t{65} << 20);
  for (Precision precision : {Precision::Float32, Precision::BFloat16}) {
    for (int threads : {2, 3}) {
      expect_rows_as_alone({.m = 4, .k = kInner, .n = kColumns}, threads, precision);
      expect_rows_as_alone({.m = 7, .k = kInner, .n = 2048}, threads, precision);  // split by columns
    }
  }
}

TEST_F(FewRowsProduct, EveryEpilogueAndOrder) {
  const Case base{.m = 5, .k = kInner, .n = kColumns};
  for (Activation activation : {Activation::None, Activation::ReLU, Activation::GELU, Activation::SiLU}) {
    Case c = base;
    c.bias = true;
    c.activation = activation;
    expect_rows_as_alone(c, 2, Precision::Float32);
  }
  Case residual = base;
  residual.accumulate = residual.multiplier = true;
  residual.activation = Activation::SiLU;
  expect_rows_as_alone(residual, 2, Precision::Float32);
  Case conv1d = base;  // GPT-2's Conv1D stores its weight [k, n]
  conv1d.transposed_weight = false;
  expect_rows_as_alone(conv1d, 2, Precision::BFloat16, /*backward=*/true);
}

TEST_F(FewRowsProduct, LeavesOtherProductsAlone) {
  ThreadPool pool(2);
  PreparedWeights prepared({false, true}, Precision::Float32), prepared_bf16({false, true}, Precision::BFloat16);
  const KernelContext session = prepared_context(pool, prepared), no_session{&pool};
  const KernelContext bf16 = prepared_context(pool, prepared_bf16);
  const Case many{.m = kMaxPanelRows + 1, .k = kInner, .n = kColumns}, few{.m = 4, .k = kInner, .n = kColumns};
  const Case many_bf16{.m = kMaxBFloat16PanelRows + 1, .k = kInner, .n = kColumns};
  const Tensors many_tensors(many), few_tensors(few), many_bf16_tensors(many_bf16);
  const Tensor many_out = Tensor::zeros({many.m, many.n}, DType::Float32);
  const Tensor many_bf16_out = Tensor::zeros({many_bf16.m, many_bf16.n}, DType::Float32);
  const Tensor out = Tensor::zeros({few.m, few.n}, DType::Float32);
  EXPECT_FALSE(few_rows_times_matrix(session, many_tensors.product(many, many_out)));  // too many rows
  EXPECT_FALSE(few_rows_times_matrix(bf16, many_bf16_tensors.product(many_bf16, many_bf16_out)));
  EXPECT_FALSE(few_rows_times_matrix(no_session, few_tensors.product(few, out)));  // no Session to pack for
  Product changing = few_tensors.product(few, out);
  changing.constant_w = false;  // a weight that may change between calls
  EXPECT_FALSE(few_rows_times_matrix(session, changing));
  const Case transposed{.m = 4, .k = kInner, .n = kColumns, .transposed_a = true};
  EXPECT_FALSE(few_rows_times_matrix(session, Tensors(transposed).product(transposed, out)));  // a's rows strided
  for (int64_t i = 0; i < many.m * many.n; ++i) ASSERT_EQ(many_out.data_ptr<float>()[i], 0.0f);
  for (int64_t i = 0; i < many_bf16.m * many_bf16.n; ++i) ASSERT_EQ(many_bf16_out.data_ptr<float>()[i], 0.0f);
  for (int64_t i = 0; i < few.m * few.n; ++i) ASSERT_EQ(out.data_ptr<float>()[i], 0.0f);
}

// w's [k, n] view dequantized as a weight of `bits` with `group` rows per
// scale (0: all of them), rounding to nearest even: int8 scales each
// column's groups to [-127, 127]; int4 puts a group's weight of largest
// magnitude at -8 and the others in [-8, 7]. Not `symmetric`: a group's
// range, zero included, over [-128, 127] or [-8, 7], with an integer zero
// point (torchao's asymmetric mapping).
Tensor dequantized(const Operand& w, int bits, int64_t group, bool symmetric = true) {
  const int64_t k = w.shape[0], n = w.shape[1], rows = group == 0 ? k : group;
  Tensor out = Tensor::empty({k, n}, DType::Float32);
  const auto at = [&](int64_t q, int64_t j) {
    return static_cast<const float*>(w.data)[q * w.strides[0] + j * w.strides[1]];
  };
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t q0 = 0; q0 < k; q0 += rows) {
      if (!symmetric) {
        float low = 0, high = 0;
        for (int64_t q = q0; q < q0 + rows; ++q) low = std::min(low, at(q, j)), high = std::max(high, at(q, j));
        const float lowest = bits == 8 ? -128 : -8, highest = bits == 8 ? 127 : 7;
        const float scale = (high - low) / (highest - lowest);
        const float zero = scale > 0 ? std::clamp(lowest - std::nearbyint(low / scale), lowest, highest) : 0.0f;
        for (int64_t q = q0; q < q0 + rows; ++q) {
          const float scaled = scale > 0 ? std::nearbyint(at(q, j) * (1 / scale)) : 0.0f;
          out.data_ptr<float>()[q * n + j] = (std::clamp(scaled + zero, lowest, highest) - zero) * scale;
        }
        continue;
      }
      float largest = 0;
      for (int64_t q = q0; q < q0 + rows; ++q) {
        if (std::abs(at(q, j)) > std::abs(largest)) largest = at(q, j);
      }
      const float scale = bits == 8 ? std::abs(largest) / 127 : largest / -8;
      const float inverse = scale == 0 ? 0 : bits == 8 ? 127 / std::abs(largest) : 1 / scale;
      const float lowest = bits == 8 ? -127 : -8, highest = bits == 8 ? 127 : 7;
      for (int64_t q = q0; q < q0 + rows; ++q) {
        const float level = std::clamp(std::nearbyint(at(q, j) * inverse), lowest, highest);
        out.data_ptr<float>()[q * n + j] = level * scale;
      }
    }
  }
  return out;
}

// a's [m, k] view (contiguous rows) quantized per row and block of 32 to
// int8 and back, as Dot panels' products quantize it: symmetric, the
// block's largest magnitude at 127, rounding to nearest even.
Tensor block_dequantized(const Operand& a) {
  const int64_t m = a.shape[0], k = a.shape[1];
  Tensor out = Tensor::empty({m, k}, DType::Float32);
  for (int64_t r = 0; r < m; ++r) {
    const float* row = static_cast<const float*>(a.data) + r * a.strides[0];
    for (int64_t q0 = 0; q0 < k; q0 += 32) {
      float largest = 0;
      for (int64_t q = q0; q < q0 + 32; ++q) largest = std::max(largest, std::abs(row[q]));
      const float inverse = largest > 0 ? 127 / largest : 0.0f;
      for (int64_t q = q0; q < q0 + 32; ++q) {
        out.data_ptr<float>()[r * k + q] = std::nearbyint(row[q] * inverse) * (largest / 127);
      }
    }
  }
  return out;
}

// The case's product in a Session quantizing its weights to `bits` (and
// its activations, with `int8_activations`) against oneDNN's float32
// product on the dequantized operands; each row's bits against that row's
// product alone.
void expect_quantized_values(const Case& c, int threads, int bits, int64_t group, bool int8_activations = false,
                             bool symmetric = true) {
  SCOPED_TRACE(testing::Message() << c.m << " rows, " << threads << " threads, int" << bits << ", group " << group
                                  << (int8_activations ? ", int8 activations" : "")
                                  << (symmetric ? "" : ", zero points"));
  const Tensors tensors(c);
  ThreadPool pool(threads);
  PreparedWeights prepared(
      {false, true}, Precision::Float32,
      {.bits = bits, .group_size = group, .int8_activations = int8_activations, .symmetric = symmetric});
  const KernelContext session = prepared_context(pool, prepared), no_session{&pool};
  const Tensor out = Tensor::empty({c.m, c.n}, DType::Float32), alone = Tensor::empty({c.m, c.n}, DType::Float32);
  const Tensor expected = Tensor::empty({c.m, c.n}, DType::Float32);
  ASSERT_TRUE(few_rows_times_matrix(session, tensors.product(c, out)));
  const Product rows = tensors.product(c, alone);
  for (int64_t r = 0; r < c.m; ++r) ASSERT_TRUE(few_rows_times_matrix(session, row_of(rows, r)));
  EXPECT_EQ(prepared.forms(), 1u);
  Product reference = tensors.product(c, expected);
  const Tensor w = dequantized(reference.w, bits, group, symmetric);
  reference.w = operand(w, 2);
  const Tensor a = int8_activations ? block_dequantized(reference.a) : Tensor();
  if (int8_activations) reference.a = operand(a, 2);
  run_product(no_session, reference, DType::Float32, /*reference=*/false);
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    const float got = out.data_ptr<float>()[i], want = expected.data_ptr<float>()[i];
    ASSERT_EQ(got, alone.data_ptr<float>()[i]) << "row " << i / c.n << ", column " << i % c.n;
    ASSERT_NEAR(got, want, 1e-4f * (1 + std::abs(want))) << "row " << i / c.n << ", column " << i % c.n;
  }
}

TEST_F(FewRowsProduct, QuantizedWeightsGiveTheirDequantizedProduct) {
  constexpr int64_t k = 640;  // groups of 32 and 320 rows
  for (int bits : {8, 4}) {
    for (int64_t group : {int64_t{0}, int64_t{32}, int64_t{320}}) {
      for (int threads : {1, 3}) {
        // 200 rows run 64 at a time.
        for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{200}}) {
          expect_quantized_values({.m = m, .k = k, .n = kColumns}, threads, bits, group);
        }
      }
    }
    Case epilogue{.m = 3, .k = k, .n = kColumns, .bias = true, .accumulate = true, .multiplier = true};
    epilogue.activation = Activation::SiLU;
    expect_quantized_values(epilogue, 2, bits, 0);
    Case conv1d{.m = 70, .k = k, .n = kColumns, .transposed_weight = false, .bias = true};
    expect_quantized_values(conv1d, 2, bits, 32);
    // Rows of w split among threads at no multiple of 32, each share's blocks within one group.
    const std::shared_ptr<void> streamed = streamed_buffer(size_t{65} << 20);
    expect_quantized_values({.m = 4, .k = 608, .n = kColumns}, 3, bits, 32);
    // Zero points: each group's offsets times its inputs' sum.
    for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{200}}) {
      expect_quantized_values({.m = m, .k = k, .n = kColumns}, 3, bits, bits == 8 ? 0 : 32, false, false);
    }
    expect_quantized_values({.m = 4, .k = 608, .n = kColumns}, 3, bits, 32, false, false);
  }
}

TEST_F(FewRowsProduct, Int8ActivationsGiveTheirBlockQuantizedProduct) {
  constexpr int64_t k = 640;
  for (int bits : {8, 4}) {
    for (int64_t group : {int64_t{0}, int64_t{32}, int64_t{320}}) {
      for (int threads : {1, 3}) {
        for (int64_t m : {int64_t{1}, int64_t{5}, int64_t{70}}) {
          expect_quantized_values({.m = m, .k = k, .n = kColumns}, threads, bits, group, true);
        }
      }
    }
    Case epilogue{.m = 3, .k = k, .n = kColumns, .bias = true, .accumulate = true, .multiplier = true};
    epilogue.activation = Activation::SiLU;
    expect_quantized_values(epilogue, 2, bits, 0, true);
    // Rows of w split among threads at whole blocks of 32.
    const std::shared_ptr<void> streamed = streamed_buffer(size_t{65} << 20);
    expect_quantized_values({.m = 4, .k = 608, .n = kColumns}, 3, bits, 32, true);
    // Zero points: each block's offsets times its activation block's sum.
    for (int64_t m : {int64_t{1}, int64_t{70}}) {
      expect_quantized_values({.m = m, .k = k, .n = kColumns}, 3, bits, bits == 8 ? 0 : 64, true, false);
    }
    expect_quantized_values({.m = 4, .k = 608, .n = kColumns}, 3, bits, 32, true, false);
  }
}

// The tiles' sums of `rows` rows of a on w's Element panels (quantized as
// `quantization` says) by each instruction set's copy, bit for bit.
template <typename Element>
void expect_every_set_alike(const WeightQuantization& quantization, int64_t rows) {
  SCOPED_TRACE(testing::Message() << rows << " rows, int" << quantization.bits << ", group " << quantization.group_size
                                  << (quantization.int8_activations ? ", int8 activations" : ""));
  const Case c{.m = rows, .k = 640, .n = kColumns};
  const Tensors tensors(c);
  ThreadPool pool(1);
  PreparedWeights prepared({false, true}, Precision::Float32, quantization);
  const Product p = tensors.product(c, Tensor::empty({c.m, c.n}, DType::Float32));
  const auto* w = static_cast<const float*>(p.w.data);
  const auto* a = static_cast<const float*>(p.a.data);
  const Panels<Element> panels =
      packed_panels<Element>(prepared_context(pool, prepared), w, c.k, c.n, p.w.strides[0], p.w.strides[1]);
  std::vector<float> wide(static_cast<size_t>(c.m * c.n)), narrow(wide.size());
  if constexpr (kIsDotElement<Element>) {
    const QuantizedActivations vnni = avx512_vnni::quantized_activations(a, c.k, c.m, c.k);
    const QuantizedActivations avx2_levels = avx2::quantized_activations(a, c.k, c.m, c.k);
    ASSERT_EQ(vnni.levels, avx2_levels.levels);
    ASSERT_EQ(vnni.scales, avx2_levels.scales);
    ASSERT_EQ(vnni.sums, avx2_levels.sums);
    avx512_vnni::add_dot_panel_rows(panels, vnni, c.m, 0, panels.count(), 0, c.k, false, true, wide.data(), c.n);
    avx2::add_dot_panel_rows(panels, vnni, c.m, 0, panels.count(), 0, c.k, false, true, narrow.data(), c.n);
  } else {
    avx512::add_panel_rows(panels, a, c.k, c.m, 0, panels.count(), 0, c.k, false, true, wide.data(), c.n);
    avx2::add_panel_rows(panels, a, c.k, c.m, 0, panels.count(), 0, c.k, false, true, narrow.data(), c.n);
  }
  for (size_t i = 0; i < wide.size(); ++i) ASSERT_EQ(wide[i], narrow[i]) << "row " << i / c.n << ", column " << i % c.n;
}

// A CPU with AVX-512 runs the AVX2 copies too; they give its copies' bits.
TEST_F(FewRowsProduct, AvxTwoTilesGiveTheAvx512TilesBits) {
  if (cpu_capability() != CpuCapability::Avx512) GTEST_SKIP() << "this CPU runs the AVX2 tiles only";
  for (int64_t rows : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{13}}) {
    expect_every_set_alike<float>({}, rows);
    expect_every_set_alike<BFloat16>({}, rows);
    expect_every_set_alike<int8_t>({.bits = 8}, rows);
    expect_every_set_alike<Int4Pair>({.bits = 4, .group_size = 32}, rows);
    expect_every_set_alike<int8_t>({.bits = 8, .group_size = 32, .symmetric = false}, rows);
    expect_every_set_alike<Int4Pair>({.bits = 4, .group_size = 32, .symmetric = false}, rows);
    if (!cpu_has_vnni()) continue;
    expect_every_set_alike<DotInt8>({.bits = 8, .int8_activations = true}, rows);
    expect_every_set_alike<DotInt4>({.bits = 4, .group_size = 64, .int8_activations = true}, rows);
    expect_every_set_alike<DotInt4>({.bits = 4, .group_size = 64, .int8_activations = true, .symmetric = false}, rows);
  }
}

TEST_F(FewRowsProduct, Int8GroupsThatDoNotDivideTheInputAreRefused) {
  ThreadPool pool(1);
  PreparedWeights prepared({false, true}, Precision::Float32, {.bits = 8, .group_size = 64});
  const KernelContext session = prepared_context(pool, prepared);
  const Case c{.m = 2, .k = kInner, .n = kColumns};
  const Tensors tensors(c);
  const Tensor out = Tensor::zeros({c.m, c.n}, DType::Float32);
  try {
    few_rows_times_matrix(session, tensors.product(c, out));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "weights int8: the group size 64 does not divide the input dimension 600 of a weight with 309 outputs");
  }
  for (int64_t i = 0; i < c.m * c.n; ++i) ASSERT_EQ(out.data_ptr<float>()[i], 0.0f);
}

}  // namespace
}  // namespace opgraph::kernels
