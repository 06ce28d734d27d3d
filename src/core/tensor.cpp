#include "opgraph/core/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>

#include "opgraph/core/device_backend.h"
#include "opgraph/core/error.h"

namespace opgraph {

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t extent : shape) {
    OPGRAPH_CHECK(extent >= 0, "shape ", shape_str(shape), " has a negative extent");
    OPGRAPH_CHECK(!__builtin_mul_overflow(n, extent, &n), "shape ", shape_str(shape),
                  " has more elements than fit in int64");
  }
  return n;
}

size_t shape_nbytes(std::span<const int64_t> shape, DType dtype) {
  size_t bytes = itemsize(dtype);
  for (int64_t extent : shape) {
    OPGRAPH_CHECK(extent >= 0, "shape ", shape_str(shape), " has a negative extent");
    OPGRAPH_CHECK(!__builtin_mul_overflow(bytes, static_cast<size_t>(extent), &bytes) && bytes <= kMaxAllocationBytes,
                  dtype_name(dtype), shape_str(shape), " takes more bytes than memory can address");
  }
  return bytes;
}

std::string shape_str(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

Strides contiguous_strides(std::span<const int64_t> shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

void throw_dtype_mismatch(DType expected, DType actual) {
  throw Error(detail::concat("tensor holds ", dtype_name(actual), ", accessed as ", dtype_name(expected)));
}

std::string TensorMeta::str() const { return std::string(dtype_name(dtype)) + shape_str(shape); }

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  size_t bytes = 0;
  try {
    bytes = shape_nbytes(shape, dtype);
  } catch (const Error& e) {
    throw Error(detail::concat("Tensor::empty: ", e.what()));
  }
  Tensor t;
  if (device.type == DeviceType::CPU) {
    // aligned_alloc needs a size that is a multiple of the alignment, and a
    // zero-size request may return null; round up (bytes is far below the
    // largest size_t, so this cannot wrap) and allocate at least once.
    size_t rounded = (std::max<size_t>(bytes, 1) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    void* memory = std::aligned_alloc(kTensorAlignment, rounded);
    OPGRAPH_CHECK(memory != nullptr, "Tensor::empty: out of memory allocating ", bytes, " bytes for ",
                  dtype_name(dtype), shape_str(shape));
    t.storage_ = std::shared_ptr<void>(memory, std::free);
  } else {
    check_device(device);
    DeviceBackend& backend = device_backend(device.type);
    void* memory = backend.allocate(std::max<size_t>(bytes, 1), device.index);
    t.storage_ =
        std::shared_ptr<void>(memory, [&backend, index = device.index](void* p) { backend.deallocate(p, index); });
  }
  t.data_ = t.storage_.get();
  t.strides_ = contiguous_strides(shape);
  t.meta_ = {dtype, std::move(shape)};
  t.numel_ = static_cast<int64_t>(bytes / opgraph::itemsize(dtype));
  t.device_ = device;
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t = empty(std::move(shape), dtype, device);
  if (device.type == DeviceType::CPU) {
    std::memset(t.data_, 0, t.nbytes());
  } else {
    device_backend(device.type).fill_zero(t.data_, t.nbytes(), device.index);
  }
  return t;
}

Tensor Tensor::from_blob(void* data, Shape shape, Strides strides, DType dtype, std::function<void()> release,
                         Device device) {
  OPGRAPH_CHECK(strides.empty() || strides.size() == shape.size(), "Tensor::from_blob: ", strides.size(),
                " strides given for a shape of rank ", shape.size());
  Tensor t;
  t.numel_ = shape_numel(shape);
  OPGRAPH_CHECK(data != nullptr || t.numel_ == 0, "Tensor::from_blob: null data for ", dtype_name(dtype),
                shape_str(shape));
  // The storage's address only identifies the owner; the release function is
  // what frees the memory. An empty blob may have no address at all.
  static char empty_blob;
  void* address = data ? data : &empty_blob;
  if (release) {
    t.storage_ = std::shared_ptr<void>(address, [release = std::move(release)](void*) { release(); });
  } else {
    // Nothing to release: a pointer that owns nothing, so borrowing costs no
    // allocation (op calls borrow every argument).
    t.storage_ = std::shared_ptr<void>(std::shared_ptr<void>(), address);
  }
  t.data_ = data;
  t.strides_ = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  t.meta_ = {dtype, std::move(shape)};
  t.device_ = device;
  return t;
}

static int64_t wrap_dim(int64_t d, int64_t rank, const char* what) {
  OPGRAPH_CHECK(d >= -rank && d < rank, what, ": dimension ", d, " is out of range for a tensor of rank ", rank);
  return d < 0 ? d + rank : d;
}

int64_t Tensor::size(int64_t d) const { return meta_.shape[wrap_dim(d, dim(), "Tensor::size")]; }
int64_t Tensor::stride(int64_t d) const { return strides_[wrap_dim(d, dim(), "Tensor::stride")]; }

bool Tensor::is_contiguous() const {
  if (numel_ == 0) return true;  // no element to misplace, as in PyTorch
  int64_t expected = 1;
  for (size_t i = meta_.shape.size(); i-- > 0;) {
    if (meta_.shape[i] != 1 && strides_[i] != expected) return false;
    expected *= meta_.shape[i];
  }
  return true;
}

Tensor Tensor::view(Shape shape) const {
  OPGRAPH_CHECK(is_contiguous(), "Tensor::view: needs a contiguous tensor; got ", str(), " with strides ",
                shape_str(strides_));
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      OPGRAPH_CHECK(inferred < 0, "Tensor::view: more than one -1 in ", shape_str(shape));
      inferred = static_cast<int64_t>(i);
    } else {
      OPGRAPH_CHECK(shape[i] >= 0, "Tensor::view: negative extent in ", shape_str(shape));
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    OPGRAPH_CHECK(known != 0 && numel_ % known == 0, "Tensor::view: cannot view ", str(), " as ", shape_str(shape));
    shape[inferred] = numel_ / known;
  }
  OPGRAPH_CHECK(shape_numel(shape) == numel_, "Tensor::view: cannot view ", str(), " (", numel_, " elements) as ",
                shape_str(shape));
  Strides strides = contiguous_strides(shape);
  return as_strided(std::move(shape), std::move(strides));
}

Tensor Tensor::as_strided(Shape shape, Strides strides, int64_t element_offset) const {
  OPGRAPH_CHECK(defined(), "Tensor::as_strided: undefined tensor");
  OPGRAPH_CHECK(shape.size() == strides.size(), "Tensor::as_strided: shape ", shape_str(shape), " and strides ",
                shape_str(strides), " differ in rank");
  Tensor t = *this;
  t.numel_ = shape_numel(shape);
  t.data_ = static_cast<char*>(data_) + element_offset * static_cast<int64_t>(itemsize());
  t.meta_.shape = std::move(shape);
  t.strides_ = std::move(strides);
  return t;
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = wrap_dim(d, dim(), "Tensor::slice");
  OPGRAPH_CHECK(step > 0, "Tensor::slice: step must be positive, got ", step);
  int64_t n = meta_.shape[d];
  auto clamp = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t{0}, n); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  Shape shape = meta_.shape;
  Strides strides = strides_;
  shape[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  return as_strided(std::move(shape), std::move(strides), start * strides_[d]);
}

Tensor Tensor::permute(std::span<const int64_t> dims) const {
  OPGRAPH_CHECK(static_cast<int64_t>(dims.size()) == dim(), "Tensor::permute: ", dims.size(),
                " dims given for a tensor of rank ", dim());
  Shape shape(dims.size());
  Strides strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "Tensor::permute");
    OPGRAPH_CHECK(!seen[d], "Tensor::permute: dimension ", dims[i], " repeats in ", shape_str(dims));
    seen[d] = true;
    shape[i] = meta_.shape[d];
    strides[i] = strides_[d];
  }
  return as_strided(std::move(shape), std::move(strides));
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  std::vector<int64_t> dims(meta_.shape.size());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[wrap_dim(dim0, dim(), "Tensor::transpose")], dims[wrap_dim(dim1, dim(), "Tensor::transpose")]);
  return permute(dims);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor t = empty(meta_.shape, meta_.dtype, device_);
  t.copy_(*this);
  return t;
}

