#include "opgraph/core/thread_pool.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <thread>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

// Set while a thread runs a chunk: a parallel_for inside a chunk runs inline.
thread_local bool inside_chunk = false;

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  OPGRAPH_CHECK(num_threads >= 1, "ThreadPool: num_threads must be at least 1, got ", num_threads);
}

void ThreadPool::parallel_for(int64_t begin, int64_t end, int64_t grain, const Task& task) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  const int chunks = static_cast<int>(std::min<int64_t>(num_threads(), n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1 || inside_chunk || omp_in_parallel()) {
    task(begin, end);
    return;
  }
  std::unique_lock<std::mutex> submit(submit_mutex_, std::try_to_lock);
  if (!submit.owns_lock()) {
    task(begin, end);
    return;
  }
  std::atomic<int> next_chunk{0};
  std::mutex error_mutex;
  std::exception_ptr error;
#pragma omp parallel num_threads(chunks)
  {
    inside_chunk = true;
    for (int i; (i = next_chunk.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      try {
        task(begin + n * i / chunks, begin + n * (i + 1) / chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
    inside_chunk = false;
  }
  if (error) std::rethrow_exception(error);
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
