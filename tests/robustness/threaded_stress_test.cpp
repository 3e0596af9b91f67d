// Threaded stress: the three operators on tensors of several 32768-element tasks, run with 1, 2 and
// 4 threads, with custom ParallelFors (other threads, backwards, nested qdq calls) and from several
// std::threads at once (which contend for qdq's pool), while another thread keeps changing the
// process default thread count, and while other processes keep starting and stopping beside them
// (a busy machine, where the pool's workers get descheduled). Every result must be byte-identical
// to the single-threaded one. scripts/sanitize.sh runs these under ThreadSanitizer (ctest label
// `threads`).
#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "qdq/qdq.hpp"

extern char** environ;

namespace {

using qdq::DataType;

constexpr int64_t kGrain = 32768;
// Odd sizes: 5 tasks, the last one partial and ending inside a packed byte.
constexpr int64_t kRows = 3;
constexpr int64_t kCols = (5 * kGrain + 1001) / kRows;  // 54947 columns
constexpr int64_t kElements = kRows * kCols;

std::vector<float> pattern_floats(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[static_cast<size_t>(i)] = static_cast<float>(static_cast<int32_t>(s >> 12) - (1 << 19)) / 1024.0f;  // ±512
  }
  v[7] = NAN;
  v[11] = INFINITY;
  v[static_cast<size_t>(n - 3)] = -INFINITY;
  return v;
}

/// One operator call with a given ExecutionOptions, producing the output bytes.
using Call = std::function<std::vector<uint8_t>(const qdq::ExecutionOptions&)>;

struct Case {
  const char* name;
  Call call;
};

const std::vector<float>& x_floats() {
  static const std::vector<float> x = pattern_floats(kElements);
  return x;
}
const std::vector<float>& row_scales() {
  static const std::vector<float> s = {0.5f, 3.0f, 0.0078125f};
  return s;
}

std::vector<Case> cases() {
  static const int64_t shape[2] = {kRows, kCols};
  static const int64_t scale_shape[1] = {kRows};
  static const int64_t blocked_scale_shape[2] = {kRows, (kCols + 127) / 128};
  static const std::vector<float> blocked_scales = [] {
    std::vector<float> s(static_cast<size_t>(kRows * ((kCols + 127) / 128)));
    for (size_t i = 0; i < s.size(); ++i) s[i] = 0.25f * static_cast<float>(1 + i % 13);
    return s;
  }();
  static const std::vector<uint8_t> int4_x = [] {
    std::vector<uint8_t> b(static_cast<size_t>((kElements + 1) / 2));
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 37 + 11);
    if (kElements % 2) b.back() &= 0x0F;
    return b;
  }();
  static const std::vector<int8_t> int8_zp = {-3, 0, 7};

  const qdq::TensorView x{DataType::kFloat, shape, x_floats().data(), x_floats().size() * 4};
  const qdq::TensorView per_axis{DataType::kFloat, scale_shape, row_scales().data(), 12};
  const qdq::TensorView zp{DataType::kInt8, scale_shape, int8_zp.data(), 3};
  const qdq::TensorView blocked{DataType::kFloat, blocked_scale_shape, blocked_scales.data(),
                                blocked_scales.size() * 4};

  auto quantize = [=](DataType out, bool with_zp, bool block) -> Call {
    return [=](const qdq::ExecutionOptions& o) {
      qdq::QuantizeLinearAttributes a;
      a.axis = block ? 1 : 0;
      if (block) a.block_size = 128;
      if (!with_zp) a.output_dtype = static_cast<int64_t>(out);
      const qdq::TensorSpec spec =
          qdq::quantize_linear_output(a, x, block ? blocked : per_axis, with_zp ? &zp : nullptr);
      std::vector<uint8_t> y(spec.size_bytes, 0xCC);
      qdq::quantize_linear(a, x, block ? blocked : per_axis, with_zp ? &zp : nullptr,
                           {spec.type, shape, y.data(), y.size()}, o);
      return y;
    };
  };
  auto dequantize_int4 = [=](DataType out) -> Call {
    return [=](const qdq::ExecutionOptions& o) {
      qdq::DequantizeLinearAttributes a;
      a.axis = 1;
      a.block_size = 128;
      a.output_dtype = static_cast<int64_t>(out);
      const qdq::TensorView xi{DataType::kInt4, shape, int4_x.data(), int4_x.size()};
      const qdq::TensorSpec spec = qdq::dequantize_linear_output(a, xi, blocked, nullptr);
      std::vector<uint8_t> y(spec.size_bytes, 0xCC);
      qdq::dequantize_linear(a, xi, blocked, nullptr, {spec.type, shape, y.data(), y.size()}, o);
      return y;
    };
  };
  Call dynamic = [=](const qdq::ExecutionOptions& o) {
    // finite input only (a NaN would make everything 0)
    static const std::vector<float> finite = [] {
      std::vector<float> v = x_floats();
      for (float& f : v) {
        if (!std::isfinite(f)) f = 1.5f;
      }
      return v;
    }();
    const qdq::TensorView xf{DataType::kFloat, shape, finite.data(), finite.size() * 4};
    std::vector<uint8_t> y(static_cast<size_t>(kElements) + 8, 0xCC);
    const qdq::DynamicQuantizationParameters p =
        qdq::dynamic_quantize_linear(xf, {DataType::kUint8, shape, y.data(), static_cast<size_t>(kElements)}, o);
    std::memcpy(y.data() + kElements, &p.y_scale, 4);
    y[static_cast<size_t>(kElements) + 4] = p.y_zero_point;
    return y;
  };
  return {
      {"quantize int8 per-axis", quantize(DataType::kInt8, true, false)},
      {"quantize int4 blocked", quantize(DataType::kInt4, false, true)},
      {"quantize uint2 per-axis", quantize(DataType::kUint2, false, false)},
      {"quantize e4m3fn blocked", quantize(DataType::kFloat8E4M3FN, false, true)},
      {"dequantize int4 -> float16", dequantize_int4(DataType::kFloat16)},
      {"dequantize int4 -> float", dequantize_int4(DataType::kFloat)},
      {"dynamic", dynamic},
  };
}

