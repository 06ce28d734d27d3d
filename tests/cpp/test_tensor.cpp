// DTypes, Tensor allocation, views and copies.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "opgraph/core/dtype.h"
#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::arange;
using testing::error_of;

// The elements of a float32 tensor in row-major order, read through its strides.
std::vector<float> values(const Tensor& t) {
  std::vector<float> out;
  std::vector<int64_t> index(t.dim(), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    out.push_back(t.data_ptr<float>()[offset]);
    for (int64_t d = t.dim() - 1; d >= 0 && ++index[d] == t.size(d); --d) index[d] = 0;
  }
  return out;
}

float at(const Tensor& t, std::initializer_list<int64_t> index) {
  int64_t offset = 0;
  int64_t d = 0;
  for (int64_t i : index) offset += i * t.stride(d++);
  return t.data_ptr<float>()[offset];
}

bool is_aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kTensorAlignment == 0; }

// ---------------------------------------------------------------------------
// DType

struct DTypeCase {
  DType dtype;
  size_t itemsize;
  const char* name;
  const char* scalar_type;  // PyTorch's spelling
  bool floating;

  friend void PrintTo(const DTypeCase& c, std::ostream* os) { *os << c.name; }
};

class DTypeTest : public ::testing::TestWithParam<DTypeCase> {};

TEST_P(DTypeTest, ItemsizeAndNames) {
  const DTypeCase& c = GetParam();
  EXPECT_EQ(itemsize(c.dtype), c.itemsize);
  EXPECT_EQ(dtype_name(c.dtype), c.name);
  EXPECT_EQ(is_floating_point(c.dtype), c.floating);
  EXPECT_EQ(dtype_from_name(c.name), c.dtype);
  EXPECT_EQ(dtype_from_name(c.scalar_type), c.dtype);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, DTypeTest,
                         ::testing::Values(DTypeCase{DType::Float32, 4, "float32", "Float", true},
                                           DTypeCase{DType::Float64, 8, "float64", "Double", true},
                                           DTypeCase{DType::Float16, 2, "float16", "Half", true},
                                           DTypeCase{DType::BFloat16, 2, "bfloat16", "BFloat16", true},
                                           DTypeCase{DType::Int8, 1, "int8", "Char", false},
                                           DTypeCase{DType::UInt8, 1, "uint8", "Byte", false},
                                           DTypeCase{DType::Int32, 4, "int32", "Int", false},
                                           DTypeCase{DType::Int64, 8, "int64", "Long", false},
                                           DTypeCase{DType::Bool, 1, "bool", "Bool", false},
                                           DTypeCase{DType::Complex64, 8, "complex64", "ComplexFloat", false},
                                           DTypeCase{DType::Complex128, 16, "complex128", "ComplexDouble", false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DType, UnknownNames) {
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
  EXPECT_EQ(dtype_from_name("complex32"), std::nullopt);
  EXPECT_EQ(dtype_from_name("Float32"), std::nullopt);
}

TEST(DType, DTypeOfMatchesCppTypes) {
  EXPECT_EQ(dtype_of<float>, DType::Float32);
  EXPECT_EQ(dtype_of<double>, DType::Float64);
  EXPECT_EQ(dtype_of<int8_t>, DType::Int8);
  EXPECT_EQ(dtype_of<uint8_t>, DType::UInt8);
  EXPECT_EQ(dtype_of<int32_t>, DType::Int32);
  EXPECT_EQ(dtype_of<int64_t>, DType::Int64);
  EXPECT_EQ(dtype_of<bool>, DType::Bool);
  EXPECT_EQ(dtype_of<std::complex<float>>, DType::Complex64);
  EXPECT_EQ(dtype_of<std::complex<double>>, DType::Complex128);
}

TEST(DType, ComplexPartsAndPromotion) {
  EXPECT_TRUE(is_complex(DType::Complex64) && is_complex(DType::Complex128) && !is_complex(DType::Float64));
  EXPECT_EQ(real_part_dtype(DType::Complex64), DType::Float32);
  EXPECT_EQ(real_part_dtype(DType::Complex128), DType::Float64);
  EXPECT_EQ(real_part_dtype(DType::Int32), DType::Int32);
  EXPECT_EQ(complex_dtype_of(DType::Float32), DType::Complex64);
  EXPECT_EQ(complex_dtype_of(DType::Float64), DType::Complex128);
  EXPECT_EQ(complex_dtype_of(DType::Int64), std::nullopt);
}

TEST(DType, DeviceStr) {
  EXPECT_EQ(device_str(Device::cpu()), "cpu");
  EXPECT_EQ(device_str(Device{DeviceType::CUDA, 1}), "cuda:1");
}

// ---------------------------------------------------------------------------
// Allocation

TEST(TensorTest, UndefinedByDefault) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.data(), nullptr);
}

