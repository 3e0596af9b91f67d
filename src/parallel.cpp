// qdq's thread pool: persistent workers, one job at a time. The caller and the workers claim tasks
// one at a time from a shared word, the caller from the front and the workers from the back (so that
// with two threads each keeps the same half of a repeated call's data in its own cache, instead of
// pulling lines the other core wrote), so the caller keeps running tasks until none is unclaimed and
// then waits only for tasks already running: a worker that is descheduled before it claims anything
// (the machine is busy) costs nothing, and one descheduled while it holds a task delays that task
// alone. A call that finds the pool busy (another thread's call, or a nested one) runs its tasks on
// its own thread instead of waiting, and so do calls for a while after helpers have cost the caller
// more time than they saved (ThreadPool::learn): on a busy machine one thread beats two.
#include "parallel.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace qdq {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_default_threads{0};

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `pending()` until it stops holding: busy for `spin`, then yielding the core between polls
/// until `spin + yield` has passed. Returns whether it stopped holding (otherwise the caller sleeps).
template <class Pending>
bool poll_while(Pending pending, Clock::duration spin, Clock::duration yield) {
  const auto start = Clock::now();
  for (int polls = 1;; ++polls) {
    if (!pending()) return true;
    cpu_relax();
    if (polls % 64 == 0 && Clock::now() - start > spin) break;
  }
  const auto until = start + spin + yield;
  while (pending()) {
    if (Clock::now() > until) return !pending();
    std::this_thread::yield();
  }
  return true;
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

  /// Runs body(0..tasks) and returns the calling thread's time per task it ran (the tasks' own
  /// time on one thread, as near as a call can tell), or zero where it ran none or did not time them
  /// (`timed` false).
  Clock::duration run(size_t tasks, int threads, detail::FunctionRef<void(size_t)> body, bool timed) {
    std::unique_lock<std::mutex> job(job_mutex_, std::try_to_lock);
    if (!job.owns_lock() || threads <= 1 || tasks < kMinParallelTasks || Clock::now() < serial_until_) {
      const auto start = timed ? Clock::now() : Clock::time_point();
      for (size_t t = 0; t < tasks; ++t) body(t);
      return timed ? (Clock::now() - start) / static_cast<int64_t>(tasks) : Clock::duration::zero();
    }
    // The claim word holds two 16-bit task indices: larger jobs (over 2·10^9 elements) go in slices.
    constexpr size_t kMaxJob = kMaxTasksPerJob;
    Clock::duration per_task{};
    for (size_t first = 0; first < tasks; first += kMaxJob) {
      const size_t count = std::min(kMaxJob, tasks - first);
      const auto slice = [&](size_t t) { body(first + t); };
      per_task = run_job(static_cast<uint32_t>(count), threads, slice);
    }
    return per_task;
  }

 private:
  Clock::duration run_job(uint32_t tasks, int threads, detail::FunctionRef<void(size_t)> body) {
    const int helpers = static_cast<int>(std::min<uint32_t>(static_cast<uint32_t>(threads - 1), tasks - 1));
    if (static_cast<int>(workers_.size()) < helpers) {
      std::lock_guard<std::mutex> lock(mutex_);
      while (static_cast<int>(workers_.size()) < helpers) {
        const int id = static_cast<int>(workers_.size());
        workers_.emplace_back([this, id] { work(id); });
      }
    }
    const auto start = Clock::now();
    const uint64_t generation = (job_.load(std::memory_order_relaxed) >> 32) + 1;
    // The claim word first: a worker still on the last job that reads any of the fields below
    // (acquire) then sees the new generation in the claim word too, so its claim fails.
    claim_.store(generation << 32 | tasks, std::memory_order_seq_cst);
    helped_.store(0, std::memory_order_relaxed);
    body_.store(&body, std::memory_order_release);
    // Published last: a worker that sees the new job word sees the job's fields too. The word carries
    // the number of participants, so a worker decides from one snapshot whether it joins.
    parked_.store(false, std::memory_order_relaxed);
    job_.store(generation << 32 | static_cast<uint64_t>(helpers), std::memory_order_seq_cst);
    const bool woke = sleepers_.load(std::memory_order_seq_cst) > 0;
    if (woke) {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_.notify_all();
    }
    const auto published = Clock::now();

    uint32_t own = 0;
    for (uint32_t task; claim(generation, /*front=*/true, &task);) {
      body(task);
      ++own;
    }
    const auto own_done = Clock::now();
    const uint32_t expected = tasks - own;
    const auto pending = [&] { return helped_.load(std::memory_order_seq_cst) != expected; };
    if (expected != 0 && pending()) {
      // What is left is at most one task per helper, each already running: busy-wait about as long
      // as two of the caller's own tasks took, then give the core away (a descheduled helper may be
      // waiting for this very core), then sleep.
      const auto per_task = own > 0 ? (own_done - start) / own : Clock::duration(kWaitSpin);
      const auto spin = std::min<Clock::duration>(per_task * 2, kWaitSpin);
      if (!poll_while(pending, spin, kWaitYield)) {
        std::unique_lock<std::mutex> lock(mutex_);
        caller_waiting_.store(true, std::memory_order_seq_cst);
        done_.wait(lock, [&] { return !pending(); });
        caller_waiting_.store(false, std::memory_order_relaxed);
      }
    }
    const auto end = Clock::now();
    learn(tasks, own, woke, start, published, own_done, end);
    return own > 0 ? (own_done - published) / static_cast<int64_t>(own) : Clock::duration::zero();
  }

  /// Keeps score of what the helpers gained or lost the caller against running every task itself,
  /// and runs the next calls on the caller alone for a while once they have lost more than gained.
  /// On a busy machine a helper descheduled while it holds a task keeps the caller waiting for
  /// milliseconds, longer than a whole call; and a helper that is awake but gets no core in time
  /// to take part has still taken a share of the process's time from the caller. The time alone
  /// grows with the loss and with repeated losses, so that probing a still busy machine costs a few
  /// percent at most; sustained gains forgive the repeats. Results do not depend on any of this.
  void learn(uint32_t tasks, uint32_t own, bool woke, Clock::time_point start, Clock::time_point published,
             Clock::time_point own_done, Clock::time_point end) {
    const auto elapsed = end - start;
    const bool late_wake = own == tasks && woke;
    if (late_wake) {
      // Nobody helped, but the worker had to be woken. The first such call after others (the probe
      // that ends a time alone, whose worker has gone to sleep meanwhile) only wakes it: the next
      // call, with the worker awake, shows what it gains. Counting that wake-up as a loss would end
      // every probe in another time alone, and the strikes would never be forgiven. A second late
      // wake-up in a row (calls too far apart for the worker to stay awake) counts.
      if (!woken_once_) {
        woken_once_ = true;
        return;
      }
      balance_ -= published - start;
    } else if (own == tasks) {
      // The worker was awake and still missed every task: it was not given a core. Taking half
      // the call as the cost of its polling makes a run of such calls end the probing.
      balance_ -= elapsed / 2;
    } else if (own > 0) {
      // Against the caller's pace in this call, which a busy machine slows in both modes.
      const auto alone = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(own_done - start) *
                                                                     (static_cast<double>(tasks) / own));
      balance_ += alone - elapsed;
    }
    if (!late_wake) woken_once_ = false;
    if (balance_ > kBalanceCap) {
      balance_ = kBalanceCap;
      if (strikes_ > 0) --strikes_;
    } else if (balance_ < Clock::duration::zero()) {
      const auto penalty = std::min<Clock::duration>(-balance_ * (kPenalty << strikes_), kMaxAlone);
      serial_until_ = end + penalty;
      woken_once_ = false;
      balance_ = Clock::duration::zero();
      if (strikes_ < kMaxStrikes) ++strikes_;
      // Polling workers would take the caller's share of a busy machine while it runs alone.
      if (!late_wake) parked_.store(true, std::memory_order_relaxed);
    }
  }

  /// Takes the first (`front`) or the last unclaimed task of job `generation`; false once every
  /// task is claimed or the job is over.
  bool claim(uint64_t generation, bool front, uint32_t* task) {
    uint64_t word = claim_.load(std::memory_order_relaxed);
    for (;;) {
      const auto first = static_cast<uint32_t>(word >> 16) & 0xFFFFu;
      const auto end = static_cast<uint32_t>(word) & 0xFFFFu;
      if ((word >> 32) != generation || first >= end) return false;
      const uint64_t next = front ? word + (uint64_t{1} << 16) : word - 1;
      if (claim_.compare_exchange_weak(word, next, std::memory_order_acq_rel, std::memory_order_relaxed)) {
        *task = front ? first : end - 1;
        return true;
      }
    }
  }

  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      const auto idle = [&] {
        return !stop_.load(std::memory_order_acquire) && job_.load(std::memory_order_seq_cst) == seen;
      };
      // Back-to-back calls (an engine running one operator after another, a benchmark) find the
      // worker awake: a futex wake-up costs tens of microseconds in a VM, as much as a whole
      // in-cache call. Yielding while it waits leaves the core to whoever else needs it, and a
      // caller that has gone on alone (learn()) parks the workers at once.
      const auto polling = [&] { return idle() && !parked_.load(std::memory_order_relaxed); };
      poll_while(polling, kIdleSpin, kIdleYield);
      if (idle()) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] { return !idle(); });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
      if (stop_.load()) return;
      seen = job_.load(std::memory_order_seq_cst);
      if (id >= static_cast<int>(seen & 0xFFFFFFFFu)) continue;
      // The job may be over, or a later one being set up, by the time these are read: a task is only
      // run after claim() has confirmed that this job is still on (fields of a later job come with
      // its claim word, see run_job), and the caller does not rewrite the fields before every
      // claimed task has been counted into helped_.
      const uint64_t generation = seen >> 32;
      const detail::FunctionRef<void(size_t)>* body = body_.load(std::memory_order_acquire);
      for (uint32_t task; claim(generation, /*front=*/false, &task);) {
        (*body)(task);
        helped_.fetch_add(1, std::memory_order_seq_cst);
        if (caller_waiting_.load(std::memory_order_seq_cst)) {
          // Taking the mutex orders this notification after the caller's predicate check.
          std::lock_guard<std::mutex> lock(mutex_);
          done_.notify_all();
        }
      }
    }
  }

  // How long the caller busy-waits (at most) and then yields for its helpers' last tasks before
  // sleeping, and how long an idle worker does so for the next job (docs/performance.md, issue 16).
  static constexpr auto kWaitSpin = std::chrono::microseconds(20);
  static constexpr auto kWaitYield = std::chrono::microseconds(50);
  static constexpr auto kIdleSpin = std::chrono::microseconds(20);
  static constexpr auto kIdleYield = std::chrono::microseconds(200);
  // Tasks per job: the claim word holds 16-bit task indices.
  static constexpr size_t kMaxTasksPerJob = 0xFFFF;
  // Fewer tasks than this run on the calling thread alone: a second thread already pays at two.
  static constexpr size_t kMinParallelTasks = 2;
  // learn(): time alone = kPenalty << strikes times the deficit, at most kMaxAlone; gains are kept
  // up to kBalanceCap, so a machine that turns busy is noticed within a few calls.
  static constexpr int kPenalty = 8;
  static constexpr int kMaxStrikes = 6;
  static constexpr auto kBalanceCap = std::chrono::milliseconds(1);
  static constexpr auto kMaxAlone = std::chrono::milliseconds(200);

  // The caller's score (learn()); guarded by job_mutex_.
  Clock::duration balance_{};
  int strikes_ = 0;
  Clock::time_point serial_until_{};
  bool woken_once_ = false;  // the last call only woke the worker (learn())

  std::mutex job_mutex_;  // one job at a time
  std::mutex mutex_;      // the condition variables' and workers_'s
  std::condition_variable wake_;
  std::condition_variable done_;
  std::vector<std::thread> workers_;
  // The current job: generation << 32 | number of participating workers.
  std::atomic<uint64_t> job_{0};
  // generation << 32 | first unclaimed task << 16 | end of the unclaimed tasks. A claim is a
  // compare-exchange that keeps the generation, so a worker still holding a finished job's fields
  // cannot take a task of the next.
  std::atomic<uint64_t> claim_{0};
  std::atomic<const detail::FunctionRef<void(size_t)>*> body_{nullptr};
  std::atomic<uint32_t> helped_{0};  // tasks the workers have finished in the current job
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_waiting_{false};
  std::atomic<bool> parked_{false};  // set while the caller runs alone: workers sleep, not poll
  std::atomic<bool> stop_{false};
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

