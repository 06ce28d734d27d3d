#include "runtime/output_pool.h"

#include <cstdlib>

#include "opgraph/core/error.h"

namespace opgraph {

OutputPool::~OutputPool() {
  for (const auto& [bytes, buffer] : free_) std::free(buffer);
}

Tensor OutputPool::take(const TensorMeta& meta) {
  // As Tensor::empty allocates: whole alignment units, at least one.
  const size_t bytes =
      (std::max<size_t>(meta.nbytes(), 1) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  void* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.find(bytes); it != free_.end()) {
      buffer = it->second;
      free_.erase(it);
    }
  }
  if (buffer == nullptr) {
    buffer = std::aligned_alloc(kTensorAlignment, bytes);
    OPGRAPH_CHECK(buffer != nullptr, "out of memory allocating ", meta.nbytes(), " bytes for an output ", meta.str());
  }
  return Tensor::from_blob(buffer, meta.shape, {}, meta.dtype, [pool = weak_from_this(), buffer, bytes] {
    if (const std::shared_ptr<OutputPool> alive = pool.lock()) {
      alive->give_back(buffer, bytes);
    } else {
      std::free(buffer);
    }
  });
}

size_t OutputPool::free_buffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

void OutputPool::give_back(void* buffer, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < kMaxFreeBuffers) {
      free_.emplace(bytes, buffer);
      return;
    }
  }
  std::free(buffer);
}

}  // namespace opgraph
