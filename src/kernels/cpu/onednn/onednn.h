// What the oneDNN-backed kernels share: one CPU engine, a stream that runs on
// as many threads as opgraph was given, a cache for the primitives they make,
// and the scratch those primitives run in.
#pragma once

#include <omp.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/onednn/primitive_cache.h"
#include "opgraph/core/thread_pool.h"
#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

inline dnnl::engine& onednn_engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

// Whether oneDNN computes bfloat16 on this CPU: it needs AVX-512 (and
// emulates the bfloat16 instructions where the CPU has none); elsewhere it
// makes no bfloat16 primitive at all.
bool onednn_computes_bfloat16();

// The stream a kernel runs its oneDNN calls on. oneDNN runs on OpenMP
// threads: while a kernel's OneDnnStream lives, OpenMP's count is opgraph's,
// and the calling thread's count is given back after, as other libraries on
// that thread read it as their own (PyTorch's get_num_threads() read 1 after
// a Session on two threads ran a small product on the calling thread alone).
class OneDnnStream {
 public:
  explicit OneDnnStream(const KernelContext& context) : callers_threads_(omp_get_max_threads()) {
    omp_set_num_threads(context.pool->num_threads());
  }
  ~OneDnnStream() { omp_set_num_threads(callers_threads_); }
  OneDnnStream(const OneDnnStream&) = delete;
  OneDnnStream& operator=(const OneDnnStream&) = delete;

  // Each calling thread keeps its stream (making one allocates).
  operator dnnl::stream&() const {
    thread_local dnnl::stream stream(onednn_engine());
    return stream;
  }
  void wait() const { static_cast<dnnl::stream&>(*this).wait(); }

 private:
  int callers_threads_;
};

// Below this many flops a oneDNN call runs on the calling thread alone:
// waking oneDNN's OpenMP threads and splitting the work cost more than they
// save (a 16 -> 32 channel 3x3 convolution on 14x14 pixels, 1.8 MFLOP, took
// longer on two threads than on one; a training step of a small CNN at batch
// 32 took far longer on two busy cores than on one).
inline constexpr int64_t kSmallWorkFlops = 8'000'000;

// `context`, run on the calling thread alone.
inline KernelContext on_calling_thread(const KernelContext& context) {
  static ThreadPool calling_thread(1);
  KernelContext alone = context;
  alone.pool = &calling_thread;
  return alone;
}

// `context`, run on the calling thread alone when the call's work is small
// (below `bound` flops).
inline KernelContext context_for_work(const KernelContext& context, int64_t flops, int64_t bound = kSmallWorkFlops) {
  return flops < bound ? on_calling_thread(context) : context;
}

// The primitive (or plan holding one) for `key` in `cache`, made by create()
// on first use, under `stream`, the kernel's: oneDNN plans a primitive's
// split of the work for the thread count it is made under, which the stream
// set, so that count is part of the key. Executing one primitive from
// several threads at once is safe.
template <typename Value, typename Create>
std::shared_ptr<const Value> cached_primitive(PrimitiveCache<Value>& cache, const KernelContext& context,
                                              const OneDnnStream& /*stream*/, typename PrimitiveCache<Value>::Key key,
                                              Create&& create) {
  key.push_back(context.pool->num_threads());
  return cache.get(key, std::forward<Create>(create));
}

// `bytes` rounded up to whole kTensorAlignment blocks.
inline size_t aligned_size(size_t bytes) {
  return (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// `bytes` of memory for the calling thread's use until its next call, kept
// between calls (allocating a small convolution's converted operands on each
// call took a good part of its time).
void* thread_scratch(size_t bytes);

// `attr` for a primitive that takes its scratchpad from the caller. Every
// primitive made here is: in oneDNN's own ("library") mode, as Debian builds
// it, the scratchpad a primitive runs in is shared, so one cached primitive
// run by two threads at once had each overwrite the other's partial results
// (a Session's concurrent runs returned wrong products now and then).
// (float32 reorders and eltwise primitives have no scratchpad.)
inline dnnl::primitive_attr with_caller_scratchpad(dnnl::primitive_attr attr = {}) {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Runs `primitive` with `args` and, when `scratchpad` is not empty, the
// calling thread's scratch as its scratchpad.
inline void execute_with_scratchpad(const dnnl::primitive& primitive, dnnl::stream& stream,
                                    std::unordered_map<int, dnnl::memory> args, const dnnl::memory::desc& scratchpad) {
  if (scratchpad.get_size() > 0) {
    args.insert_or_assign(DNNL_ARG_SCRATCHPAD,
                          dnnl::memory(scratchpad, onednn_engine(), thread_scratch(scratchpad.get_size())));
  }
  primitive.execute(stream, args);
}

// A memory object for `desc` with no buffer yet: set_data_handle() gives it one per call.
inline dnnl::memory unbound_memory(const dnnl::memory::desc& desc) {
  return dnnl::memory(desc, onednn_engine(), DNNL_MEMORY_NONE);
}

// This thread's Call made from `plan` (a cached primitive and what it runs
// on), among the kKept made last: enough for every product of a model run
// after run (BERT-base has 72; with 64 kept, each run's calls pushed out the
// ones the next run needed first). A Call holds the oneDNN memory objects
// and argument map of its plan's executions: oneDNN allocates when it makes a
// memory object and frees when it destroys one, which cost much of a small
// convolution's time and most of a small product's; set_data_handle() points
// one at the next call's buffers for free.
template <typename Call, typename Plan>
Call& thread_call(const std::shared_ptr<const Plan>& plan) {
  constexpr size_t kKept = 512;
  thread_local std::vector<std::unique_ptr<Call>> calls;  // the most recently made last
  for (auto it = calls.rbegin(); it != calls.rend(); ++it) {
    if ((*it)->plan == plan) return **it;
  }
  if (calls.size() == kKept) calls.erase(calls.begin());
  calls.push_back(std::make_unique<Call>(plan));
  return *calls.back();
}

}  // namespace opgraph::kernels
