// The state a Session prepares for a node that multiplies by weights (a
// product, a convolution, a recurrent layer): which of its inputs are the
// graph's constants, the precision the Session multiplies them in, and the
// forms the kernels derive from each constant weight (converted to the
// layout a oneDNN primitive chose, packed for MKL or for the one-row
// product, split per thread count). Which form a call needs depends on its
// shapes and threads, so each is made by the first call that needs it and
// kept for the node's later calls, of every run.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/mapped_pages.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

class PreparedWeights : public KernelState {
 public:
  // What decides a derived form: the weight's address and whatever else the
  // derivation depends on (shapes, the layout chosen, the thread count).
  using Key = std::vector<int64_t>;

  // `constant[i]`: whether flat input i is one of the graph's constants.
  PreparedWeights(std::vector<bool> constant, Precision precision, WeightQuantization quantization = {},
                  ProductEngine products = ProductEngine::Auto)
      : constant_(std::move(constant)), precision_(precision), quantization_(quantization), products_(products) {}

  bool is_constant(size_t input) const { return input < constant_.size() && constant_[input]; }
  Precision precision() const { return precision_; }
  const WeightQuantization& quantization() const { return quantization_; }
  ProductEngine products() const { return products_; }

  // Records that a product of the node ran on `engine` (a string literal:
  // the engine and why), once. Every product call notes its engine, so one
  // already noted is found without the lock.
  void note_engine(const char* engine) {
    for (const std::atomic<const char*>& slot : engines_) {
      const char* noted = slot.load(std::memory_order_acquire);
      if (noted == engine) return;
      if (noted == nullptr) break;
    }
    std::lock_guard lock(mutex_);
    for (std::atomic<const char*>& slot : engines_) {
      const char* noted = slot.load(std::memory_order_relaxed);
      if (noted == engine) return;
      if (noted == nullptr) return slot.store(engine, std::memory_order_release);
    }
  }
  // The engines noted, in the order first used.
  std::string describe() const override {
    std::string text;
    for (const std::atomic<const char*>& slot : engines_) {
      const char* engine = slot.load(std::memory_order_acquire);
      if (engine == nullptr) break;
      text += (text.empty() ? "" : "; ") + std::string(engine);
    }
    return text;
  }

  // The form kept under `key`, made by make() on the first call from the
  // weight's bytes `source`. Made under the lock: it happens once per form,
  // and concurrent runs then share it. Once it is made, the kernel reads the
  // form instead of the source: the source's pages in the file a Session
  // loaded leave resident memory (release_file_pages), and come back only
  // if something reads the weight in place again.
  template <typename Make>
  std::shared_ptr<const void> derived(const Key& key, std::span<const std::byte> source, Make&& make) {
    std::lock_guard lock(mutex_);
    auto [entry, inserted] = derived_.try_emplace(key);
    if (inserted) {
      entry->second = make();
      release_file_pages(source.data(), source.size());
    }
    return entry->second;
  }

  // How many forms it keeps.
  size_t forms() {
    std::lock_guard lock(mutex_);
    return derived_.size();
  }
  // The keys of the forms it keeps.
  std::vector<Key> form_keys() {
    std::lock_guard lock(mutex_);
    std::vector<Key> keys;
    for (const auto& [key, form] : derived_) keys.push_back(key);
    return keys;
  }
  // Drops the forms kept under `keys`: those of an engine the node no longer
  // runs on. A call still reading one keeps it alive until it returns.
  void forget(std::span<const Key> keys) {
    std::lock_guard lock(mutex_);
    for (const Key& key : keys) derived_.erase(key);
  }

 private:
  std::vector<bool> constant_;
  Precision precision_;
  WeightQuantization quantization_;
  ProductEngine products_;
  std::mutex mutex_;
  // More than run_product's engines and reasons: a node notes each once.
  std::array<std::atomic<const char*>, 16> engines_{};
  std::map<Key, std::shared_ptr<const void>> derived_;
};

// The bytes from `data` that elements of `itemsize` bytes at `strides`
// span, for `shape` (none where it holds no element).
std::span<const std::byte> spanned_bytes(const void* data, std::span<const int64_t> shape,
                                         std::span<const int64_t> strides, size_t itemsize);
inline std::span<const std::byte> spanned_bytes(const Tensor& t) {
  return spanned_bytes(t.data(), t.shape(), t.strides(), t.itemsize());
}

// Zeroed memory of `bytes` for a derived form that kernels stream from
// memory on every call (the one-row product's panels), in 2 MiB pages where
// the kernel gives them (Linux' transparent huge pages on request): with 4
// KiB pages, a decode step's walk over hundreds of MB of weights misses the
// TLB every few KiB. Buffers of up to a huge page are carved one after
// another from shared chunks of huge pages, so that the weights of a
// layer's small products, packed in the order its first run reaches them,
// lie in that order too: a product's prefetches past its end then fetch
// the next one's weight.
std::shared_ptr<void> streamed_buffer(size_t bytes);
// The bytes of every streamed_buffer alive in the process, chunks counted whole.
size_t streamed_bytes();

// OpDef::prepare of the ops whose kernels multiply by weights.
std::unique_ptr<KernelState> prepare_weights(const PrepareContext& context);

// The node's PreparedWeights; null for a call that no Session prepared.
inline PreparedWeights* prepared_weights(const KernelContext& context) {
  return dynamic_cast<PreparedWeights*>(context.state);
}
// A call's context on `pool` with `prepared` as its node's state, as a
// Session gives it.
inline KernelContext prepared_context(ThreadPool& pool, PreparedWeights& prepared) {
  KernelContext context{&pool};
  context.state = &prepared;
  return context;
}
// Whether input `i` of the call is one of a Session's constants.
inline bool is_constant_input(const KernelContext& context, size_t i) {
  const PreparedWeights* prepared = prepared_weights(context);
  return prepared != nullptr && prepared->is_constant(i);
}
// What the call's products with a constant weight multiply in.
inline Precision weight_precision(const KernelContext& context) {
  const PreparedWeights* prepared = prepared_weights(context);
  return prepared != nullptr ? prepared->precision() : Precision::Float32;
}
// The engine the call's float32 products with a constant weight run on.
inline ProductEngine product_engine(const KernelContext& context) {
  const PreparedWeights* prepared = prepared_weights(context);
  return prepared != nullptr ? prepared->products() : ProductEngine::Auto;
}
// Records that the call's product ran on `engine`, where a Session prepared it.
inline void note_engine(const KernelContext& context, const char* engine) {
  if (PreparedWeights* prepared = prepared_weights(context)) prepared->note_engine(engine);
}
// How the call's products keep a constant weight.
inline WeightQuantization weight_quantization(const KernelContext& context) {
  const PreparedWeights* prepared = prepared_weights(context);
  return prepared != nullptr ? prepared->quantization() : WeightQuantization{};
}

}  // namespace opgraph::kernels
