// Makes a device current for a scope and restores the previous one, since
// the CUDA runtime's current device is per thread and callers own it.
#pragma once

#include "cuda/cuda_check.h"

namespace opgraph::cuda {

class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    OPGRAPH_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != index) OPGRAPH_CUDA_CHECK(cudaSetDevice(index));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace opgraph::cuda
