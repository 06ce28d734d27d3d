// Elementwise loops over operands of their own dtypes
// (kernels/cpu/util/elementwise.h): the dtype dispatch and its error, reading
// one element as another type, whole-number scalars, and map_broadcast's fast
// and reference loops over broadcast shapes, 0-d, empty and large.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/util/elementwise.h"
#include "opgraph/core/thread_pool.h"

namespace opgraph::kernels {
namespace {

using Ints = std::vector<int64_t>;

template <typename T>
Tensor filled(Shape shape, std::vector<T> values) {
  Tensor t = Tensor::empty(std::move(shape), dtype_of<T>);
  std::copy(values.begin(), values.end(), t.data_ptr<T>());
  return t;
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  const T* x = t.data_ptr<const T>();
  return std::vector<T>(x, x + t.numel());
}

TEST(DispatchElementwise, EachDtypeItsType) {
  auto size_of = [](DType dtype) {
    size_t size = 0;
    dispatch_elementwise(dtype, "self", [&](auto zero) { size = sizeof(zero); });
    return size;
  };
  EXPECT_EQ(size_of(DType::Float32), 4u);
  EXPECT_EQ(size_of(DType::Float64), 8u);
  EXPECT_EQ(size_of(DType::Int32), 4u);
  EXPECT_EQ(size_of(DType::Int64), 8u);
  EXPECT_EQ(size_of(DType::Bool), 1u);
}

TEST(DispatchElementwise, OthersNameTheArgument) {
  try {
    dispatch_elementwise(DType::Complex64, "other", [](auto) {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other: expected float32, float64, int64, int32 or bool, got complex64"),
              std::string::npos)
        << e.what();
  }
}

TEST(ElementAs, ConvertsFromEveryDtype) {
  EXPECT_EQ(element_as<double>(filled<float>({}, {2.5f})), 2.5);
  EXPECT_EQ(element_as<float>(filled<double>({3}, {1, 2, -0.5}), 2), -0.5f);
  EXPECT_EQ(element_as<int64_t>(filled<int32_t>({2}, {7, -9}), 1), -9);
  EXPECT_EQ(element_as<double>(filled<int64_t>({1}, {int64_t{1} << 40})), 1099511627776.0);
  EXPECT_EQ(element_as<int32_t>(filled<bool>({2}, {false, true}), 1), 1);
  EXPECT_TRUE(element_as<bool>(filled<float>({}, {0.5f})));
  EXPECT_FALSE(element_as<bool>(filled<int64_t>({}, {0})));
}

TEST(ElementAs, ComplexFromComplexAndFromReal) {
  Tensor c = Tensor::empty({}, DType::Complex64);
  c.data_ptr<std::complex<float>>()[0] = {1.5f, -2.0f};
  EXPECT_EQ(element_as<std::complex<double>>(c), std::complex<double>(1.5, -2.0));
  EXPECT_EQ(element_as<std::complex<float>>(filled<double>({}, {3.0})), std::complex<float>(3.0f, 0.0f));
}

TEST(ExactScalar, FloatsTakeAnyValue) {
  EXPECT_EQ(exact_scalar<float>(0.25, "value"), 0.25f);
  EXPECT_EQ(exact_scalar<double>(-1e300, "value"), -1e300);
}

TEST(ExactScalar, IntegersAndBoolsOnlyWholeNumbers) {
  EXPECT_EQ(exact_scalar<int64_t>(-3.0, "value"), -3);
  EXPECT_EQ(exact_scalar<int32_t>(0.0, "value"), 0);
  EXPECT_TRUE(exact_scalar<bool>(1.0, "value"));
  EXPECT_THROW(exact_scalar<bool>(0.5, "value"), Error);
  try {
    exact_scalar<int64_t>(2.5, "other");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("other: expected a whole number for a int64 tensor (no type promotion), got 2.5"),
        std::string::npos)
        << e.what();
  }
}

// out = a + 10 b with a [2, 3] (or as given) and b broadcast to it, in both loops.
template <bool kReference>
std::vector<double> add_scaled(ThreadPool& pool, Shape out_shape, const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(out_shape, DType::Float64);
  map_broadcast<double, kReference>(
      KernelContext{&pool}, out, [](float x, int32_t y) { return static_cast<double>(x) + 10.0 * y; },
      Input<float>{a.data_ptr<const float>(), a.shape()}, Input<int32_t>{b.data_ptr<const int32_t>(), b.shape()});
  return values<double>(out);
}

TEST(MapBroadcast, RowAndColumnOperands) {
  ThreadPool pool(2);
  const Tensor a = filled<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor row = filled<int32_t>({3}, {1, 2, 3});
  const Tensor column = filled<int32_t>({2, 1}, {1, 2});
  const std::vector<double> by_row{10, 21, 32, 13, 24, 35}, by_column{10, 11, 12, 23, 24, 25};
  EXPECT_EQ(add_scaled<false>(pool, {2, 3}, a, row), by_row);
  EXPECT_EQ(add_scaled<true>(pool, {2, 3}, a, row), by_row);
  EXPECT_EQ(add_scaled<false>(pool, {2, 3}, a, column), by_column);
  EXPECT_EQ(add_scaled<true>(pool, {2, 3}, a, column), by_column);
}

TEST(MapBroadcast, BothOperandsStretched) {
  ThreadPool pool(1);
  const Tensor a = filled<float>({3, 1}, {0, 1, 2});
  const Tensor b = filled<int32_t>({1, 2}, {1, 2});
  const std::vector<double> expected{10, 20, 11, 21, 12, 22};
  EXPECT_EQ(add_scaled<false>(pool, {3, 2}, a, b), expected);
  EXPECT_EQ(add_scaled<true>(pool, {3, 2}, a, b), expected);
}

TEST(MapBroadcast, ZeroDimAndOneElement) {
  ThreadPool pool(1);
  const Tensor a = filled<float>({}, {1.5f});
  const Tensor b = filled<int32_t>({}, {-1});
  EXPECT_EQ(add_scaled<false>(pool, {}, a, b), std::vector<double>{-8.5});
  EXPECT_EQ(add_scaled<true>(pool, {}, a, b), std::vector<double>{-8.5});
  // A 0-d operand stretched over [1, 1] and over [4].
  const Tensor one = filled<float>({1, 1}, {2.0f});
  EXPECT_EQ(add_scaled<false>(pool, {1, 1}, one, b), std::vector<double>{-8.0});
  const Tensor four = filled<float>({4}, {0, 1, 2, 3});
  EXPECT_EQ(add_scaled<false>(pool, {4}, four, b), (std::vector<double>{-10, -9, -8, -7}));
}

TEST(MapBroadcast, EmptyWritesNothing) {
  ThreadPool pool(1);
  const Tensor a = Tensor::empty({0, 3}, DType::Float32);
  const Tensor b = filled<int32_t>({3}, {1, 2, 3});
  EXPECT_TRUE(add_scaled<false>(pool, {0, 3}, a, b).empty());
  EXPECT_TRUE(add_scaled<true>(pool, {0, 3}, a, b).empty());
}

class MapBroadcastLarge : public ::testing::TestWithParam<int> {};

TEST_P(MapBroadcastLarge, FastMatchesReferenceAcrossThreads) {
  ThreadPool pool(GetParam());
  // 301 x 517 (odd sizes) is enough elements to split over the pool.
  const int64_t rows = 301, cols = 517;
  std::vector<float> av(rows * cols);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 97) * 0.25f;
  std::vector<int32_t> bv(rows);
  for (int64_t i = 0; i < rows; ++i) bv[i] = static_cast<int32_t>(i) - 150;
  const Tensor a = filled<float>({rows, cols}, av);
  const Tensor b = filled<int32_t>({rows, 1}, bv);
  const std::vector<double> fast = add_scaled<false>(pool, {rows, cols}, a, b);
  EXPECT_EQ(fast, add_scaled<true>(pool, {rows, cols}, a, b));
  EXPECT_EQ(fast[cols * 200 + 5], static_cast<double>(av[cols * 200 + 5]) + 10.0 * 50);
}

INSTANTIATE_TEST_SUITE_P(Threads, MapBroadcastLarge, ::testing::Values(1, 2, 3));

}  // namespace
}  // namespace opgraph::kernels
