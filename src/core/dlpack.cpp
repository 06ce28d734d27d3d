// DLPack import and export for Tensor (the unversioned DLManagedTensor, which
// NumPy, PyTorch, CuPy and JAX all produce and accept).
#include <dlpack/dlpack.h>

#include "opgraph/core/error.h"
#include "opgraph/core/tensor.h"

namespace opgraph {
namespace {

// DLPack 0.8 added a bool type code; Debian's dlpack 0.6 header predates it.
constexpr uint8_t kDLBoolCode = 6;

DLDataType to_dl(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {kDLFloat, 32, 1};
    case DType::Float64: return {kDLFloat, 64, 1};
    case DType::Float16: return {kDLFloat, 16, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
    case DType::Int8: return {kDLInt, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Int32: return {kDLInt, 32, 1};
    case DType::Int64: return {kDLInt, 64, 1};
    case DType::Bool: return {kDLBoolCode, 8, 1};
    case DType::Complex64: return {kDLComplex, 64, 1};
    case DType::Complex128: return {kDLComplex, 128, 1};
  }
  throw Error("to_dlpack: unknown dtype");
}

DType from_dl(DLDataType dl) {
  OPGRAPH_CHECK(dl.lanes == 1, "from_dlpack: vector types (lanes=", dl.lanes, ") are not supported");
  switch (dl.code) {
    case kDLFloat:
      if (dl.bits == 32) return DType::Float32;
      if (dl.bits == 64) return DType::Float64;
      if (dl.bits == 16) return DType::Float16;
      break;
    case kDLBfloat:
      if (dl.bits == 16) return DType::BFloat16;
      break;
    case kDLInt:
      if (dl.bits == 8) return DType::Int8;
      if (dl.bits == 32) return DType::Int32;
      if (dl.bits == 64) return DType::Int64;
      break;
    case kDLUInt:
      if (dl.bits == 8) return DType::UInt8;
      break;
    case kDLBoolCode:
      if (dl.bits == 8) return DType::Bool;
      break;
    case kDLComplex:
      if (dl.bits == 64) return DType::Complex64;
      if (dl.bits == 128) return DType::Complex128;
      break;
  }
  throw Error(detail::concat("from_dlpack: unsupported DLPack dtype (code ", int(dl.code), ", bits ", int(dl.bits),
                             "); opgraph holds float16/32/64, bfloat16, int8/32/64, uint8, "
                             "bool and complex64/128"));
}

// What an exported DLManagedTensor points into: it owns a reference to the
// tensor's storage plus the shape and strides arrays.
struct Export {
  DLManagedTensor managed{};
  Tensor tensor;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

}  // namespace

DLManagedTensor* Tensor::to_dlpack() const {
  OPGRAPH_CHECK(defined(), "to_dlpack: undefined tensor");
  auto* out = new Export{{}, *this, meta_.shape, strides_};
  DLTensor& dl = out->managed.dl_tensor;
  dl.data = data_;
  dl.device = {device_.type == DeviceType::CPU ? kDLCPU : kDLCUDA, device_.index};
  dl.ndim = static_cast<int32_t>(meta_.shape.size());
  dl.dtype = to_dl(meta_.dtype);
  dl.shape = out->shape.data();
  dl.strides = out->strides.data();
  dl.byte_offset = 0;
  out->managed.manager_ctx = out;
  out->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  return &out->managed;
}

Tensor Tensor::from_dlpack(DLManagedTensor* managed) {
  OPGRAPH_CHECK(managed != nullptr, "from_dlpack: null DLManagedTensor");
  auto release = [managed] {
    if (managed->deleter) managed->deleter(managed);
  };
  const DLTensor& dl = managed->dl_tensor;
  Device device;
  try {
    switch (dl.device.device_type) {
      case kDLCPU:
      case kDLCUDAHost:  // pinned host memory: the CPU reads it directly
        break;
      case kDLCUDA:
      case kDLCUDAManaged: device = {DeviceType::CUDA, dl.device.device_id}; break;
      default:
        throw Error(detail::concat("from_dlpack: DLPack device type ", int(dl.device.device_type),
                                   " is not supported; opgraph takes CPU (1), CUDA (2), CUDA host (3) and CUDA "
                                   "managed (13) memory"));
    }
    OPGRAPH_CHECK(dl.ndim >= 0, "from_dlpack: negative ndim ", dl.ndim);
    DType dtype = from_dl(dl.dtype);
    Shape shape(dl.shape, dl.shape + dl.ndim);
    Strides strides = dl.strides ? Strides(dl.strides, dl.strides + dl.ndim) : Strides{};
    void* data = static_cast<char*>(dl.data) + dl.byte_offset;
    return from_blob(data, std::move(shape), std::move(strides), dtype, release, device);
  } catch (...) {
    release();  // the consumer owns the capsule's contents once it has taken them
    throw;
  }
}

}  // namespace opgraph
