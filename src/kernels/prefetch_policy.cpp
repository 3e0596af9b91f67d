// The line requests of the vectorised loops; see prefetch_policy.hpp.
#include "kernels/prefetch_policy.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail {
namespace {

constexpr int8_t kUnset = -1;  // a choice not made: measured (QDQ_PREFETCH auto), not forced, not probing

/// QDQ_PREFETCH per loop: a LineRequests value, or kUnset for auto (measured). The value is unset,
/// empty or auto, one of none, l1, l2 (into L1 and L2) for every loop, or per loop:
/// range:none,quantize:l1,dequantize:l2 (a loop not named is measured).
struct PrefetchSettings {
  std::array<int8_t, kReadingLoops> loop{kUnset, kUnset, kUnset};
  bool bad = false;  // the value did not parse: prepare_line_requests reports it
  std::string text;
};

bool parse_one(const std::string& word, int8_t& setting) {
  if (word == "auto") setting = kUnset;
  else if (word == "none") setting = static_cast<int8_t>(LineRequests::kNone);
  else if (word == "l1") setting = static_cast<int8_t>(LineRequests::kL1);
  else if (word == "l2") setting = static_cast<int8_t>(LineRequests::kL1AndL2);
  else return false;
  return true;
}

PrefetchSettings parse_prefetch_settings(const char* value) {
  PrefetchSettings settings;
  if (value == nullptr || value[0] == '\0') return settings;
  settings.text = value;
  const std::string& text = settings.text;
  if (text.find(':') == std::string::npos) {
    int8_t all = kUnset;
    settings.bad = !parse_one(text, all);
    if (!settings.bad) settings.loop.fill(all);
    return settings;
  }
  static const char* const kNames[kReadingLoops] = {"range", "quantize", "dequantize"};
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    const std::string pair = text.substr(at, end - at);
    const size_t colon = pair.find(':');
    const std::string name = pair.substr(0, colon);
    const auto* const known =
        std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; });
    if (colon == std::string::npos || known == std::end(kNames) ||
        !parse_one(pair.substr(colon + 1), settings.loop[static_cast<size_t>(known - std::begin(kNames))])) {
      settings.bad = true;
      settings.loop.fill(kUnset);
      return settings;
    }
    at = end + 1;
  }
  return settings;
}

const PrefetchSettings& settings() {
  static const PrefetchSettings parsed = parse_prefetch_settings(std::getenv("QDQ_PREFETCH"));
  return parsed;
}

// What each loop's probe chose (L1 and L2 until it has run), forced choices for tests, and the
// choice every loop takes on a thread that is running a probe.
std::array<std::atomic<int8_t>, kReadingLoops> g_measured{static_cast<int8_t>(LineRequests::kL1AndL2),
                                                          static_cast<int8_t>(LineRequests::kL1AndL2),
                                                          static_cast<int8_t>(LineRequests::kL1AndL2)};
std::array<std::atomic<int8_t>, kReadingLoops> g_forced{kUnset, kUnset, kUnset};
std::array<LineRequestProbe, kReadingLoops> g_probe{};
std::array<std::once_flag, kReadingLoops> g_probe_once;
thread_local int8_t t_probe_choice = kUnset;
thread_local bool t_probing = false;  // this thread runs a probe: its operators' own preparations return
std::mutex g_probe_mutex;             // guards g_probe

/// A buffer of `bytes` on a cache line (the probe's x or y).
struct LineBuffer {
  explicit LineBuffer(size_t bytes) : storage(new uint8_t[bytes + 64]) {
    data = storage.get() + (64 - reinterpret_cast<uintptr_t>(storage.get()) % 64) % 64;
  }
  std::unique_ptr<uint8_t[]> storage;
  uint8_t* data = nullptr;
};

