// Zero-copy exchange with other frameworks through DLPack.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::arange;

// A DLManagedTensor as another framework would hand it over: it points into
// memory the test owns, and its deleter only counts its calls.
class ForeignTensor {
 public:
  ForeignTensor(void* data, std::vector<int64_t> shape, DLDataType dtype = {kDLFloat, 32, 1})
      : shape_(std::move(shape)) {
    DLTensor& dl = managed.dl_tensor;
    dl.data = data;
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape_.size());
    dl.dtype = dtype;
    dl.shape = shape_.data();
    dl.strides = nullptr;
    dl.byte_offset = 0;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor* self) { ++static_cast<ForeignTensor*>(self->manager_ctx)->deleter_calls; };
  }
  ForeignTensor(const ForeignTensor&) = delete;
  ForeignTensor& operator=(const ForeignTensor&) = delete;

  void set_strides(std::vector<int64_t> strides) {
    strides_ = std::move(strides);
    managed.dl_tensor.strides = strides_.data();
  }

  DLManagedTensor managed{};
  int deleter_calls = 0;

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
};

// Deletes an exported DLManagedTensor the way a consumer does.
struct DLDeleter {
  void operator()(DLManagedTensor* managed) const { managed->deleter(managed); }
};
using DLPtr = std::unique_ptr<DLManagedTensor, DLDeleter>;

std::vector<int64_t> dl_shape(const DLTensor& dl) { return {dl.shape, dl.shape + dl.ndim}; }
std::vector<int64_t> dl_strides(const DLTensor& dl) { return {dl.strides, dl.strides + dl.ndim}; }

// ---------------------------------------------------------------------------
// Export

TEST(DLPackTest, ExportFields) {
  Tensor t = arange({2, 3});
  DLPtr managed(t.to_dlpack());
  const DLTensor& dl = managed->dl_tensor;
  EXPECT_EQ(dl.data, t.data());
  EXPECT_EQ(dl.byte_offset, 0u);
  EXPECT_EQ(dl.device.device_type, kDLCPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.dtype.code, kDLFloat);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(dl_shape(dl), (std::vector<int64_t>{2, 3}));
  ASSERT_NE(dl.strides, nullptr);
  EXPECT_EQ(dl_strides(dl), (std::vector<int64_t>{3, 1}));
}

