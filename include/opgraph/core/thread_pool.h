// The intra-op thread pool kernels split their loops over.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace opgraph {

// The threads are OpenMP's: a parallel_for runs on the calling thread's
// OpenMP team, the team oneDNN's kernels run on. With a pool of its own,
// opgraph's kernels (attention, elementwise ops, norms) and oneDNN's took
// turns on two sets of threads: one set spinning idle after its region held
// the cores the other needed (Whisper's encoder ran slower so on two
// threads), or, made to sleep at once, woke for every region (MobileNetV2
// took longer on two threads than on one).
class ThreadPool {
 public:
  using Task = std::function<void(int64_t begin, int64_t end)>;

  // `num_threads` counts the calling thread, so 1 means no other threads.
  explicit ThreadPool(int num_threads);
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Splits [begin, end) into at most num_threads() contiguous chunks of at
  // least `grain` iterations and runs task on each; the caller runs chunks
  // too, and whichever thread is free takes the next one, so a thread that
  // is slow to wake costs nothing. Rethrows the first exception a chunk
  // threw. A call made while the pool is busy (nested, or from another
  // thread) runs inline on the caller.
  void parallel_for(int64_t begin, int64_t end, int64_t grain, const Task& task);

 private:
  int num_threads_;
  std::mutex submit_mutex_;  // one job at a time
};

// The process-wide pool used by kernels. Defaults to the hardware threads.
ThreadPool& global_thread_pool();
// Replaces the pool; call it only while no kernel is running.
void set_num_threads(int num_threads);
int get_num_threads();

}  // namespace opgraph