TEST(TensorTest, EmptyIsAligned) {
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{3}, Shape{7, 5}, Shape{0}, Shape{2, 0, 3}}) {
    for (DType dtype : {DType::Int8, DType::Float32, DType::Float64}) {
      Tensor t = Tensor::empty(shape, dtype);
      EXPECT_TRUE(t.defined());
      EXPECT_NE(t.data(), nullptr) << shape_str(shape);
      EXPECT_TRUE(is_aligned(t.data())) << shape_str(shape) << " " << dtype_name(dtype);
    }
  }
}

TEST(TensorTest, EmptyOnCudaThrows) {
  EXPECT_THROW(Tensor::empty({2}, DType::Float32, Device{DeviceType::CUDA, 0}), Error);
}

TEST(TensorTest, SizesBeyondAddressableMemoryAreErrors) {
  EXPECT_EQ((TensorMeta{DType::Float64, {3, 5}}.nbytes()), 120u);
  EXPECT_EQ((TensorMeta{DType::Float32, {1LL << 60}}.nbytes()), size_t{1} << 62);
  // 2^63 bytes: one more than ptrdiff_t holds.
  EXPECT_EQ(error_of([] { TensorMeta{DType::Float32, {1LL << 61}}.nbytes(); }),
            "float32[2305843009213693952] takes more bytes than memory can address");
  // The element count fits in int64, the byte count wraps size_t.
  EXPECT_EQ(error_of([] { Tensor::empty({1LL << 62, 4}, DType::Float64); }),
            "Tensor::empty: float64[4611686018427387904, 4] takes more bytes than memory can address");
  EXPECT_EQ(error_of([] { Tensor::empty({-1}, DType::Float32); }), "Tensor::empty: shape [-1] has a negative extent");
}

TEST(TensorTest, ZerosAreZero) {
  Tensor f = Tensor::zeros({5, 7}, DType::Float32);
  EXPECT_EQ(values(f), std::vector<float>(35, 0.0f));
  Tensor l = Tensor::zeros({9}, DType::Int64);
  for (int64_t i = 0; i < l.numel(); ++i) EXPECT_EQ(l.data_ptr<int64_t>()[i], 0);
  EXPECT_EQ(Tensor::zeros({0, 4}, DType::Float32).numel(), 0);
}

TEST(TensorTest, ShapeStridesNumelNbytes) {
  Tensor t = Tensor::empty({2, 3, 4}, DType::Float64);
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.itemsize(), 8u);
  EXPECT_EQ(t.nbytes(), 192u);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(0), 12);
  EXPECT_EQ(t.dtype(), DType::Float64);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.str(), "float64[2, 3, 4]");
  EXPECT_THROW(t.size(3), Error);
  EXPECT_THROW(t.stride(-4), Error);
}

TEST(TensorTest, ScalarTensorHasOneElement) {
  Tensor t = Tensor::empty({}, DType::Int32);
  EXPECT_EQ(t.dim(), 0);
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.nbytes(), 4u);
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorTest, ShapeNumel) {
  EXPECT_EQ(shape_numel(Shape{}), 1);
  EXPECT_EQ(shape_numel(Shape{2, 3, 4}), 24);
  EXPECT_EQ(shape_numel(Shape{2, 0, 4}), 0);
  EXPECT_EQ(shape_numel(Shape{std::numeric_limits<int64_t>::max(), 1}), std::numeric_limits<int64_t>::max());
}

TEST(TensorTest, ShapeNumelRejectsNegativeExtent) {
  EXPECT_THROW(shape_numel(Shape{2, -1}), Error);
  EXPECT_THROW(Tensor::empty({-3}, DType::Float32), Error);
}

TEST(TensorTest, ShapeNumelRejectsOverflow) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_THROW(shape_numel(Shape{big, big}), Error);
  EXPECT_THROW(shape_numel(Shape{std::numeric_limits<int64_t>::max(), 2}), Error);
  EXPECT_THROW(Tensor::empty({big, big}, DType::Float32), Error);
}