TEST(DLPackTest, ExportStridedView) {
  Tensor t = arange({4, 6}).slice(1, 1, 6, 2).transpose(0, 1);
  DLPtr managed(t.to_dlpack());
  const DLTensor& dl = managed->dl_tensor;
  EXPECT_EQ(dl.data, t.data());
  EXPECT_EQ(dl_shape(dl), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(dl_strides(dl), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(static_cast<const float*>(dl.data)[0], 1.0f);
}

struct DTypeCode {
  DType dtype;
  uint8_t code;
  uint8_t bits;

  friend void PrintTo(const DTypeCode& c, std::ostream* os) { *os << dtype_name(c.dtype); }
};

class DLPackDTypeTest : public ::testing::TestWithParam<DTypeCode> {};

TEST_P(DLPackDTypeTest, ExportAndImportCode) {
  const DTypeCode& c = GetParam();
  Tensor t = Tensor::zeros({3}, c.dtype);
  DLPtr exported(t.to_dlpack());
  EXPECT_EQ(exported->dl_tensor.dtype.code, c.code);
  EXPECT_EQ(exported->dl_tensor.dtype.bits, c.bits);
  EXPECT_EQ(exported->dl_tensor.dtype.lanes, 1);

  ForeignTensor foreign(t.data(), {3}, DLDataType{c.code, c.bits, 1});
  EXPECT_EQ(Tensor::from_dlpack(&foreign.managed).dtype(), c.dtype);
  EXPECT_EQ(foreign.deleter_calls, 1);
}

INSTANTIATE_TEST_SUITE_P(
    AllDTypes, DLPackDTypeTest,
    ::testing::Values(DTypeCode{DType::Float32, kDLFloat, 32}, DTypeCode{DType::Float64, kDLFloat, 64},
                      DTypeCode{DType::Float16, kDLFloat, 16}, DTypeCode{DType::BFloat16, kDLBfloat, 16},
                      DTypeCode{DType::Int8, kDLInt, 8}, DTypeCode{DType::UInt8, kDLUInt, 8},
                      DTypeCode{DType::Int32, kDLInt, 32}, DTypeCode{DType::Int64, kDLInt, 64},
                      DTypeCode{DType::Bool, 6, 8},  // kDLBool in DLPack >= 0.8
                      DTypeCode{DType::Complex64, kDLComplex, 64}, DTypeCode{DType::Complex128, kDLComplex, 128}),
    [](const auto& info) { return std::string(dtype_name(info.param.dtype)); });

TEST(DLPackTest, ExportHoldsStorageUntilDeleted) {
  Tensor t = arange({4});
  EXPECT_EQ(t.storage_use_count(), 1);
  DLManagedTensor* managed = t.to_dlpack();
  EXPECT_EQ(t.storage_use_count(), 2);
  managed->deleter(managed);
  EXPECT_EQ(t.storage_use_count(), 1);
}

TEST(DLPackTest, ExportOutlivesTensor) {
  float buffer[4] = {1, 2, 3, 4};
  int released = 0;
  auto t = std::make_unique<Tensor>(Tensor::from_blob(buffer, {4}, {}, DType::Float32, [&] { ++released; }));
  DLManagedTensor* managed = t->to_dlpack();
  t.reset();
  EXPECT_EQ(released, 0);
  EXPECT_EQ(managed->dl_tensor.data, buffer);
  EXPECT_EQ(managed->dl_tensor.shape[0], 4);
  managed->deleter(managed);
  EXPECT_EQ(released, 1);
}

TEST(DLPackTest, ExportUndefinedThrows) { EXPECT_THROW(Tensor().to_dlpack(), Error); }

// ---------------------------------------------------------------------------
// Import

TEST(DLPackTest, ImportIsZeroCopy) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  ForeignTensor foreign(buffer, {2, 3});
  Tensor t = Tensor::from_dlpack(&foreign.managed);
  EXPECT_EQ(t.data(), buffer);
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.strides(), (Strides{3, 1}));  // null strides mean row-major
  EXPECT_TRUE(t.is_contiguous());
  t.data_ptr<float>()[4] = 40.0f;
  EXPECT_EQ(buffer[4], 40.0f);
}

TEST(DLPackTest, ImportDeleterRunsOnceWhenLastViewDies) {
  float buffer[6] = {};
  ForeignTensor foreign(buffer, {2, 3});
  auto t = std::make_unique<Tensor>(Tensor::from_dlpack(&foreign.managed));
  auto view = std::make_unique<Tensor>(t->transpose(0, 1));
  t.reset();
  EXPECT_EQ(foreign.deleter_calls, 0);
  view.reset();
  EXPECT_EQ(foreign.deleter_calls, 1);
}

TEST(DLPackTest, ImportHonorsByteOffset) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  ForeignTensor foreign(buffer, {2, 2});
  foreign.managed.dl_tensor.byte_offset = 2 * sizeof(float);
  Tensor t = Tensor::from_dlpack(&foreign.managed);
  EXPECT_EQ(t.data(), buffer + 2);
  EXPECT_EQ(t.data_ptr<float>()[0], 2.0f);
  EXPECT_EQ(t.data_ptr<float>()[3], 5.0f);
}

TEST(DLPackTest, ImportStrides) {
  float buffer[6] = {0, 1, 2, 3, 4, 5};
  ForeignTensor foreign(buffer, {2, 3});
  foreign.set_strides({1, 2});
  Tensor t = Tensor::from_dlpack(&foreign.managed);
  EXPECT_EQ(t.strides(), (Strides{1, 2}));
  EXPECT_FALSE(t.is_contiguous());
  Tensor c = t.contiguous();
  EXPECT_EQ(std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + 6), (std::vector<float>{0, 2, 4, 1, 3, 5}));
}

TEST(DLPackTest, ImportCudaHostMemoryAsCpu) {
  float buffer[2] = {};
  ForeignTensor foreign(buffer, {2});
  foreign.managed.dl_tensor.device = {kDLCUDAHost, 0};
  EXPECT_EQ(Tensor::from_dlpack(&foreign.managed).device(), Device::cpu());
}

// Ownership passes to from_dlpack even when it rejects the tensor.
void expect_rejected(ForeignTensor& foreign, const std::string& message_part) {
  try {
    Tensor::from_dlpack(&foreign.managed);
    ADD_FAILURE() << "expected opgraph::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
  }
  EXPECT_EQ(foreign.deleter_calls, 1);
}