/// What a kernel last took per element on one thread, in picoseconds, for calls of each task count
/// up to kMaxTimedTasks: a small table indexed by a hash of (kernel, tasks), each slot overwritten
/// by whichever key used it last. Read and written by any calling thread without a lock: a slot read
/// while another thread rewrites it gives a wrong estimate, never a wrong result.
class KernelTimes {
 public:
  static uint64_t key(const void* kernel, size_t tasks) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(kernel)) * 16 + tasks;  // tasks < 16
  }
  uint32_t picoseconds_per_element(uint64_t key) const {
    const Slot& slot = slots_[index(key)];
    return slot.key.load(std::memory_order_relaxed) == key ? slot.picoseconds.load(std::memory_order_relaxed) : 0;
  }
  void record(uint64_t key, uint32_t picoseconds) {
    Slot& slot = slots_[index(key)];
    slot.key.store(key, std::memory_order_relaxed);
    slot.picoseconds.store(picoseconds, std::memory_order_relaxed);
  }

 private:
  struct Slot {
    std::atomic<uint64_t> key{0};
    std::atomic<uint32_t> picoseconds{0};
  };
  static size_t index(uint64_t key) { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 56); }
  std::array<Slot, 256> slots_;
};

KernelTimes& kernel_times() {
  static KernelTimes instance;
  return instance;
}