TEST(TensorTest, ContiguousStrides) {
  EXPECT_EQ(contiguous_strides(Shape{2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(contiguous_strides(Shape{}), Strides{});
}

// ---------------------------------------------------------------------------
// Borrowed memory

TEST(TensorTest, FromBlobWrapsWithoutCopy) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  Tensor t = Tensor::from_blob(buffer, {2, 3}, {}, DType::Float32);
  EXPECT_EQ(t.data(), buffer);
  EXPECT_EQ(t.strides(), (Strides{3, 1}));
  EXPECT_EQ(at(t, {1, 2}), 5.0f);
}

TEST(TensorTest, FromBlobWithStrides) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  Tensor t = Tensor::from_blob(buffer, {3, 2}, {1, 3}, DType::Float32);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(Tensor::from_blob(buffer, {3, 2}, {1}, DType::Float32), Error);
}

TEST(TensorTest, FromBlobNullData) {
  EXPECT_THROW(Tensor::from_blob(nullptr, {2}, {}, DType::Float32), Error);
  Tensor empty = Tensor::from_blob(nullptr, {0, 3}, {}, DType::Float32);
  EXPECT_TRUE(empty.defined());
  EXPECT_EQ(empty.numel(), 0);
}

TEST(TensorTest, FromBlobReleaseRunsOnceWhenLastViewDies) {
  float buffer[4] = {};
  int released = 0;
  auto t = std::make_unique<Tensor>(Tensor::from_blob(buffer, {4}, {}, DType::Float32, [&released] { ++released; }));
  auto view = std::make_unique<Tensor>(t->slice(0, 1, 3));
  EXPECT_EQ(t->storage_use_count(), 2);
  t.reset();
  EXPECT_EQ(released, 0);
  EXPECT_EQ(view->data(), buffer + 1);
  Tensor copy = *view;
  view.reset();
  EXPECT_EQ(released, 0);
  copy = Tensor();
  EXPECT_EQ(released, 1);
}

// ---------------------------------------------------------------------------
// Contiguity

TEST(TensorTest, IsContiguous) {
  Tensor t = arange({3, 4});
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.transpose(0, 1).is_contiguous());
  EXPECT_FALSE(t.slice(1, 0, 4, 2).is_contiguous());
  EXPECT_FALSE(t.slice(1, 0, 2).is_contiguous());
  EXPECT_TRUE(t.slice(0, 1, 3).is_contiguous());
  EXPECT_FALSE(t.slice(0, 0, 3, 2).is_contiguous());
}

TEST(TensorTest, SizeOneDimsIgnoreTheirStride) {
  Tensor t = arange({6});
  EXPECT_TRUE(t.as_strided({2, 1, 3}, {3, 7, 1}).is_contiguous());
  EXPECT_TRUE(t.as_strided({1, 6}, {-5, 1}).is_contiguous());
  EXPECT_FALSE(t.as_strided({2, 1, 3}, {4, 1, 1}).is_contiguous());
}

TEST(TensorTest, ZeroElementTensorsAreContiguous) {
  for (const Shape& shape : {Shape{0}, Shape{0, 3}, Shape{3, 0}, Shape{2, 0, 3}}) {
    EXPECT_TRUE(Tensor::empty(shape, DType::Float32).is_contiguous()) << shape_str(shape);
  }
  EXPECT_TRUE(arange({3, 4}).slice(1, 2, 2).is_contiguous());
}

// ---------------------------------------------------------------------------
// Views

TEST(TensorTest, ViewSharesStorage) {
  Tensor t = arange({2, 6});
  Tensor v = t.view({3, 4});
  EXPECT_EQ(v.shape(), (Shape{3, 4}));
  EXPECT_EQ(v.strides(), (Strides{4, 1}));
  EXPECT_EQ(v.data(), t.data());
  EXPECT_TRUE(v.shares_storage_with(t));
  EXPECT_EQ(at(v, {2, 1}), 9.0f);
}

TEST(TensorTest, ViewInfersMinusOne) {
  Tensor t = arange({2, 6});
  EXPECT_EQ(t.view({-1, 3}).shape(), (Shape{4, 3}));
  EXPECT_EQ(t.view({-1}).shape(), (Shape{12}));
  EXPECT_EQ(t.view({2, -1, 2}).shape(), (Shape{2, 3, 2}));
}

TEST(TensorTest, ViewErrors) {
  Tensor t = arange({2, 6});
  EXPECT_THROW(t.transpose(0, 1).view({12}), Error);
  EXPECT_THROW(t.view({5}), Error);
  EXPECT_THROW(t.view({5, -1}), Error);
  EXPECT_THROW(t.view({-1, -1}), Error);
  EXPECT_THROW(t.view({-2, -6}), Error);
}

