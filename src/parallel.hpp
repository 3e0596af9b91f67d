// Work splitting: a fixed grain cuts the flat element range into tasks independent of the thread
// count, so results never depend on how many threads ran them.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "qdq/qdq.hpp"

namespace qdq::detail {

/// Elements per task: a multiple of 4, so every task of a packed 2/4-bit output owns whole bytes.
constexpr int64_t kTaskGrain = 32768;

/// The least work per thread for which qdq's pool adds threads, in bytes read and written, weighted
/// twice for quantize (its division makes it about half as fast per byte as dequantize): a call
/// with less than twice this runs on the calling thread alone. From the idle 2-thread measurements
/// on the 2-core Intel machine (docs/performance.md): dequantize uint8 -> float32 at 64 Ki elements
/// (320 KiB) lost with 2 threads (0.92x), quantize float32 -> uint8 at 64 Ki (2 x 320 KiB) and
/// dequantize at 256 Ki (1.25 MiB) gained (1.56x, 1.12x).
constexpr uint64_t kMinWorkPerThread = uint64_t{320} << 10;

/// The bytes a call reads and writes: `elements` of x_type in and of y_type out (sub-byte types
/// packed). Allocates nothing.
uint64_t bytes_moved(DataType x_type, DataType y_type, int64_t elements);

/// The number of threads a call would use.
int resolve_num_threads(const ExecutionOptions& options);

/// Whether the scalar kernels are forced (the option, or QDQ_FORCE_SCALAR=1).
bool resolve_force_scalar(const ExecutionOptions& options);

/// A non-owning reference to a callable (no allocation, unlike std::function): valid only while
/// the callable it was made from lives.
template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f) noexcept  // implicit: callers pass lambdas where a FunctionRef is expected
      : object_(const_cast<void*>(static_cast<const void*>(&f))), call_([](void* o, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(o))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

/// The least time a thread of qdq's pool must have to itself for a call of at most
/// kMaxTimedTasks tasks to add it, in nanoseconds of one thread's time. From `qdq bench
/// --compare-one-thread`'s static split at 64 Ki elements (two tasks) on the 2-core Zen 3 machine
/// (docs/performance.md): calls of about 5 us on one thread lost with two (dequantize 8-bit ->
/// float32, 0.7-0.8x), calls of 6 us and more gained (1.2-1.8x).
constexpr uint64_t kMinNanosecondsPerThread = 3000;

/// Calls of up to this many tasks are timed, per kernel and task count, and their thread count
/// comes from the time their kernel took there (kMinNanosecondsPerThread) instead of from bytes
/// moved; larger ones have work enough for every thread on any kernel.
constexpr size_t kMaxTimedTasks = 8;

/// Runs fn(begin, end) over [0, elements) in tasks of kTaskGrain elements, on the caller's
/// ParallelFor, qdq's pool, or the calling thread alone (a single task, a busy pool, or a busy
/// machine where helpers have been losing time). qdq's pool gets at most one thread per
/// kMinNanosecondsPerThread of the time the same `kernel` (any identity of the work per element;
/// nullptr = none) last took per element on calls of as many tasks, or before that, one thread per
/// kMinWorkPerThread of `work` (bytes moved; 0 = unknown, no limit). The caller's ParallelFor gets
/// every task and decides itself. qdq's pool allocates nothing per call (it starts its workers on
/// first use); results never depend on which threads ran.
void parallel_ranges(int64_t elements, const ExecutionOptions& options, FunctionRef<void(int64_t, int64_t)> fn,
                     uint64_t work = 0, const void* kernel = nullptr);

/// parallel_ranges for tasks that are not flat ranges: fn(task) for each task in [0, tasks), which
/// together hold `elements` elements, each about kTaskGrain (the threads are chosen as there).
void parallel_tasks(int64_t tasks, int64_t elements, const ExecutionOptions& options, FunctionRef<void(int64_t)> fn,
                    uint64_t work = 0, const void* kernel = nullptr);

}  // namespace qdq::detail