// The environment's defaults are read once per process, at the first call that needs them (as
// OpenMP reads OMP_NUM_THREADS): getenv scans the whole environment, and every operator call would
// pay for it (~1 % of a 64 Ki-element call, more of a small one). hardware_concurrency() likewise:
// glibc opens and reads /sys/devices/system/cpu/online on every call.
int read_environment_threads() {
  if (const char* env = std::getenv("QDQ_NUM_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n > 0) return static_cast<int>(std::min(n, 1024L));
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int environment_threads() {
  static const int threads = read_environment_threads();
  return threads;
}

bool read_environment_force_scalar() {
  const char* env = std::getenv("QDQ_FORCE_SCALAR");
  return env != nullptr && env[0] != '\0' && std::strcmp(env, "0") != 0;
}

}  // namespace
void set_default_num_threads(int threads) { g_default_threads.store(threads > 0 ? threads : 0); }

int default_num_threads() {
  const int set = g_default_threads.load();
  return set > 0 ? set : environment_threads();
}

void run_tasks(size_t tasks, const std::function<void(size_t task)>& body, const ExecutionOptions& options) {
  if (tasks == 0) return;
  // A task's exception must not escape a worker thread; the first one caught is rethrown here.
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const auto guarded = [&](size_t task) {
    try {
      body(task);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  if (options.parallel_for) {
    options.parallel_for(tasks, std::function<void(size_t)>(guarded));
  } else {
    pool().run(tasks, detail::resolve_num_threads(options), guarded, /*timed=*/false);
  }
  if (failure) std::rethrow_exception(failure);
}

namespace detail {

int resolve_num_threads(const ExecutionOptions& options) {
  return options.num_threads > 0 ? options.num_threads : default_num_threads();
}

bool resolve_force_scalar(const ExecutionOptions& options) {
  static const bool environment = read_environment_force_scalar();
  return options.force_scalar || environment;
}

uint64_t bytes_moved(DataType x_type, DataType y_type, int64_t elements) {
  const auto n = static_cast<uint64_t>(elements);
  return (n * static_cast<uint64_t>(bit_width(x_type)) + 7) / 8 +
         (n * static_cast<uint64_t>(bit_width(y_type)) + 7) / 8;
}

void parallel_ranges(int64_t elements, const ExecutionOptions& options, FunctionRef<void(int64_t, int64_t)> fn,
                     uint64_t work, const void* kernel) {
  if (elements <= 0) return;
  parallel_tasks((elements + kTaskGrain - 1) / kTaskGrain, elements, options,
                 [&](int64_t task) {
                   const int64_t begin = task * kTaskGrain;
                   fn(begin, std::min(elements, begin + kTaskGrain));
                 },
                 work, kernel);
}

void parallel_tasks(int64_t task_count, int64_t elements, const ExecutionOptions& options,
                    FunctionRef<void(int64_t)> fn, uint64_t work, const void* kernel) {
  if (task_count <= 0) return;
  const auto tasks = static_cast<size_t>(task_count);
  if (tasks == 1) {
    fn(0);
    return;
  }
  const auto body = [&](size_t task) { fn(static_cast<int64_t>(task)); };
  if (options.parallel_for) {
    options.parallel_for(tasks, std::function<void(size_t)>(body));  // the caller's interface takes a std::function
    return;
  }
  const int most = resolve_num_threads(options);
  int threads = most;
  if (work > 0)
    threads = static_cast<int>(std::clamp<uint64_t>(work / kMinWorkPerThread, 1, static_cast<uint64_t>(most)));
  // Small calls: the kernel's own time there decides, once it has one (bytes moved say little of
  // the float8, float4 and 16-bit float conversions, or of the sub-byte types' packing).
  const bool timed = kernel != nullptr && most > 1 && tasks <= kMaxTimedTasks;
  const uint64_t key = timed ? KernelTimes::key(kernel, tasks) : 0;
  if (timed) {
    const uint64_t picoseconds = kernel_times().picoseconds_per_element(key);
    if (picoseconds != 0) {
      const uint64_t nanoseconds = picoseconds * static_cast<uint64_t>(elements) / 1000;
      threads = static_cast<int>(
          std::clamp<uint64_t>(nanoseconds / kMinNanosecondsPerThread, 1, static_cast<uint64_t>(most)));
    }
  }
  const auto per_task = pool().run(tasks, threads, body, timed);
  if (timed && per_task > Clock::duration::zero()) {
    const double picoseconds = std::chrono::duration<double, std::pico>(per_task).count() * static_cast<double>(tasks) /
                               static_cast<double>(elements);
    kernel_times().record(key, static_cast<uint32_t>(std::clamp(picoseconds, 1.0, 1e9)));
  }
}

}  // namespace detail
}  // namespace qdq