TEST(DLPackTest, ImportRejectsComplexHalf) {
  float buffer[4] = {};
  ForeignTensor foreign(buffer, {2}, DLDataType{kDLComplex, 32, 1});
  expect_rejected(foreign, "unsupported DLPack dtype");
}

TEST(DLPackTest, ImportRejectsVectorLanes) {
  float buffer[8] = {};
  ForeignTensor foreign(buffer, {2}, DLDataType{kDLFloat, 32, 4});
  expect_rejected(foreign, "lanes=4");
}

TEST(DLPackTest, ImportRejectsUnsupportedBits) {
  int16_t buffer[2] = {};
  ForeignTensor foreign(buffer, {2}, DLDataType{kDLInt, 16, 1});
  expect_rejected(foreign, "bits 16");
}

// Device memory is never read on import or export, so these run without a GPU.
TEST(DLPackTest, ImportCudaKeepsPointerDeviceAndProducer) {
  float device_memory[6] = {};  // stands for a cudaMalloc'ed buffer
  ForeignTensor foreign(device_memory, {2, 3});
  foreign.managed.dl_tensor.device = {kDLCUDA, 1};
  {
    Tensor t = Tensor::from_dlpack(&foreign.managed);
    EXPECT_EQ(t.data(), device_memory);
    EXPECT_EQ(t.device(), (Device{DeviceType::CUDA, 1}));
    Tensor view = t.slice(1, 1, 3);
    t = Tensor();
    EXPECT_EQ(foreign.deleter_calls, 0);  // the view still holds the producer's tensor
  }
  EXPECT_EQ(foreign.deleter_calls, 1);
}

TEST(DLPackTest, CudaTensorExportsWithItsDevice) {
  float device_memory[4] = {};
  Tensor t = Tensor::from_blob(device_memory, {4}, {}, DType::Float32, {}, Device{DeviceType::CUDA, 2});
  DLPtr exported(t.to_dlpack());
  EXPECT_EQ(exported->dl_tensor.data, device_memory);
  EXPECT_EQ(exported->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(exported->dl_tensor.device.device_id, 2);
}

TEST(DLPackTest, ImportCudaManagedMemoryAsCuda) {
  float buffer[2] = {};
  ForeignTensor foreign(buffer, {2});
  foreign.managed.dl_tensor.device = {kDLCUDAManaged, 0};
  EXPECT_EQ(Tensor::from_dlpack(&foreign.managed).device(), (Device{DeviceType::CUDA, 0}));
}

TEST(DLPackTest, ImportRejectsOtherDevices) {
  float buffer[2] = {};
  ForeignTensor foreign(buffer, {2});
  foreign.managed.dl_tensor.device = {kDLVulkan, 0};
  expect_rejected(foreign, "DLPack device type 7 is not supported");
}

TEST(DLPackTest, ImportNullThrows) { EXPECT_THROW(Tensor::from_dlpack(nullptr), Error); }

// ---------------------------------------------------------------------------
// Round trip

TEST(DLPackTest, RoundTripSharesData) {
  Tensor t = arange({2, 3});
  Tensor back = Tensor::from_dlpack(t.to_dlpack());
  EXPECT_EQ(back.data(), t.data());
  EXPECT_EQ(back.meta(), t.meta());
  EXPECT_EQ(back.strides(), t.strides());
  EXPECT_EQ(t.storage_use_count(), 2);
  back.data_ptr<float>()[5] = -1.0f;
  EXPECT_EQ(t.data_ptr<float>()[5], -1.0f);
  back = Tensor();
  EXPECT_EQ(t.storage_use_count(), 1);
}

TEST(DLPackTest, RoundTripKeepsOriginalStorageAlive) {
  float buffer[3] = {1, 2, 3};
  int released = 0;
  auto t = std::make_unique<Tensor>(Tensor::from_blob(buffer, {3}, {}, DType::Float32, [&] { ++released; }));
  Tensor back = Tensor::from_dlpack(t->to_dlpack());
  t.reset();
  EXPECT_EQ(released, 0);
  EXPECT_EQ(back.data_ptr<float>()[2], 3.0f);
  back = Tensor();
  EXPECT_EQ(released, 1);
}

}  // namespace
}  // namespace opgraph
