// qdq's work splitting (src/parallel.hpp): every task runs exactly once on its fixed range whatever
// the thread count and work estimate (jobs of tens of thousands of tasks included), and
// calls with too little work per thread stay on the calling thread. No timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "parallel.hpp"
#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;
using qdq::detail::kTaskGrain;
using qdq::detail::parallel_ranges;

/// Runs parallel_ranges over `elements` and checks that each task ran once, on its own range.
void expect_each_task_once(int64_t elements, int threads, uint64_t work) {
  const int64_t tasks = (elements + kTaskGrain - 1) / kTaskGrain;
  auto runs = std::make_unique<std::atomic<int>[]>(static_cast<size_t>(tasks));
  std::atomic<int64_t> wrong_ranges{0};
  qdq::ExecutionOptions options;
  options.num_threads = threads;
  parallel_ranges(
      elements, options,
      [&](int64_t begin, int64_t end) {
        const int64_t task = begin / kTaskGrain;
        if (begin % kTaskGrain != 0 || end != std::min(elements, begin + kTaskGrain)) ++wrong_ranges;
        runs[static_cast<size_t>(task)].fetch_add(1);
      },
      work);
  EXPECT_EQ(wrong_ranges.load(), 0);
  int64_t not_once = 0;
  for (int64_t t = 0; t < tasks; ++t) not_once += runs[static_cast<size_t>(t)].load() != 1;
  EXPECT_EQ(not_once, 0) << elements << " elements, " << threads << " threads";
}

TEST(ParallelRanges, EveryTaskRunsOnceOnItsRange) {
  for (int threads : {1, 2, 3, 8}) {
    for (int64_t elements : {int64_t{1}, kTaskGrain, kTaskGrain + 1, 5 * kTaskGrain + 1001, 300 * kTaskGrain}) {
      expect_each_task_once(elements, threads, 0);
      expect_each_task_once(elements, threads, uint64_t{1} << 40);
    }
  }
}

TEST(ParallelRanges, JobsOfManyTasksRunEachOnce) {
  // 70 000 tasks (over 2^16, the claim word a 16-bit index would give); the body touches no data.
  expect_each_task_once(70000 * kTaskGrain - 5, 2, uint64_t{1} << 40);
}

TEST(ParallelRanges, LittleWorkStaysOnTheCallingThread) {
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  qdq::ExecutionOptions options;
  options.num_threads = 2;
  // 64 tasks whose work estimate is under two threads' worth: all on the caller.
  parallel_ranges(
      64 * kTaskGrain, options, [&](int64_t, int64_t) { elsewhere += std::this_thread::get_id() != caller; },
      2 * qdq::detail::kMinWorkPerThread - 1);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(ParallelRanges, BytesMovedCountsPackedTypes) {
  using qdq::detail::bytes_moved;
  EXPECT_EQ(bytes_moved(DataType::kFloat, DataType::kUint8, 1000), 5000u);
  EXPECT_EQ(bytes_moved(DataType::kUint8, DataType::kFloat, 1000), 5000u);
  EXPECT_EQ(bytes_moved(DataType::kFloat, DataType::kInt4, 1001), 4004u + 501u);
  EXPECT_EQ(bytes_moved(DataType::kFloat, DataType::kUint2, 1001), 4004u + 251u);
  EXPECT_EQ(bytes_moved(DataType::kFloat16, DataType::kFloat8E4M3FN, 10), 30u);
}

}  // namespace