TEST(TensorTest, SliceWithStep) {
  Tensor t = arange({10});
  Tensor s = t.slice(0, 2, 8, 3);
  EXPECT_EQ(s.shape(), (Shape{2}));
  EXPECT_EQ(s.strides(), (Strides{3}));
  EXPECT_EQ(values(s), (std::vector<float>{2, 5}));
  EXPECT_EQ(values(t.slice(0, 1, 10, 4)), (std::vector<float>{1, 5, 9}));
}

TEST(TensorTest, SliceNegativeIndicesAndClamping) {
  Tensor t = arange({10});
  EXPECT_EQ(values(t.slice(0, -3, 10)), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(values(t.slice(0, -3, -1)), (std::vector<float>{7, 8}));
  EXPECT_EQ(t.slice(0, -100, 100).numel(), 10);
  EXPECT_EQ(values(t.slice(0, 8, 100)), (std::vector<float>{8, 9}));
  EXPECT_EQ(t.slice(0, 6, 3).numel(), 0);
  EXPECT_EQ(t.slice(0, 10, 20).numel(), 0);
}

TEST(TensorTest, SliceInnerDim) {
  Tensor s = arange({3, 4}).slice(-1, 1, 4, 2);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(s.strides(), (Strides{4, 2}));
  EXPECT_EQ(values(s), (std::vector<float>{1, 3, 5, 7, 9, 11}));
}

TEST(TensorTest, SliceErrors) {
  Tensor t = arange({3, 4});
  EXPECT_THROW(t.slice(0, 0, 2, 0), Error);
  EXPECT_THROW(t.slice(0, 0, 2, -1), Error);
  EXPECT_THROW(t.slice(2, 0, 2), Error);
}

TEST(TensorTest, Permute) {
  Tensor t = arange({2, 3, 4});
  const int64_t dims[] = {2, 0, 1};
  Tensor p = t.permute(dims);
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  EXPECT_TRUE(p.shares_storage_with(t));
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 2; ++j) {
      for (int64_t k = 0; k < 3; ++k) EXPECT_EQ(at(p, {i, j, k}), at(t, {j, k, i}));
    }
  }
  const int64_t negative[] = {-1, 0, 1};
  EXPECT_EQ(t.permute(negative).shape(), (Shape{4, 2, 3}));
}

TEST(TensorTest, PermuteErrors) {
  Tensor t = arange({2, 3, 4});
  const int64_t repeated[] = {0, 0, 1};
  const int64_t repeated_negative[] = {0, -3, 1};
  const int64_t too_few[] = {0, 1};
  const int64_t out_of_range[] = {0, 1, 3};
  EXPECT_THROW(t.permute(repeated), Error);
  EXPECT_THROW(t.permute(repeated_negative), Error);
  EXPECT_THROW(t.permute(too_few), Error);
  EXPECT_THROW(t.permute(out_of_range), Error);
}

TEST(TensorTest, Transpose) {
  Tensor t = arange({2, 3});
  Tensor tt = t.transpose(0, 1);
  EXPECT_EQ(tt.shape(), (Shape{3, 2}));
  EXPECT_EQ(tt.strides(), (Strides{1, 3}));
  EXPECT_EQ(values(tt), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.transpose(-1, -2).strides(), (Strides{1, 3}));
  EXPECT_THROW(t.transpose(0, 2), Error);
}

// ---------------------------------------------------------------------------
// Copies

TEST(TensorTest, ContiguousReturnsSelfWhenContiguous) {
  Tensor t = arange({2, 3});
  Tensor c = t.contiguous();
  EXPECT_EQ(c.data(), t.data());
  EXPECT_TRUE(c.shares_storage_with(t));
}

TEST(TensorTest, ContiguousCopiesPermuted) {
  Tensor t = arange({2, 3, 4});
  const int64_t dims[] = {1, 2, 0};
  Tensor p = t.permute(dims);
  Tensor c = p.contiguous();
  EXPECT_FALSE(c.shares_storage_with(t));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.shape(), (Shape{3, 4, 2}));
  EXPECT_EQ(c.strides(), (Strides{8, 2, 1}));
  const float* data = c.data_ptr<float>();
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t k = 0; k < 2; ++k) EXPECT_EQ(data[i * 8 + j * 2 + k], at(t, {k, i, j}));
    }
  }
}

