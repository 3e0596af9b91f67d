// Work splitting: a fixed grain cuts the flat element range into tasks independent of the thread
// count, so results never depend on how many threads ran them.
#pragma once

#include <cstdint>
#include <functional>

#include "qdq/qdq.hpp"

namespace qdq::detail {

/// Elements per task: a multiple of 4, so every task of a packed 2/4-bit output owns whole bytes.
constexpr int64_t kTaskGrain = 32768;

/// The number of threads a call would use.
int resolve_num_threads(const ExecutionOptions& options);

/// Whether the scalar kernels are forced (the option, or QDQ_FORCE_SCALAR=1).
bool resolve_force_scalar(const ExecutionOptions& options);

/// Runs fn(begin, end) over [0, elements) in tasks of kTaskGrain elements, on the caller's
/// ParallelFor, qdq's pool, or the calling thread alone for a single task.
void parallel_ranges(int64_t elements, const ExecutionOptions& options, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace qdq::detail
