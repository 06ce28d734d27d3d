#include "opgraph/core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

// Set while a thread runs a chunk: a parallel_for inside a chunk runs inline.
thread_local bool inside_chunk = false;

// How long an idle worker polls for the next job before it sleeps. The
// kernels of a small model follow each other within microseconds, and waking
// a sleeping thread takes tens of them; much longer would hold a core that
// other work (oneDNN's own threads, other processes) could use.
constexpr auto kSpin = std::chrono::microseconds(50);

// Tells the core this thread is polling (and lets a sibling hyperthread run).
void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls until done() holds: the other threads' parts of a job take
// microseconds, but a thread holding one may have been descheduled, so every
// so often the core is offered to it.
template <typename Done>
void wait_until(const Done& done) {
  for (unsigned polls = 1; !done(); ++polls) {
    if (polls % 1024 == 0) {
      std::this_thread::yield();
    } else {
      cpu_pause();
    }
  }
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  OPGRAPH_CHECK(num_threads >= 1, "ThreadPool: num_threads must be at least 1, got ", num_threads);
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::run_chunks() noexcept {
  const int64_t n = end_ - begin_;
  for (int i; (i = next_chunk_.fetch_add(1, std::memory_order_relaxed)) < chunks_;) {
    inside_chunk = true;
    try {
      (*task_)(begin_ + n * i / chunks_, begin_ + n * (i + 1) / chunks_);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    inside_chunk = false;
    finished_chunks_.fetch_add(1, std::memory_order_release);
  }
}

bool ThreadPool::wait_for_job(uint64_t& seen) {
  auto published = [&](uint64_t generation) { return generation != seen && generation % 2 == 0; };
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (unsigned polls = 1;; ++polls) {
    if (stopping_.load(std::memory_order_acquire)) return false;
    if (const uint64_t generation = generation_.load(std::memory_order_acquire); published(generation)) {
      seen = generation;
      return true;
    }
    cpu_pause();
    if (polls % 64 == 0 && std::chrono::steady_clock::now() > deadline) break;
  }
  std::unique_lock<std::mutex> lock(sleep_mutex_);
  ++sleeping_;
  wake_.wait(lock, [&] { return stopping_ || published(generation_.load()); });
  --sleeping_;
  seen = generation_.load();
  return !stopping_;
}

void ThreadPool::join_job(uint64_t generation) {
  // Counted in before looking at the job: the next job's submitter either
  // sees this worker active and waits for it, or this worker sees that the
  // job changed and leaves its fields alone (both sides sequentially
  // consistent).
  ++active_;
  if (generation_.load() == generation) run_chunks();
  active_.fetch_sub(1, std::memory_order_release);
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  while (wait_for_job(seen)) join_job(seen);
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
  const uint64_t writing = generation_.load(std::memory_order_relaxed) + 1;
  generation_ = writing;
  wait_until([&] { return active_.load() == 0; });  // a worker still looking at the previous job
  task_ = &task;
  begin_ = begin;
  end_ = end;
  chunks_ = chunks;
  next_chunk_.store(0, std::memory_order_relaxed);
  finished_chunks_.store(0, std::memory_order_relaxed);
  error_ = nullptr;
  generation_ = writing + 1;
  if (sleeping_.load() > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    wake_.notify_all();
  }
  run_chunks();
  wait_until([&] { return finished_chunks_.load(std::memory_order_acquire) == chunks; });
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
