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

/// Runs fn(begin, end) over [0, elements) in tasks of kTaskGrain elements, on the caller's
/// ParallelFor, qdq's pool, or the calling thread alone (a single task, a busy pool, or a busy
/// machine where helpers have been losing time). qdq's pool allocates nothing per call (it starts its
/// workers on first use); results never depend on which.
void parallel_ranges(int64_t elements, const ExecutionOptions& options, FunctionRef<void(int64_t, int64_t)> fn);

}  // namespace qdq::detail
