// qdq's work splitting (src/parallel.hpp): every task runs exactly once on its fixed range whatever
// the thread count and work estimate (jobs of tens of thousands of tasks included), and
// calls with too little work per thread stay on the calling thread; qdq::run_tasks runs a caller's
// tasks once each, rethrows their exceptions, and lets qdq calls inside them compute what they
// compute alone. No timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
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

TEST(RunTasks, EveryTaskRunsOnce) {
  for (int threads : {1, 2, 4}) {
    for (size_t tasks : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{70000}}) {
      auto runs = std::make_unique<std::atomic<int>[]>(tasks + 1);
      qdq::ExecutionOptions options;
      options.num_threads = threads;
      qdq::run_tasks(
          tasks, [&](size_t task) { runs[task].fetch_add(1); }, options);
      size_t not_once = 0;
      for (size_t t = 0; t < tasks; ++t) not_once += runs[t].load() != 1;
      EXPECT_EQ(not_once, 0u) << tasks << " tasks, " << threads << " threads";
    }
  }
}

TEST(RunTasks, GoesThroughTheCallersParallelFor) {
  size_t handed = 0;
  std::vector<int> runs(5);
  qdq::ExecutionOptions options;
  options.parallel_for = [&](size_t tasks, const std::function<void(size_t)>& body) {
    handed = tasks;
    for (size_t t = tasks; t-- > 0;) body(t);
  };
  qdq::run_tasks(
      runs.size(), [&](size_t task) { ++runs[task]; }, options);
  EXPECT_EQ(handed, runs.size());
  EXPECT_EQ(runs, std::vector<int>(5, 1));
}

TEST(RunTasks, ATasksExceptionIsRethrownAfterEveryTaskRan) {
  for (int threads : {1, 2}) {
    std::atomic<int> ran{0};
    qdq::ExecutionOptions options;
    options.num_threads = threads;
    const auto body = [&](size_t task) {
      ++ran;
      if (task % 3 == 1) throw std::runtime_error("task " + std::to_string(task));
    };
    EXPECT_THROW(qdq::run_tasks(64, body, options), std::runtime_error);
    EXPECT_EQ(ran.load(), 64);
  }
}

TEST(RunTasks, QdqCallsInsideTasksGiveTheWholeCallsResult) {
  // A tensor dequantized in slices, one qdq call per task (each with the default options, so a
  // nested call that finds the pool taken runs on its task's thread), against one call.
  constexpr size_t kSlices = 16;
  constexpr size_t kSliceElements = 3 * static_cast<size_t>(kTaskGrain) + 5;
  std::vector<uint8_t> x(kSlices * kSliceElements);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  const float scale = 0.37f;
  const uint8_t zero_point = 131;
  const int64_t whole_shape[1] = {static_cast<int64_t>(x.size())};
  const int64_t slice_shape[1] = {static_cast<int64_t>(kSliceElements)};
  const qdq::TensorView s{DataType::kFloat, {}, &scale, sizeof scale};
  const qdq::TensorView z{DataType::kUint8, {}, &zero_point, 1};
  std::vector<float> whole(x.size()), sliced(x.size(), -1.0f);
  qdq::dequantize_linear({}, {DataType::kUint8, whole_shape, x.data(), x.size()}, s, &z,
                         {DataType::kFloat, whole_shape, whole.data(), whole.size() * sizeof(float)});
  qdq::ExecutionOptions options;
  options.num_threads = 2;
  qdq::run_tasks(
      kSlices,
      [&](size_t slice) {
        const size_t first = slice * kSliceElements;
        qdq::dequantize_linear({}, {DataType::kUint8, slice_shape, x.data() + first, kSliceElements}, s, &z,
                               {DataType::kFloat, slice_shape, sliced.data() + first, kSliceElements * sizeof(float)});
      },
      options);
  EXPECT_EQ(0, std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)));
}

}  // namespace
