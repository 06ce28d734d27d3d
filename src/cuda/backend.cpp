// The CUDA backend: device memory from the stream-ordered allocator
// (cudaMallocFromPoolAsync, whose pool makes per-call and per-run
// allocations cheap), copies and the per-thread current stream. Built into
// libopgraph_cuda.so, which the core opens on first use
// (core/device_backend.cpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_guard.h"
#include "cuda/strided_copy.h"
#include "opgraph/core/device_backend.h"

namespace opgraph::cuda {
namespace {

// The stream each device's kernels run on, per thread (null: the legacy
// default stream).
thread_local std::unordered_map<int, cudaStream_t> current_streams;

class CudaBackend final : public DeviceBackend {
 public:
  explicit CudaBackend(int device_count) : device_count_(device_count), pools_(device_count) {}

  int device_count() const override { return device_count_; }

  void* allocate(size_t bytes, int index) override {
    DeviceGuard guard(index);
    const cudaStream_t stream = stream_of(index);
    void* memory = nullptr;
    std::lock_guard lock(mutex_);
    const cudaError_t status = cudaMallocFromPoolAsync(&memory, bytes, pool(index), stream);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it: running out of memory leaves the device usable
      throw Error(detail::concat("out of memory on cuda:", index, " allocating ", bytes, " bytes"));
    }
    if (status != cudaSuccess) throw_cuda_error(status, "cudaMallocFromPoolAsync");
    allocation_streams_[memory] = stream;
    return memory;
  }

  // Freed on the stream it was allocated on, after the work queued there.
  void deallocate(void* memory, int index) noexcept override {
    cudaStream_t stream = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = allocation_streams_.find(memory);
      if (it != allocation_streams_.end()) {
        stream = it->second;
        allocation_streams_.erase(it);
      }
    }
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(index);
    cudaFreeAsync(memory, stream);
    cudaSetDevice(previous);
  }

  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) override {
    const Device device = dst_device.type == DeviceType::CUDA ? dst_device : src_device;
    DeviceGuard guard(device.index);
    const cudaStream_t stream = stream_of(device.index);
    OPGRAPH_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
    // The host reads what it copied back as soon as copy_() returns.
    if (dst_device.type == DeviceType::CPU) OPGRAPH_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  void copy_strided(const Tensor& dst, const Tensor& src) override {
    DeviceGuard guard(dst.device().index);
    strided_copy(dst, src, stream_of(dst.device().index));
  }

  void fill_zero(void* memory, size_t bytes, int index) override {
    DeviceGuard guard(index);
    OPGRAPH_CUDA_CHECK(cudaMemsetAsync(memory, 0, bytes, stream_of(index)));
  }

  void* current_stream(int index) const override { return stream_of(index); }

  void set_current_stream(int index, void* stream) override {
    current_streams[index] = static_cast<cudaStream_t>(stream);
  }

  void synchronize(int index) override {
    DeviceGuard guard(index);
    OPGRAPH_CUDA_CHECK(cudaStreamSynchronize(stream_of(index)));
  }

  // Launch errors show at once; errors while a kernel runs show at the next
  // synchronization, which debug builds make here so that they name the op.
  void check_kernel(std::string_view op) override {
    cudaError_t status = cudaGetLastError();
#ifndef NDEBUG
    if (status == cudaSuccess) status = cudaDeviceSynchronize();
#endif
    if (status != cudaSuccess) {
      throw Error(detail::concat(op, ": its CUDA kernel failed: ", cudaGetErrorName(status), " (",
                                 cudaGetErrorString(status), ")"));
    }
  }

 private:
  static cudaStream_t stream_of(int index) {
    auto it = current_streams.find(index);
    return it == current_streams.end() ? nullptr : it->second;
  }

  // The device's own pool, made on its first allocation. The device's default
  // pool gives its memory back to the driver at every synchronization (a
  // release threshold of 0), so that a kernel's workspace, allocated and freed
  // on each call, was mapped anew on each call. This pool keeps what it was
  // given, as PyTorch's caching allocator does, without changing the default
  // pool that other libraries share.
  cudaMemPool_t pool(int index) {
    cudaMemPool_t& pool = pools_[index];
    if (pool != nullptr) return pool;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location = {cudaMemLocationTypeDevice, index};
    OPGRAPH_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep_all = UINT64_MAX;
    OPGRAPH_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all));
    return pool;
  }

  int device_count_;
  std::mutex mutex_;  // guards pools_ and allocation_streams_
  std::vector<cudaMemPool_t> pools_;
  std::unordered_map<void*, cudaStream_t> allocation_streams_;
};

// Why the runtime found no device, in terms a user can act on.
std::string explain(cudaError_t status) {
  switch (status) {
    case cudaErrorInsufficientDriver:
      return "no NVIDIA driver new enough for CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
             std::to_string(CUDART_VERSION % 1000 / 10) + " was found (libcuda.so.1 is missing or older)";
    case cudaErrorNoDevice: return "the NVIDIA driver reports no CUDA device";
    default:
      return detail::concat("cudaGetDeviceCount failed: ", cudaGetErrorName(status), " (", cudaGetErrorString(status),
                            ")");
  }
}

}  // namespace
}  // namespace opgraph::cuda

// The entry point the core looks up (see core/device_backend.cpp): null with
// the reason in `error` when this machine cannot run CUDA. The kernels are
// exported apart (kernels/cuda/register_all.cu).
extern "C" __attribute__((visibility("default"))) opgraph::DeviceBackend* opgraph_cuda_backend_open(
    std::string* error) {
  using namespace opgraph::cuda;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    *error = status == cudaSuccess ? "the NVIDIA driver reports no CUDA device" : explain(status);
    return nullptr;
  }
  static CudaBackend backend(count);
  return &backend;
}
