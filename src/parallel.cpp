// qdq's thread pool: persistent workers, one job at a time, tasks handed out through an atomic
// counter. A call that finds the pool busy (another thread's call, or a nested one) runs its tasks
// on its own thread instead of waiting.
#include "parallel.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace qdq {
namespace {

std::atomic<int> g_default_threads{0};

/// Spins while `pending()` holds, for at most kSpinTime, pausing between polls; returns whether it
/// stopped holding. Back-to-back calls (an engine running one operator after another, a benchmark)
/// then find the workers awake: a futex wake-up costs tens of microseconds in a VM, as much as a
/// whole in-cache call of a few hundred thousand elements.
template <class Pending>
bool spin_while(Pending pending) {
  constexpr auto kSpinTime = std::chrono::microseconds(200);
  const auto start = std::chrono::steady_clock::now();
  for (int polls = 1;; ++polls) {
    if (!pending()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    if (polls % 64 == 0 && std::chrono::steady_clock::now() - start > kSpinTime) return !pending();
  }
}

class ThreadPool {
 public:
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  void run(size_t tasks, int threads, detail::FunctionRef<void(size_t)> body) {
    std::unique_lock<std::mutex> job(job_mutex_, std::try_to_lock);
    if (!job.owns_lock() || threads <= 1 || tasks <= 1) {
      for (size_t t = 0; t < tasks; ++t) body(t);
      return;
    }
    const int helpers = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads - 1), tasks - 1));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(workers_.size()) < helpers) {
        const int id = static_cast<int>(workers_.size());
        workers_.emplace_back([this, id] { work(id); });
      }
      body_ = &body;
      tasks_ = tasks;
      next_.store(0);
      running_.store(helpers);
      // Published last (release): a worker that sees the new job word sees the job too. The word
      // carries the number of participants, so a worker decides from one snapshot whether it joins.
      const uint64_t generation = (job_.load(std::memory_order_relaxed) >> kParticipantBits) + 1;
      job_.store(generation << kParticipantBits | static_cast<uint64_t>(helpers), std::memory_order_release);
    }
    wake_.notify_all();
    drain();
    if (!spin_while([this] { return running_.load(std::memory_order_acquire) != 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, [this] { return running_.load(std::memory_order_acquire) == 0; });
    }
    body_ = nullptr;
  }

 private:
  void drain() {
    for (size_t t = next_.fetch_add(1); t < tasks_; t = next_.fetch_add(1)) (*body_)(t);
  }

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      const auto idle = [&] { return !stop_.load(std::memory_order_acquire) && job_.load(std::memory_order_acquire) == seen; };
      if (!spin_while(idle)) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !idle(); });
      }
      if (stop_.load()) return;
      // A worker that takes no part in a job does not hold the caller back, so the next job may
      // already be published here: whichever word is read, it is acted on as a whole.
      seen = job_.load(std::memory_order_acquire);
      if (id >= static_cast<int>(seen & kParticipantMask)) continue;
      drain();
      if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // Taking the mutex orders this notification after the caller's predicate check.
        std::lock_guard<std::mutex> lock(mutex_);
        done_.notify_all();
      }
    }
  }

  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  // Written by the caller before job_ is published, read by the job's participants after they see
  // it; the caller writes them again only after every participant has counted itself out of running_.
  const detail::FunctionRef<void(size_t)>* body_ = nullptr;
  size_t tasks_ = 0;
  std::atomic<size_t> next_{0};
  std::atomic<int> running_{0};
  // The current job: generation << kParticipantBits | number of participating workers.
  static constexpr int kParticipantBits = 32;
  static constexpr uint64_t kParticipantMask = (uint64_t{1} << kParticipantBits) - 1;
  std::atomic<uint64_t> job_{0};
  std::atomic<bool> stop_{false};
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

int environment_threads() {
  if (const char* env = std::getenv("QDQ_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<int>(std::min(n, 1024L));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace

void set_default_num_threads(int threads) { g_default_threads.store(threads > 0 ? threads : 0); }

int default_num_threads() {
  const int set = g_default_threads.load();
  return set > 0 ? set : environment_threads();
}

namespace detail {

int resolve_num_threads(const ExecutionOptions& options) {
  return options.num_threads > 0 ? options.num_threads : default_num_threads();
}

bool resolve_force_scalar(const ExecutionOptions& options) {
  if (options.force_scalar) return true;
  const char* env = std::getenv("QDQ_FORCE_SCALAR");
  return env != nullptr && env[0] != '\0' && std::strcmp(env, "0") != 0;
}

void parallel_ranges(int64_t elements, const ExecutionOptions& options, FunctionRef<void(int64_t, int64_t)> fn) {
  if (elements <= 0) return;
  const auto tasks = static_cast<size_t>((elements + kTaskGrain - 1) / kTaskGrain);
  if (tasks == 1) {
    fn(0, elements);
    return;
  }
  const auto body = [&](size_t task) {
    const int64_t begin = static_cast<int64_t>(task) * kTaskGrain;
    fn(begin, std::min(elements, begin + kTaskGrain));
  };
  if (options.parallel_for) {
    options.parallel_for(tasks, std::function<void(size_t)>(body));  // the caller's interface takes a std::function
  } else {
    pool().run(tasks, resolve_num_threads(options), body);
  }
}

}  // namespace detail
}  // namespace qdq