qdq::ExecutionOptions threads(int n, bool scalar = false) {
  qdq::ExecutionOptions o;
  o.num_threads = n;
  o.force_scalar = scalar;
  return o;
}

/// A ParallelFor on three std::threads that take tasks from a shared counter.
qdq::ExecutionOptions own_threads() {
  qdq::ExecutionOptions o;
  o.parallel_for = [](size_t tasks, const std::function<void(size_t)>& body) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1)) body(t);
    };
    std::thread a(work), b(work);
    work();
    a.join();
    b.join();
  };
  return o;
}

/// A ParallelFor that runs the tasks backwards, each on a fresh thread, and makes a nested qdq call
/// (on qdq's own pool, 2 threads) from inside every other task.
qdq::ExecutionOptions backwards_with_nested_calls() {
  qdq::ExecutionOptions o;
  o.parallel_for = [](size_t tasks, const std::function<void(size_t)>& body) {
    for (size_t t = tasks; t-- > 0;) {
      std::thread worker([&] {
        body(t);
        if (t % 2 == 0) {
          static const Call nested = cases()[1].call;
          (void)nested(threads(2));
        }
      });
      worker.join();
    }
  };
  return o;
}

TEST(ThreadedStress, ThreadCountsAndParallelForsGiveIdenticalBytes) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> reference = c.call(threads(1));
    EXPECT_EQ(c.call(threads(1, true)), reference) << "scalar kernel";
    EXPECT_EQ(c.call(threads(2)), reference) << "2 threads";
    EXPECT_EQ(c.call(threads(4)), reference) << "4 threads";
    EXPECT_EQ(c.call(threads(4, true)), reference) << "4 threads, scalar";
    EXPECT_EQ(c.call(own_threads()), reference) << "custom ParallelFor on 3 threads";
    EXPECT_EQ(c.call(backwards_with_nested_calls()), reference) << "backwards ParallelFor with nested calls";
  }
}

TEST(ThreadedStress, ConcurrentCallersShareThePool) {
  const std::vector<Case> all = cases();
  std::vector<std::vector<uint8_t>> reference;
  for (const Case& c : all) reference.push_back(c.call(threads(1)));

  std::atomic<bool> stop{false};
  std::atomic<int> mismatches{0};
  // Another thread keeps changing the default thread count that num_threads = 0 uses.
  std::thread changer([&] {
    int n = 1;
    while (!stop.load()) {
      qdq::set_default_num_threads(n);
      EXPECT_GE(qdq::default_num_threads(), 1);
      n = n % 4 + 1;
      std::this_thread::yield();
    }
    qdq::set_default_num_threads(0);
  });
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 2; ++round) {
        for (size_t k = 0; k < all.size(); ++k) {
          const size_t i = (k + static_cast<size_t>(t)) % all.size();
          const qdq::ExecutionOptions o = (t + round) % 3 == 0 ? threads(0) : threads(2 + t % 3);
          if (all[i].call(o) != reference[i]) mismatches.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  stop = true;
  changer.join();
  EXPECT_EQ(mismatches.load(), 0);
}

/// Starts a short-lived process (a shell counting to a few thousand, some milliseconds of CPU) and
/// waits for it; false if it could not be started.
bool run_short_process() {
  char sh[] = "/bin/sh", dash_c[] = "-c";
  char script[] = "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done";
  char* argv[] = {sh, dash_c, script, nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, sh, nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return true;
}

TEST(ThreadedStress, CallsStayIdenticalWhileProcessesStartAndStop) {
  const std::vector<Case> all = cases();
  std::vector<std::vector<uint8_t>> reference;
  for (const Case& c : all) reference.push_back(c.call(threads(1)));

  // Two threads keep processes starting and stopping (one per core here), so that the pool's
  // workers are descheduled at any point: before they claim a task, while they hold one, while
  // the caller waits for them. Time-bound rather than round-bound: a few seconds, also under TSan.
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> spawners;
  for (int s = 0; s < 2; ++s) {
    spawners.emplace_back([&] {
      while (!stop.load() && run_short_process()) started.fetch_add(1);
    });
  }
  std::atomic<int> mismatches{0};
  std::atomic<int> calls{0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 2 || std::chrono::steady_clock::now() < deadline; ++round) {
        for (size_t k = 0; k < all.size(); ++k) {
          const size_t i = (k + static_cast<size_t>(t)) % all.size();
          if (all[i].call(threads(round % 3 == 2 ? 4 : 2)) != reference[i]) mismatches.fetch_add(1);
          calls.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  stop = true;
  for (std::thread& s : spawners) s.join();
  EXPECT_EQ(mismatches.load(), 0) << "of " << calls.load() << " calls";
  EXPECT_GT(started.load(), 0) << "no process could be started beside the calls";
}

}  // namespace
