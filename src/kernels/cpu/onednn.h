// What the oneDNN-backed kernels share: one CPU engine, a stream that runs on
// as many threads as opgraph was given, and a cache for the primitives they make.
#pragma once

#include <omp.h>

#include <map>
#include <mutex>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

inline dnnl::engine& onednn_engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

// oneDNN runs on OpenMP threads: match opgraph's count before each call.
inline dnnl::stream onednn_stream(const KernelContext& context) {
  omp_set_num_threads(context.pool->num_threads());
  return dnnl::stream(onednn_engine());
}

// Making a primitive (checking descriptors, choosing an implementation,
// generating its code) can take longer than running it on a small problem,
// and a model runs the same few shapes over and over: kernels keep the
// primitives they made, keyed by everything that went into making them.
// Executing one primitive from several threads at once is safe.
class PrimitiveCache {
 public:
  using Key = std::vector<int64_t>;

  // The primitive for `key`, made by create() on first use. oneDNN plans a
  // primitive's split of the work for the thread count it is made under, so
  // that count is part of the key.
  template <typename Create>
  dnnl::primitive get(const KernelContext& context, Key key, Create&& create) {
    const int threads = context.pool->num_threads();
    key.push_back(threads);
    {
      std::lock_guard lock(mutex_);
      if (auto found = primitives_.find(key); found != primitives_.end()) return found->second;
    }
    omp_set_num_threads(threads);
    dnnl::primitive made = create();  // outside the lock: it may take milliseconds
    std::lock_guard lock(mutex_);
    // A bound on memory for programs that see endless shapes: start over.
    if (primitives_.size() >= kCapacity) primitives_.clear();
    return primitives_.try_emplace(std::move(key), std::move(made)).first->second;
  }

 private:
  static constexpr size_t kCapacity = 256;
  std::mutex mutex_;
  std::map<Key, dnnl::primitive> primitives_;
};

}  // namespace opgraph::kernels