TEST(TensorTest, CloneCopiesStorage) {
  Tensor t = arange({2, 3});
  Tensor c = t.clone();
  EXPECT_FALSE(c.shares_storage_with(t));
  EXPECT_NE(c.data(), t.data());
  EXPECT_EQ(values(c), values(t));
  c.data_ptr<float>()[0] = 42.0f;
  EXPECT_EQ(t.data_ptr<float>()[0], 0.0f);
}

TEST(TensorTest, CloneOfStridedIsContiguous) {
  Tensor c = arange({4, 6}).slice(1, 1, 6, 2).clone();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23}));
}

TEST(TensorTest, CopyBetweenStridedTensors) {
  Tensor src = arange({4, 6}).slice(1, 0, 6, 2);  // [4, 3], strides [6, 2]
  Tensor dst_base = Tensor::zeros({3, 4}, DType::Float32);
  Tensor dst = dst_base.transpose(0, 1);  // [4, 3], strides [1, 4]
  dst.copy_(src);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(at(dst_base, {j, i}), 6.0f * i + 2.0f * j);
  }
}

// Every item size (1, 2, 4 and 8 bytes) through a transposed copy, compared
// byte for byte: the strided copy has a row loop of its own for each.
TEST(TensorTest, TransposedCopyOfEveryItemSize) {
  for (DType dtype : {DType::UInt8, DType::BFloat16, DType::Int32, DType::Float64}) {
    Tensor src = Tensor::empty({3, 5}, dtype);
    auto* bytes = static_cast<uint8_t*>(src.data());
    for (size_t b = 0; b < src.nbytes(); ++b) bytes[b] = static_cast<uint8_t>(b * 7 + 1);
    Tensor dst = src.transpose(0, 1).contiguous();
    const size_t item = src.itemsize();
    for (int64_t i = 0; i < 5; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(
            std::memcmp(static_cast<const uint8_t*>(dst.data()) + (i * 3 + j) * item, bytes + (j * 5 + i) * item, item),
            0)
            << dtype_name(dtype) << " at " << i << ", " << j;
      }
    }
  }
}

TEST(TensorTest, CopyRejectsMismatch) {
  Tensor t = arange({2, 3});
  EXPECT_THROW(t.copy_(arange({3, 2})), Error);
  EXPECT_THROW(t.copy_(Tensor::zeros({2, 3}, DType::Float64)), Error);
}

TEST(TensorTest, CopyScalar) {
  Tensor dst = Tensor::zeros({}, DType::Float32);
  Tensor src = Tensor::empty({}, DType::Float32);
  *src.data_ptr<float>() = 3.5f;
  dst.copy_(src);
  EXPECT_EQ(*dst.data_ptr<float>(), 3.5f);
}

TEST(TensorTest, DataPtrChecksDType) {
  Tensor t = arange({2});
  EXPECT_NO_THROW(t.data_ptr<const float>());
  try {
    t.data_ptr<int32_t>();
    FAIL() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.data_ptr<double>(), Error);
}

// ---------------------------------------------------------------------------
// Zero-sized dimensions

TEST(TensorTest, ZeroSizedDims) {
  Tensor t = Tensor::empty({2, 0, 3}, DType::Float32);
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.nbytes(), 0u);
  EXPECT_EQ(t.slice(0, 0, 1).shape(), (Shape{1, 0, 3}));
  EXPECT_EQ(t.slice(2, 1, 3).shape(), (Shape{2, 0, 2}));
  EXPECT_EQ(t.transpose(0, 2).shape(), (Shape{3, 0, 2}));
  const int64_t dims[] = {1, 2, 0};
  EXPECT_EQ(t.permute(dims).shape(), (Shape{0, 3, 2}));
  EXPECT_EQ(t.view({0, 6}).shape(), (Shape{0, 6}));
  EXPECT_EQ(t.view({3, -1}).shape(), (Shape{3, 0}));
  EXPECT_THROW(t.view({-1, 0}), Error);  // any extent would do
  EXPECT_EQ(t.clone().shape(), t.shape());
  EXPECT_EQ(t.transpose(0, 2).contiguous().shape(), (Shape{3, 0, 2}));
  Tensor dst = Tensor::empty({3, 0, 2}, DType::Float32);
  EXPECT_NO_THROW(dst.copy_(t.transpose(0, 2)));
}

TEST(TensorTest, ViewOfZeroSizedTrailingDim) {
  Tensor t = Tensor::empty({3, 0}, DType::Float32);
  EXPECT_EQ(t.view({0, 3}).shape(), (Shape{0, 3}));
}

}  // namespace
}  // namespace opgraph
