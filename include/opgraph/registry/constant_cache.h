// What kernels may keep about a Session's weights. A weight's values stay the
// same for as long as the Session that owns the cache lives, so a kernel can
// keep what it derives from them (a convolution's weights converted to the
// blocked layout its oneDNN primitive runs on) and reuse it run after run,
// instead of converting on every call.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace opgraph {

class ConstantCache {
 public:
  // What decides the kept value: the weight's address and whatever else the
  // derivation depends on (shapes, the layout chosen).
  using Key = std::vector<int64_t>;

  // The value kept under `key`, made by make() on the first call. Made under
  // the lock: it happens once per weight, and concurrent runs then share it.
  template <typename Make>
  std::shared_ptr<const void> get(const Key& key, Make&& make) {
    std::lock_guard lock(mutex_);
    auto [entry, inserted] = values_.try_emplace(key);
    if (inserted) entry->second = make();
    return entry->second;
  }

 private:
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const void>> values_;
};

}  // namespace opgraph
