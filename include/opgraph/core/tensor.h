// Tensor: dtype + shape + strides over storage that is either owned (64-byte
// aligned, freed with the last reference) or borrowed (released through a
// caller-supplied deleter). Views share storage; strides count elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "opgraph/core/dtype.h"

struct DLManagedTensor;

namespace opgraph {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

inline constexpr size_t kTensorAlignment = 64;
// The most bytes one allocation (and pointer arithmetic across it) can span.
inline constexpr size_t kMaxAllocationBytes = static_cast<size_t>(PTRDIFF_MAX);

// Product of a shape's extents; throws on negative extents or int64 overflow.
int64_t shape_numel(std::span<const int64_t> shape);
// Bytes of a contiguous tensor of that shape; throws unless they fit in
// ptrdiff_t, the most any allocation (and pointer arithmetic) can span.
size_t shape_nbytes(std::span<const int64_t> shape, DType dtype);
std::string shape_str(std::span<const int64_t> shape);  // "[2, 3]"
Strides contiguous_strides(std::span<const int64_t> shape);
[[noreturn]] void throw_dtype_mismatch(DType expected, DType actual);

// What a shape function sees and returns: element type and shape.
struct TensorMeta {
  DType dtype = DType::Float32;
  Shape shape;

  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return shape_numel(shape); }
  size_t nbytes() const { return shape_nbytes(shape, dtype); }
  bool operator==(const TensorMeta&) const = default;
  std::string str() const;  // "float32[2, 3]"
};

class Tensor {
 public:
  Tensor() = default;  // undefined: stands for a `Tensor?` given as None

  // Memory on another device than the CPU comes from its backend
  // (device_backend.h), which throws opgraph::Error where it is unavailable.
  static Tensor empty(Shape shape, DType dtype, Device device = Device::cpu());
  static Tensor empty(const TensorMeta& meta, Device device = Device::cpu()) {
    return empty(meta.shape, meta.dtype, device);
  }
  static Tensor zeros(Shape shape, DType dtype, Device device = Device::cpu());
  // Wraps memory owned by someone else. `release` runs once, when the last
  // view of the tensor goes away (may be empty for memory that outlives it).
  static Tensor from_blob(void* data, Shape shape, Strides strides, DType dtype, std::function<void()> release = {},
                          Device device = Device::cpu());

  bool defined() const { return static_cast<bool>(storage_); }
  DType dtype() const { return meta_.dtype; }
  Device device() const { return device_; }
  const Shape& shape() const { return meta_.shape; }
  const Strides& strides() const { return strides_; }
  int64_t dim() const { return meta_.dim(); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t numel() const { return numel_; }
  size_t itemsize() const { return opgraph::itemsize(meta_.dtype); }
  size_t nbytes() const { return static_cast<size_t>(numel_) * itemsize(); }
  const TensorMeta& meta() const { return meta_; }
  std::string str() const { return meta_.str(); }

  void* data() const { return data_; }
  template <typename T>
  T* data_ptr() const;  // checks that T matches dtype()

  bool is_contiguous() const;
  // Number of owners of the storage: this tensor, its views and exports (0
  // for a from_blob() tensor without a release function: it owns nothing).
  long storage_use_count() const { return storage_.use_count(); }
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

  // Views (no copy). Each checks its arguments against the shape.
  Tensor view(Shape shape) const;  // requires is_contiguous()
  Tensor as_strided(Shape shape, Strides strides, int64_t element_offset = 0) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor permute(std::span<const int64_t> dims) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;

  // Copies.
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;
  // Same dtype and shape, any strides, any devices (a copy to the host
  // returns once the data is there; one to a device is stream-ordered).
  void copy_(const Tensor& src);
  Tensor to(Device device) const;  // *this when already there

  // DLPack, zero-copy, for CPU and CUDA memory. The export keeps this
  // tensor's storage alive until the consumer calls the deleter; the import
  // keeps the producer's tensor alive (by holding the DLManagedTensor) until
  // the last view here goes away. Stream synchronization is the caller's
  // part of the protocol (the Python bindings pass __dlpack__ their stream).
  DLManagedTensor* to_dlpack() const;
  static Tensor from_dlpack(DLManagedTensor* managed);

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  TensorMeta meta_;
  Strides strides_;
  int64_t numel_ = 0;
  Device device_;
};

template <typename T>
T* Tensor::data_ptr() const {
  if (meta_.dtype != dtype_of<std::remove_const_t<T>>) {
    throw_dtype_mismatch(dtype_of<std::remove_const_t<T>>, meta_.dtype);
  }
  return static_cast<T*>(data_);
}

}  // namespace opgraph
