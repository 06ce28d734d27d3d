// The intra-op thread pool kernels split their loops over.
#pragma once

#include <atomic>
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
  // least `grain` iterations and runs task on each; the caller runs chunks
  // too, and whichever thread is free takes the next one, so a worker that
  // is slow to wake costs nothing. Rethrows the first exception a chunk
  // threw. A call made while the pool is busy (nested, or from another
  // thread) runs inline on the caller.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const Task& task);

 private:
  void worker_loop();
  // Waits for a job newer than `seen`; false when the pool is stopping.
  bool wait_for_job(uint64_t& seen);
  void join_job(uint64_t generation);
  void run_chunks() noexcept;

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_;  // one job at a time

  // A job is published by making generation_ even and new; it is odd while
  // the fields below are being written. A worker counts itself in active_
  // before reading them, and the next job waits for active_ to drop to 0.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};
  const Task* task_ = nullptr;
  int64_t begin_ = 0, end_ = 0;
  int chunks_ = 0;
  std::atomic<int> next_chunk_{0};
  std::atomic<int> finished_chunks_{0};
  std::mutex error_mutex_;
  std::exception_ptr error_;

  // Workers spin a little after a job (the next one often follows within
  // microseconds), then sleep here.
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<int> sleeping_{0};
  std::atomic<bool> stopping_{false};
};

// The process-wide pool used by kernels. Defaults to the hardware threads.
ThreadPool& global_thread_pool();
// Replaces the pool; call it only while no kernel is running.
void set_num_threads(int num_threads);
int get_num_threads();

}  // namespace opgraph