namespace {

// One innermost row of n elements of `item` bytes at the given element steps.
// A compile-time item size lets each element's memcpy become one load and
// one store (a call per element made a transpose much slower).
template <size_t Item>
void copy_row(char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n) {
  if (dst_step == 1 && src_step == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * Item);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * dst_step * int64_t(Item), src + i * src_step * int64_t(Item), Item);
  }
}

void copy_any_row(size_t item, char* dst, int64_t dst_step, const char* src, int64_t src_step, int64_t n) {
  switch (item) {
    case 1: return copy_row<1>(dst, dst_step, src, src_step, n);
    case 2: return copy_row<2>(dst, dst_step, src, src_step, n);
    case 4: return copy_row<4>(dst, dst_step, src, src_step, n);
    case 8: return copy_row<8>(dst, dst_step, src, src_step, n);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + i * dst_step * int64_t(item), src + i * src_step * int64_t(item), item);
      }
  }
}

// Copies through both tensors' strides, one innermost row at a time.
void copy_on_host(const Tensor& dst, const Tensor& src) {
  const size_t item = dst.itemsize();
  if (dst.is_contiguous() && src.is_contiguous()) {
    std::memmove(dst.data(), src.data(), dst.nbytes());
    return;
  }
  const int64_t rank = dst.dim();
  const Shape& shape = dst.shape();
  std::vector<int64_t> index(rank, 0);
  const int64_t inner = rank ? shape[rank - 1] : 1;
  const int64_t dst_step = rank ? dst.strides()[rank - 1] : 0;
  const int64_t src_step = rank ? src.strides()[rank - 1] : 0;
  for (int64_t row = 0; row < dst.numel() / inner; ++row) {
    int64_t dst_offset = 0, src_offset = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      dst_offset += index[d] * dst.strides()[d];
      src_offset += index[d] * src.strides()[d];
    }
    copy_any_row(item, static_cast<char*>(dst.data()) + dst_offset * static_cast<int64_t>(item), dst_step,
                 static_cast<const char*>(src.data()) + src_offset * static_cast<int64_t>(item), src_step, inner);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

void copy_on_device(const Tensor& dst, const Tensor& src) {
  if (dst.device().type == DeviceType::CPU) {
    copy_on_host(dst, src);
  } else {
    device_backend(dst.device().type).copy_strided(dst, src);
  }
}

// Bytes move between devices contiguously: each side is gathered into (or
// scattered from) a contiguous tensor on its own device around one transfer.
void copy_across_devices(const Tensor& dst, const Tensor& src) {
  const DeviceType backend = dst.device().type != DeviceType::CPU ? dst.device().type : src.device().type;
  const Tensor packed_src = src.contiguous();
  const Tensor packed_dst = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
  device_backend(backend).copy_bytes(packed_dst.data(), packed_dst.device(), packed_src.data(), packed_src.device(),
                                     dst.nbytes());
  if (!packed_dst.shares_storage_with(dst)) copy_on_device(dst, packed_dst);
}

}  // namespace

void Tensor::copy_(const Tensor& src) {
  OPGRAPH_CHECK(src.meta_.dtype == meta_.dtype && src.meta_.shape == meta_.shape, "Tensor::copy_: cannot copy ",
                src.str(), " into ", str());
  // The same elements (an op writing its output over its input): nothing to copy.
  if (numel_ == 0 || (data_ == src.data_ && strides_ == src.strides_ && device_ == src.device_)) return;
  if (device_ == src.device_) {
    copy_on_device(*this, src);
  } else {
    copy_across_devices(*this, src);
  }
}

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(meta_.shape, meta_.dtype, device);
  t.copy_(*this);
  return t;
}

}  // namespace opgraph
