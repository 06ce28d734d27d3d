// A device other than the CPU, as the core sees it: memory, copies and the
// stream its kernels are ordered on. The CUDA backend is its own library
// (libopgraph_cuda.so, built when OPGRAPH_CUDA is on) that the core opens the
// first time a CUDA tensor or kernel is asked for, as ONNX Runtime opens its
// CUDA execution provider: a CPU-only installation never loads a CUDA library.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "opgraph/core/dtype.h"

namespace opgraph {

class Tensor;

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  virtual int device_count() const = 0;
  // Memory for `bytes` on device `index`, ordered on that device's current
  // stream: it may be reused by later work on the stream once deallocated.
  // Throws opgraph::Error when out of memory.
  virtual void* allocate(size_t bytes, int index) = 0;
  virtual void deallocate(void* memory, int index) noexcept = 0;
  // Copies `bytes` contiguous bytes where either side (or both) is this
  // device, in stream order; a copy to the host returns once it is done.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) = 0;
  // Copies through both tensors' strides, both on this device, same dtype and shape.
  virtual void copy_strided(const Tensor& dst, const Tensor& src) = 0;
  virtual void fill_zero(void* memory, size_t bytes, int index) = 0;

  // The stream kernels on device `index` run on, as the CUDA runtime's
  // cudaStream_t: the calling thread's, as set_current_stream() set it, or the legacy
  // default stream (null), the one PyTorch and CuPy use unless told otherwise.
  virtual void* current_stream(int index) const = 0;
  virtual void set_current_stream(int index, void* stream) = 0;
  virtual void synchronize(int index) = 0;
  // After a kernel ran: throws opgraph::Error naming `op` if the device
  // reported an error (a launch failure, an illegal address).
  virtual void check_kernel(std::string_view op) = 0;
};

// Called with a backend's library (its dlopen handle) as the backend opens,
// before any caller gets the backend: the layer that owns the op registry
// (src/global_registry.cpp) sets it to take the kernels the library exports,
// so that the core knows nothing of kernels. If it throws, the backend stays
// unavailable, with the message as the reason.
using BackendLibraryHook = void (*)(DeviceType type, void* library);
void set_backend_library_hook(BackendLibraryHook hook);

// The backend for `type` (never for the CPU), opened on first use. Throws
// opgraph::Error saying why it cannot be had: not built, library missing, no
// driver, no device.
DeviceBackend& device_backend(DeviceType type);
// Whether device_backend(type) would succeed; `why` receives the reason if not.
bool device_available(DeviceType type, std::string* why = nullptr);
// Checks that `device` exists (its backend loads, its index is in range).
void check_device(Device device);

}  // namespace opgraph
