// A bounded, thread-safe cache for what a oneDNN kernel builds before it can
// run: primitive descriptors, primitives and reorders. Building them (oneDNN
// tries its implementations one by one and generates code for the winner)
// takes longer than running a small convolution, and kernels are stateless,
// so the cache is the only place a built primitive can live between calls.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace opgraph::kernels {

template <typename Value>
class PrimitiveCache {
 public:
  // Everything that decides what gets built: shapes, attributes, the thread
  // count (oneDNN blocks its loops for the threads it will run on).
  using Key = std::vector<int64_t>;

  explicit PrimitiveCache(size_t capacity) : capacity_(capacity) {}

  // The value for `key`, from build() on a miss. Values are shared: a caller
  // keeps running one that a later call evicts.
  template <typename Build>
  std::shared_ptr<const Value> get(const Key& key, Build&& build) {
    {
      std::lock_guard lock(mutex_);
      if (auto found = entries_.find(key); found != entries_.end()) return touch(found);
    }
    // Built unlocked: other threads keep hitting the cache meanwhile. Two
    // threads missing the same key both build it, and the first one is kept.
    auto value = std::make_shared<const Value>(build());
    std::lock_guard lock(mutex_);
    if (auto found = entries_.find(key); found != entries_.end()) return touch(found);
    if (entries_.size() == capacity_) {
      entries_.erase(recent_.back());
      recent_.pop_back();
    }
    recent_.push_front(key);
    entries_.emplace(key, Entry{value, recent_.begin()});
    return value;
  }

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const {
      size_t hash = key.size();
      for (int64_t v : key) hash = hash * 1000003 ^ std::hash<int64_t>{}(v);
      return hash;
    }
  };
  struct Entry {
    std::shared_ptr<const Value> value;
    typename std::list<Key>::iterator position;  // in recent_
  };
  using Entries = std::unordered_map<Key, Entry, KeyHash>;

  // Marks an entry most recently used.
  std::shared_ptr<const Value> touch(typename Entries::iterator found) {
    recent_.splice(recent_.begin(), recent_, found->second.position);
    return found->second.value;
  }

  const size_t capacity_;
  std::mutex mutex_;
  Entries entries_;
  std::list<Key> recent_;  // most recently used first
};

}  // namespace opgraph::kernels
