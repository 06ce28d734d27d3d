// The intra-op thread pool kernels split their loops over.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace opgraph {

class ThreadPool {
 public:
  using Task = std::function<void(int64_t begin, int64_t end)>;

  // `num_threads` counts the calling thread, so 1 means no workers.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Splits [begin, end) into at most num_threads() contiguous chunks of at
  // least `grain` iterations and runs task on each; the caller runs one chunk.
  // Rethrows the first exception a chunk threw. A call made while the pool is
  // busy (nested, or from another thread) runs inline on the caller.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const Task& task);

 private:
  void worker_loop(int index);
  void run_chunk(int index) noexcept;

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;  // one job at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  // The current job.
  const Task* task_ = nullptr;
  int64_t begin_ = 0, end_ = 0;
  int chunks_ = 0;
  int pending_ = 0;
  std::exception_ptr error_;
};

// The process-wide pool used by kernels. Defaults to the hardware threads.
ThreadPool& global_thread_pool();
// Replaces the pool; call it only while no kernel is running.
void set_num_threads(int num_threads);
int get_num_threads();

}  // namespace opgraph
