#include "opgraph/core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {
// Set while a thread runs a chunk: a parallel_for inside a chunk runs inline.
thread_local bool inside_chunk = false;
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  OPGRAPH_CHECK(num_threads >= 1, "ThreadPool: num_threads must be at least 1, got ", num_threads);
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_chunk(int index) noexcept {
  const int64_t n = end_ - begin_;
  const int64_t lo = begin_ + n * index / chunks_;
  const int64_t hi = begin_ + n * (index + 1) / chunks_;
  inside_chunk = true;
  try {
    (*task_)(lo, hi);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::current_exception();
  }
  inside_chunk = false;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= chunks_) continue;
    }
    run_chunk(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain, const Task& task) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  const int chunks = static_cast<int>(std::min<int64_t>(num_threads(), n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1 || inside_chunk) {
    task(begin, end);
    return;
  }
  std::unique_lock<std::mutex> submit(submit_mutex_, std::try_to_lock);
  if (!submit.owns_lock()) {
    task(begin, end);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    task_ = &task;
    begin_ = begin;
    end_ = end;
    chunks_ = chunks;
    pending_ = chunks - 1;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  run_chunk(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  task_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

namespace {
std::mutex global_mutex;
std::unique_ptr<ThreadPool> global_pool;
// Read on every kernel call, so read without the lock once set.
std::atomic<ThreadPool*> current_pool{nullptr};
}  // namespace

ThreadPool& global_thread_pool() {
  if (ThreadPool* pool = current_pool.load(std::memory_order_acquire)) return *pool;
  std::lock_guard<std::mutex> lock(global_mutex);
  if (!global_pool) {
    global_pool = std::make_unique<ThreadPool>(std::max(1u, std::thread::hardware_concurrency()));
    current_pool.store(global_pool.get(), std::memory_order_release);
  }
  return *global_pool;
}

// Must not run while kernels are running: they hold a reference to the pool.
void set_num_threads(int num_threads) {
  OPGRAPH_CHECK(num_threads >= 1, "set_num_threads: expected a count of at least 1, got ", num_threads);
  std::lock_guard<std::mutex> lock(global_mutex);
  if (global_pool && global_pool->num_threads() == num_threads) return;
  current_pool.store(nullptr, std::memory_order_release);
  global_pool = std::make_unique<ThreadPool>(num_threads);
  current_pool.store(global_pool.get(), std::memory_order_release);
}

int get_num_threads() { return global_thread_pool().num_threads(); }

}  // namespace opgraph
