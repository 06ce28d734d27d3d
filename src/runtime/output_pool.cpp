#include "runtime/output_pool.h"

namespace opgraph {

Tensor OutputPool::take(const TensorMeta& meta) {
  const size_t bytes = meta.nbytes();
  Tensor buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = free_.find(bytes); it != free_.end()) {
      buffer = std::move(it->second);
      free_.erase(it);
    }
  }
  if (!buffer.defined()) buffer = Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8);
  // The output borrows the buffer's memory; the buffer itself goes with the
  // release function, back to the pool or, if the pool is gone, away.
  void* data = buffer.data();
  return Tensor::from_blob(data, meta.shape, {}, meta.dtype, [pool = weak_from_this(), buffer = std::move(buffer)] {
    if (const std::shared_ptr<OutputPool> alive = pool.lock()) alive->give_back(buffer);
  });
}

size_t OutputPool::free_buffers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_.size();
}

void OutputPool::give_back(const Tensor& buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.size() < kMaxFreeBuffers) free_.emplace(buffer.nbytes(), buffer);
}

}  // namespace opgraph
