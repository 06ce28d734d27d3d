// Complex tensors through the registry: the FFT ops on signals whose
// transforms are known in closed form, their round trip, and the complex
// views; run by the sanitizer build too.
#include <cmath>
#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "opgraph/registry/registry.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::error_of;

constexpr double kTolerance = 1e-9;

// A float64 tensor [rows, n] whose row r is a unit impulse at position r % n.
Tensor impulses(int64_t rows, int64_t n) {
  Tensor t = Tensor::empty({rows, n}, DType::Float64);
  double* x = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) x[i] = (i % n) == (i / n) % n ? 1.0 : 0.0;
  return t;
}

class FftSizes : public ::testing::TestWithParam<int64_t> {};

// The DFT of an impulse at p is X[k] = e^(-2 pi i kp/n): radix-2 and
// Bluestein lengths alike.
TEST_P(FftSizes, ImpulsesTransformToRootsOfUnity) {
  const int64_t n = GetParam(), rows = 3;
  const Tensor x = impulses(rows, n);
  const std::vector<Tensor> inputs{x};
  const Tensor spectrum =
      call("aten::_fft_r2c", inputs,
           {{"dim", std::vector<int64_t>{1}}, {"normalization", int64_t{0}}, {"onesided", false}})[0];
  ASSERT_EQ(spectrum.meta(), (TensorMeta{DType::Complex128, {rows, n}}));
  const auto* X = spectrum.data_ptr<std::complex<double>>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < n; ++k) {
      const std::complex<double> expected = std::polar(1.0, -2 * std::numbers::pi * double(k * (r % n)) / double(n));
      EXPECT_NEAR(std::abs(X[r * n + k] - expected), 0.0, kTolerance) << "n " << n << " row " << r << " k " << k;
    }
  }
}

TEST_P(FftSizes, RoundTripIsTheIdentity) {
  const int64_t n = GetParam();
  const Tensor x = impulses(4, n);
  const std::vector<Tensor> signal{x};
  const std::vector<Tensor> half = call(
      "aten::_fft_r2c", signal, {{"dim", std::vector<int64_t>{1}}, {"normalization", int64_t{0}}, {"onesided", true}});
  const Tensor back = call("aten::_fft_c2r", half,
                           {{"dim", std::vector<int64_t>{1}}, {"normalization", int64_t{2}}, {"last_dim_size", n}})[0];
  ASSERT_EQ(back.meta(), x.meta());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_NEAR(back.data_ptr<double>()[i], x.data_ptr<double>()[i], kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Lengths, FftSizes, ::testing::Values(1, 2, 3, 5, 8, 12, 17, 64, 100, 1000));

TEST(Complex, AbsAndViews) {
  Tensor z = Tensor::empty({2}, DType::Complex64);
  z.data_ptr<std::complex<float>>()[0] = {3, 4};
  z.data_ptr<std::complex<float>>()[1] = {-5, 12};
  const std::vector<Tensor> inputs{z};
  const Tensor magnitude = call("aten::abs", inputs)[0];
  ASSERT_EQ(magnitude.meta(), (TensorMeta{DType::Float32, {2}}));
  EXPECT_EQ(magnitude.data_ptr<float>()[0], 5.0f);
  EXPECT_EQ(magnitude.data_ptr<float>()[1], 13.0f);

  const std::vector<Tensor> pairs = call("aten::view_as_real", inputs);
  ASSERT_EQ(pairs[0].meta(), (TensorMeta{DType::Float32, {2, 2}}));
  EXPECT_EQ(pairs[0].data_ptr<float>()[3], 12.0f);
  const Tensor back = call("aten::view_as_complex", pairs)[0];
  EXPECT_EQ(back.data_ptr<std::complex<float>>()[1], std::complex<float>(-5, 12));
}

TEST(Complex, TransformErrorsNameTheArgument) {
  const std::vector<Tensor> real{impulses(2, 4)};
  const std::string message = error_of([&] {
    call("aten::_fft_c2c", real, {{"dim", std::vector<int64_t>{1}}, {"normalization", int64_t{0}}, {"forward", true}});
  });
  EXPECT_NE(message.find("aten::_fft_c2c: self: expected complex64 or complex128, got float64"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace opgraph