/// Seconds of the fastest of three calls of `run` with each choice, x (`x_bytes` at `x`) written with
/// non-temporal stores before each, so that the loop reads it from memory, as a large x's is. (At
/// 8 MiB of x the quantize loop measured L1 alone 3–18 % faster on Zen 3, where at 64 Mi elements it
/// is 5 % slower; at 32 MiB the probe agrees with 64 Mi.)
template <class Run>
LineRequestProbe time_choices(uint8_t* x, size_t x_bytes, Run&& run) {
  const int64_t target = simd::best_target();
  LineRequestProbe probe;
  double best[2] = {1e30, 1e30};
  const LineRequests choices[2] = {LineRequests::kL1, LineRequests::kL1AndL2};
  simd::fill_lines(target, x, x_bytes, StoreMode::kStream);
  run();  // faults the pages in, and the store probe of a large output runs now if it must
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 2; ++k) {
      simd::fill_lines(target, x, x_bytes, StoreMode::kStream);
      struct Choice {  // the thread's loops take choices[k] while the call runs, even if it throws
        explicit Choice(LineRequests requests) { t_probe_choice = static_cast<int8_t>(requests); }
        ~Choice() { t_probe_choice = kUnset; }
      } choice(choices[k]);
      const auto start = std::chrono::steady_clock::now();
      run();
      best[k] = std::min(best[k], std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  probe.l1_seconds = best[0];
  probe.l1_and_l2_seconds = best[1];
  return probe;
}

/// Runs the probe of `loop` with the library's own operator (one thread, default attributes).
LineRequestProbe run_probe(ReadingLoop loop) {
  ExecutionOptions one_thread;
  one_thread.num_threads = 1;
  constexpr int64_t kElements = int64_t{1} << 23;  // float32: a 32 MiB x, int16 16 MiB
  const int64_t shape[1] = {kElements};
  const float scale = 0.0375f;  // not a power of two: the quantize loop divides, as it does for most scales
  switch (loop) {
    case ReadingLoop::kRange: {
      LineBuffer x(kElements * sizeof(float));
      const RangeKernel range = select_range_kernel(false, kElements * sizeof(float));
      return time_choices(x.data, kElements * sizeof(float),
                          [&] { (void)range(reinterpret_cast<const float*>(x.data), 0, kElements, kElements); });
    }
    case ReadingLoop::kQuantize: {
      // float32 → uint8 per tensor: the quantize loop in its most common form.
      LineBuffer x(kElements * sizeof(float));
      LineBuffer y(kElements);
      const TensorView xv{DataType::kFloat, shape, x.data, kElements * sizeof(float)};
      const TensorView sv{DataType::kFloat, {}, &scale, sizeof(float)};
      const MutableTensorView yv{DataType::kUint8, shape, y.data, kElements};
      return time_choices(x.data, kElements * sizeof(float),
                          [&] { quantize_linear(QuantizeLinearAttributes{}, xv, sv, nullptr, yv, one_thread); });
    }
    case ReadingLoop::kDequantize: {
      // int16 → float32 per tensor: of the x this loop reads in place, the one whose lines are the
      // largest part of its traffic (float32 y is twice its bytes).
      // Half the elements: y is then 32 MiB.
      const int64_t half_shape[1] = {kElements / 2};
      LineBuffer x(kElements / 2 * sizeof(int16_t));
      LineBuffer y(kElements / 2 * sizeof(float));
      const TensorView xv{DataType::kInt16, half_shape, x.data, kElements / 2 * sizeof(int16_t)};
      const TensorView sv{DataType::kFloat, {}, &scale, sizeof(float)};
      const MutableTensorView yv{DataType::kFloat, half_shape, y.data, kElements / 2 * sizeof(float)};
      return time_choices(x.data, kElements / 2 * sizeof(int16_t),
                          [&] { dequantize_linear(DequantizeLinearAttributes{}, xv, sv, nullptr, yv, one_thread); });
    }
  }
  return {};
}

}  // namespace

LineRequests line_requests(ReadingLoop loop, uint64_t x_bytes) {
  if (t_probe_choice != kUnset) return static_cast<LineRequests>(t_probe_choice);
  const auto index = static_cast<size_t>(loop);
  const int8_t forced = g_forced[index].load(std::memory_order_relaxed);
  if (forced != kUnset) return static_cast<LineRequests>(forced);
  const int8_t setting = settings().loop[index];
  if (setting != kUnset) return static_cast<LineRequests>(setting);
  if (x_bytes < kMeasuredFromBytes) return LineRequests::kL1AndL2;
  return static_cast<LineRequests>(g_measured[index].load(std::memory_order_relaxed));
}

void prepare_line_requests(ReadingLoop loop, uint64_t x_bytes) {
  const PrefetchSettings& s = settings();
  if (s.bad) {
    throw Error("QDQ_PREFETCH is '" + s.text +
                "', but must be auto, none, l1, l2, or loop:choice pairs (range, quantize, dequantize) such as "
                "range:l1,quantize:l2");
  }
  const auto index = static_cast<size_t>(loop);
  // A probe's own calls, small x and set choices need no measurement.
  if (t_probing || x_bytes < kMeasuredFromBytes || s.loop[index] != kUnset) return;
  std::call_once(g_probe_once[index], [&] {
    struct Probing {
      Probing() { t_probing = true; }
      ~Probing() { t_probing = false; }
    } probing;
    const LineRequestProbe probe = run_probe(loop);
    {
      const std::lock_guard<std::mutex> lock(g_probe_mutex);
      g_probe[index] = probe;
    }
    // L1 alone only where it wins clearly: within the noise, the requests measured on the Intel
    // Xeon (on Zen 3 the quantize loop's two choices came within ±3 % in the probe and L1 and L2
    // ran 1.05× faster at 64 Mi elements; the range pass and 16-bit dequantize 1.05–1.3× slower).
    const bool l2 = !(probe.l1_seconds < 0.97 * probe.l1_and_l2_seconds);
    g_measured[index].store(static_cast<int8_t>(l2 ? LineRequests::kL1AndL2 : LineRequests::kL1),
                            std::memory_order_relaxed);
  });
}

LineRequestProbe line_request_probe(ReadingLoop loop) {
  const std::lock_guard<std::mutex> lock(g_probe_mutex);
  return g_probe[static_cast<size_t>(loop)];
}

const char* line_requests_name(LineRequests requests) {
  switch (requests) {
    case LineRequests::kNone: return "none";
    case LineRequests::kL1: return "L1";
    case LineRequests::kL1AndL2: return "L1+L2";
  }
  return "?";
}

void force_line_requests(ReadingLoop loop, const LineRequests* requests) {
  g_forced[static_cast<size_t>(loop)].store(requests != nullptr ? static_cast<int8_t>(*requests) : kUnset,
                                            std::memory_order_relaxed);
}

}  // namespace qdq::detail
