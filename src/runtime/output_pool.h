// Buffers for the outputs a Session hands to its callers: a buffer comes
// back to the pool when the caller lets go of the output (the last copy or
// view of it, a NumPy array or a DLPack export included), and a later run
// that needs as many bytes takes it again, as ONNX Runtime's arena keeps its
// output buffers.
//
// Allocating a large output anew on each run (GPT-2's and SmolLM's logits,
// 25 MB) maps fresh pages that the kernel writing it faults in one by one,
// and freeing it unmaps them again. In a process with many threads (PyTorch's,
// ONNX Runtime's and OpenVINO's pools beside opgraph's), those faults and
// unmappings took a third of those models' time at two threads.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

#include "opgraph/core/tensor.h"

namespace opgraph {

class OutputPool : public std::enable_shared_from_this<OutputPool> {
 public:
  // At most this many buffers wait in the pool; one more given back is freed.
  static constexpr size_t kMaxFreeBuffers = 16;

  OutputPool() = default;
  OutputPool(const OutputPool&) = delete;
  OutputPool& operator=(const OutputPool&) = delete;

  // A CPU tensor of `meta`, in a buffer given back earlier when one of its
  // size waits, else in a new one. Its storage goes back to the pool when
  // its last owner lets go, or is freed if the pool is gone by then.
  Tensor take(const TensorMeta& meta);

  size_t free_buffers() const;

 private:
  void give_back(const Tensor& buffer);

  mutable std::mutex mutex_;
  std::multimap<size_t, Tensor> free_;  // uint8 buffers, by size in bytes
};

}  // namespace opgraph
