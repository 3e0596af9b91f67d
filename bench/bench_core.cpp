// The benchmark cases, the streaming reference and the report formats (see bench_core.hpp).
#include "bench_core.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "reference_loops.hpp"
#include "types/type_lists.hpp"

namespace qdq::bench {
namespace {

using T = DataType;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// References: the streaming and ceiling loops (reference_loops.hpp), split evenly between the
// benchmark's threads.

// Buffers of kMappedFrom bytes and more are mapped on their own, on 2 MiB boundaries, and (unless
// BenchOptions::small_pages) ask for transparent huge pages. On 4 KiB pages a process's in-cache
// figures depend on where its pages land in the physically indexed L2: on the 2-core Zen 3 machine
// (512 KiB L2) eight `qdq bench` runs of the same 64 Ki case read 6.4-11.4 G elements/s for int4
// dequantize and 3.2-4.1 for float8e5m2 quantize; on 2 MiB pages 11.0-12.2 and 3.93-4.08, as the
// in-process A/B reads them (docs/performance.md, "Zen 3: qdq bench on 2 MiB pages"). A mapping of its own is fresh
// memory, so the advice takes effect at the first touch (memory the heap reused would keep its 4 KiB pages).
constexpr size_t kMappedFrom = size_t{16} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

/// Whether buffers mapped from now on ask for huge pages: true but while run_benchmarks runs with
/// BenchOptions::small_pages (the bench allocates on one thread). A global rather than a parameter of
/// prepare_case, whose signature scripts/ab_inprocess.sh links against older bench cores.
bool g_huge_pages = true;

size_t mapped_bytes(size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

/// `bytes` of storage aligned to a cache line (to 2 MiB from kMappedFrom bytes on, see above).
void* allocate_buffer(size_t bytes) {
#if defined(__linux__)
  if (bytes >= kMappedFrom) {
    const size_t size = mapped_bytes(bytes);
    // Map a huge page more than needed and trim it to a 2 MiB boundary.
    void* const mapped = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const auto at = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t start = (at + kHugePage - 1) / kHugePage * kHugePage;
    if (start > at) ::munmap(mapped, start - at);
    ::munmap(reinterpret_cast<void*>(start + size), at + kHugePage - start);  // never empty: `at` is page-aligned
    void* const p = reinterpret_cast<void*>(start);
    if (g_huge_pages) ::madvise(p, size, MADV_HUGEPAGE);  // advice: where refused, the pages stay 4 KiB
    return p;
  }
#endif
  return ::operator new (bytes, std::align_val_t{64});
}

void free_buffer(void* p, size_t bytes) {
#if defined(__linux__)
  if (bytes >= kMappedFrom) {
    ::munmap(p, mapped_bytes(bytes));
    return;
  }
#endif
  ::operator delete (p, std::align_val_t{64});
}

/// Whether the page at p is part of a transparent huge page (Linux: its mapping's AnonHugePages in
/// /proc/self/smaps; false where that cannot be read).
bool on_huge_page(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = address >= lo && address < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::strtoull(line.c_str() + 14, nullptr, 10) > 0;
    }
  }
  return false;
}

/// 64-byte aligned storage (2 MiB from kMappedFrom bytes on), so that the non-temporal streaming stores
/// (which need aligned addresses) and the kernels see buffers as an engine would allocate them.
template <class V>
struct CacheLineAllocator {
  using value_type = V;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  V* allocate(size_t n) { return static_cast<V*>(allocate_buffer(n * sizeof(V))); }
  void deallocate(V* p, size_t n) { free_buffer(p, n * sizeof(V)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};
template <class V>
using AlignedVector = std::vector<V, CacheLineAllocator<V>>;
using Bytes = AlignedVector<uint8_t>;

/// Threads that stay alive between streaming calls and poll for work for a while after each, as
/// qdq's own pool does between back-to-back calls: creating threads per call would charge the
/// reference tens of microseconds that the kernels do not pay, and make the ratio meaningless in
/// cache. Idle workers sleep, so they do not compete with the kernels being measured.
class StreamTeam {
 public:
  explicit StreamTeam(int threads) : threads_(threads) {
    for (int id = 1; id < threads; ++id) workers_.emplace_back([this, id] { work(id); });
  }
  ~StreamTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  int threads() const { return threads_; }

  /// Runs part(id) for id in [0, threads) — part 0 on the calling thread — and waits for all.
  void run(const std::function<void(int)>& part) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      part_ = &part;
      pending_.store(threads_ - 1);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    part(0);
    while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }

 private:
  void work(int id) {
    uint64_t seen = 0;
    for (;;) {
      const auto idle = [&] { return !stop_.load() && generation_.load(std::memory_order_acquire) == seen; };
      const auto until = Clock::now() + std::chrono::microseconds(200);
      while (idle() && Clock::now() < until) std::this_thread::yield();
      if (idle()) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !idle(); });
      }
      if (stop_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      (*part_)(id);
      pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  int threads_;
  const std::function<void(int)>* part_ = nullptr;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

/// Runs part(u0, u1) over [0, units) split evenly between `threads` threads (the calling thread
/// alone when there is one thread or too little work to split).
void split_units(uint64_t units, int threads, const std::function<void(uint64_t, uint64_t)>& part) {
  if (threads <= 1 || units < 64) {
    part(0, units);
    return;
  }
  static std::unique_ptr<StreamTeam> team;
  if (!team || team->threads() != threads) {
    team.reset();
    team = std::make_unique<StreamTeam>(threads);
  }
  const auto n = static_cast<uint64_t>(threads);
  team->run([&](int t) { part(units * static_cast<uint64_t>(t) / n, units * static_cast<uint64_t>(t + 1) / n); });
}

void stream_bytes(const uint8_t* in, uint64_t in_bytes, uint8_t* out, uint64_t out_bytes, int threads,
                  bool non_temporal) {
  // Whole 64-byte units of the smaller side, so that every thread's part starts aligned.
  const uint64_t small = std::min(in_bytes, out_bytes);
  const uint64_t in_per = in_bytes / small;
  const uint64_t out_per = out_bytes / small;
  split_units(small / 64, threads, [&](uint64_t u0, uint64_t u1) {
    stream_range(in + u0 * 64 * in_per, (u1 - u0) * 64 * in_per, out + u0 * 64 * out_per, (u1 - u0) * 64 * out_per,
                 non_temporal);
  });
}

/// The reading reference over the whole 256-byte units of `in`, split evenly between `threads`.
void read_bytes(const uint8_t* in, uint64_t bytes, int threads, bool prefetch) {
  constexpr uint64_t kUnit = 256;        // four 512-bit vectors: a multiple of the loop's step on every target
  static std::atomic<uint64_t> sink{0};  // keeps the loads
  split_units(bytes / kUnit, threads, [&](uint64_t u0, uint64_t u1) {
    sink.fetch_xor(read_range(in + u0 * kUnit, (u1 - u0) * kUnit, prefetch), std::memory_order_relaxed);
  });
}

/// The ceiling loops' buffers, sized for the largest case of a run (elements rounded to 64).
struct CeilingBuffers {
  explicit CeilingBuffers(int64_t elements)
      : floats(static_cast<size_t>(elements)),
        codes(static_cast<size_t>(elements)),
        out_codes(static_cast<size_t>(elements)),
        out_floats(static_cast<size_t>(elements)) {
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
    for (float& v : floats) v = xd(rng);
    for (uint8_t& b : codes) b = static_cast<uint8_t>(rng());
  }
  AlignedVector<float> floats;
  Bytes codes;
  AlignedVector<int8_t> out_codes;
  AlignedVector<float> out_floats;
};

void ceiling(CeilingBuffers& b, bool quantize, int64_t elements, int threads) {
  split_units(static_cast<uint64_t>(elements) / 64, threads, [&](uint64_t u0, uint64_t u1) {
    const auto i = static_cast<int64_t>(u0 * 64);
    const auto n = static_cast<int64_t>((u1 - u0) * 64);
    if (quantize) {
      ceiling_quantize_int8(b.floats.data() + i, b.out_codes.data() + i, n, 1.0f / 0.0173f, 3);
    } else {
      ceiling_dequantize_uint8(b.codes.data() + i, b.out_floats.data() + i, n, 0.0173f, -3 * 0.0173f);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Cases.

int bits_of(T t) { return bit_width(t); }

bool is_float8(T t) { return qdq::detail::is_float8(t); }
bool is_integer(T t) { return qdq::detail::kQuantizedIntegerTypes.contains(t); }

std::string short_name(T t) {
  std::string s = data_type_name(t);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (s == "float") return "float32";
  return s;
}

std::vector<CaseInfo> build_cases() {
  std::vector<CaseInfo> cases;
  auto add = [&](const std::string& op, T x, T y, const std::string& granularity, int64_t block,
                 bool e8m0_scales = false, bool symmetric = false) {
    std::string name = op + "/" + short_name(x) + "->" + short_name(y) + "/" + granularity;
    if (block > 0) name += "-" + std::to_string(block);
    if (e8m0_scales) name += "-e8m0";
    if (symmetric) name += "-symmetric";
    cases.push_back({name, op, x, y, granularity, block, e8m0_scales, symmetric});
  };
  for (T y : qdq::detail::kQuantizedTypes) add("quantize", T::kFloat, y, "per-tensor", 0);
  for (T y : {T::kUint8, T::kInt8}) add("quantize", T::kFloat, y, "per-axis", 0);
  for (T y : {T::kInt4, T::kUint4, T::kFloat8E4M3FN}) {
    add("quantize", T::kFloat, y, "blocked-last", 32);
    add("quantize", T::kFloat, y, "blocked-axis0", 32);
  }
  // The MX formats: MXFP4 and MXFP8 (E4M3), blocks of 32 along the last axis with FLOAT8E8M0 scales.
  for (T y : {T::kFloat4E2M1, T::kFloat8E4M3FN}) add("quantize", T::kFloat, y, "blocked-last", 32, true);
  add("quantize", T::kFloat16, T::kUint8, "per-tensor", 0);
  add("quantize", T::kBFloat16, T::kInt8, "per-tensor", 0);
  add("quantize", T::kFloat16, T::kInt4, "blocked-last", 32);  // float16 LLM weights to int4 blocks
  // Symmetric quantization (no zero point): int8 activations and weights, int4 LLM weights.
  add("quantize", T::kFloat, T::kInt8, "per-tensor", 0, false, true);
  add("quantize", T::kFloat, T::kInt4, "blocked-last", 32, false, true);
  // DynamicQuantizeLinear: the range pass and the quantize pass, each reading x.
  add("dynamic", T::kFloat, T::kUint8, "per-tensor", 0);

  for (T x : qdq::detail::kQuantizedTypes) add("dequantize", x, T::kFloat, "per-tensor", 0);
  for (T x : {T::kUint8, T::kInt8}) add("dequantize", x, T::kFloat, "per-axis", 0);
  for (T x : {T::kInt4, T::kUint4, T::kFloat8E4M3FN}) {
    add("dequantize", x, T::kFloat, "blocked-last", 32);
    add("dequantize", x, T::kFloat, "blocked-axis0", 32);
  }
  add("dequantize", T::kFloat4E2M1, T::kFloat, "blocked-last", 32);
  for (T x : {T::kFloat4E2M1, T::kFloat8E4M3FN}) add("dequantize", x, T::kFloat, "blocked-last", 32, true);
  add("dequantize", T::kUint8, T::kFloat16, "per-tensor", 0);
  add("dequantize", T::kInt8, T::kBFloat16, "per-tensor", 0);
  add("dequantize", T::kFloat8E4M3FN, T::kBFloat16, "per-tensor", 0);
  add("dequantize", T::kFloat8E4M3FN, T::kFloat16, "per-tensor", 0);          // FP8 weights to float16
  add("dequantize", T::kFloat4E2M1, T::kBFloat16, "blocked-last", 32, true);  // MXFP4 weights to bfloat16
  add("dequantize", T::kInt4, T::kFloat16, "blocked-last", 32);
  add("dequantize", T::kInt4, T::kBFloat16, "blocked-last", 32);  // int4 LLM weights to bfloat16
  add("dequantize", T::kInt8, T::kFloat, "per-tensor", 0, false, true);
  add("dequantize", T::kInt4, T::kFloat, "blocked-last", 32, false, true);
  return cases;
}

struct Layout {
  std::vector<int64_t> shape;
  std::vector<int64_t> scale_shape;
  int64_t axis = 0;
};

Layout layout_for(const CaseInfo& info, int64_t elements) {
  Layout l;
  if (info.granularity == "per-tensor") {
    l.shape = {elements};
  } else if (info.granularity == "per-axis") {
    l.shape = {64, elements / 64};  // per output channel: 64 runs of elements/64 with one scale each
    l.scale_shape = {64};
  } else if (info.granularity == "blocked-last") {
    l.shape = {elements / 1024, 1024};
    l.scale_shape = {elements / 1024, 1024 / info.block_size};
    l.axis = 1;
  } else {
    l.shape = {256, elements / 256};  // blocks of rows: runs of elements/256 with a row of scales
    l.scale_shape = {256 / info.block_size, elements / 256};
  }
  return l;
}

Bytes float_bytes(T type, const std::vector<float>& values) {
  Bytes out(values.size() * (type == T::kFloat ? 4 : 2));
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    if (type == T::kFloat) {
      std::memcpy(&out[4 * i], &bits, 4);
    } else if (type == T::kBFloat16) {
      const uint16_t b = static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);  // finite values only
      std::memcpy(&out[2 * i], &b, 2);
    } else {
      // float16 of a value well inside its normal range (the bench only needs plausible data)
      const float v = values[i];
      const int e = std::ilogb(v);
      uint16_t h = 0;
      if (v != 0 && e >= -14 && e <= 15) {
        const uint32_t m = static_cast<uint32_t>(std::lround(std::ldexp(std::fabs(v), 10 - e))) - 1024;
        h = static_cast<uint16_t>((v < 0 ? 0x8000 : 0) | ((e + 15) << 10) | std::min<uint32_t>(m, 1023));
      }
      std::memcpy(&out[2 * i], &h, 2);
    }
  }
  return out;
}

class Case final : public PreparedCase {
 public:
  Case(const CaseInfo& info, int64_t elements, int offset) : info_(info), offset_(static_cast<size_t>(offset)) {
    layout_ = layout_for(info, elements);
    elements_ = element_count(layout_.shape);
    std::mt19937 rng(42);
    const int64_t scale_count = layout_.scale_shape.empty() ? 1 : element_count(layout_.scale_shape);
    const bool quantize = info.op != "dequantize";
    const T float_type = quantize ? info.x : info.y;
    const T q_type = quantize ? info.y : info.x;
    std::uniform_real_distribution<float> scale_dist(0.01f, 0.02f);
    std::vector<float> scales(static_cast<size_t>(scale_count));
    for (auto& s : scales) s = scale_dist(rng);
    scale_ = float_bytes(float_type == T::kFloat ? T::kFloat : float_type, scales);
    scale_type_ = float_type;
    if (info.e8m0_scales) {
      // Powers of two from 2^-8 to 2^-4 (codes 119..123), about the scales above.
      scale_.resize(static_cast<size_t>(scale_count));
      for (auto& b : scale_) b = static_cast<uint8_t>(119 + rng() % 5);
      scale_type_ = T::kFloat8E8M0;
    }
    if (is_integer(q_type) && !info.symmetric) {
      zero_point_.assign(storage_bytes(q_type, static_cast<uint64_t>(scale_count)), 0);
      for (auto& b : zero_point_)
        b = static_cast<uint8_t>(bits_of(q_type) == 8   ? 3
                                 : bits_of(q_type) == 4 ? 0x11
                                 : bits_of(q_type) == 2 ? 0x55
                                                        : 0);
    }
    if (quantize) {
      std::uniform_real_distribution<float> xd(-2.0f, 2.0f);
      std::vector<float> xs(static_cast<size_t>(elements_));
      for (auto& v : xs) v = xd(rng);
      x_ = float_bytes(info.x, xs);
    } else {
      x_.resize(storage_bytes(info.x, static_cast<uint64_t>(elements_)));
      for (auto& b : x_) b = static_cast<uint8_t>(rng());
      if (is_float8(info.x)) {
        for (auto& b : x_) b &= 0xBF;  // keep clear of NaN codes (the data is not what is measured)
      }
    }
    y_.assign(storage_bytes(info.y, static_cast<uint64_t>(elements_)), 0);
    x_size_ = x_.size();
    y_size_ = y_.size();
    // The operator's x and y start offset_ bytes into a line (NumPy's arrays often start 16 bytes in).
    x_.insert(x_.begin(), offset_, 0);
    y_.insert(y_.begin(), offset_, 0);
  }

  int64_t elements() const { return elements_; }
  /// x or y, whichever has more bytes (the one whose pages matter most).
  const uint8_t* larger_buffer() const { return x_size_ >= y_size_ ? x_.data() : y_.data(); }

  void run(const ExecutionOptions& options) override {
    const TensorView x{info_.x, layout_.shape, x_.data() + offset_, x_size_};
    const TensorView s{scale_type_, layout_.scale_shape, scale_.data(), scale_.size()};
    const T zp_type = info_.op == "quantize" ? info_.y : info_.x;
    const TensorView zp{zp_type, layout_.scale_shape, zero_point_.data(), zero_point_.size()};
    const MutableTensorView y{info_.y, layout_.shape, y_.data() + offset_, y_size_};
    const TensorView* zpp = zero_point_.empty() ? nullptr : &zp;
    if (info_.op == "dynamic") {
      dynamic_quantize_linear(x, y, options);
    } else if (info_.op == "quantize") {
      QuantizeLinearAttributes a;
      a.axis = layout_.axis;
      if (info_.block_size > 0) a.block_size = info_.block_size;
      if (zpp == nullptr) a.output_dtype = static_cast<int64_t>(info_.y);
      quantize_linear(a, x, s, zpp, y, options);
    } else {
      DequantizeLinearAttributes a;
      a.axis = layout_.axis;
      if (info_.block_size > 0) a.block_size = info_.block_size;
      a.output_dtype = static_cast<int64_t>(info_.y);
      dequantize_linear(a, x, s, zpp, y, options);
    }
  }

  // The references read and write as many bytes from the start of the buffers, on whole lines.
  void stream(bool non_temporal) override {
    stream_bytes(x_.data(), x_size_, y_.data(), y_size_, stream_threads_, non_temporal);
  }
  void read(bool prefetch) override { read_bytes(x_.data(), x_size_, stream_threads_, prefetch); }
  int input_passes() const override { return info_.op == "dynamic" ? 2 : 1; }
  uint64_t bytes_in() const override { return x_size_; }
  uint64_t bytes_out() const override { return y_size_; }
  void set_stream_threads(int threads) { stream_threads_ = threads; }

 private:
  CaseInfo info_;
  Layout layout_;
  int64_t elements_ = 0;
  T scale_type_ = T::kFloat;
  Bytes x_, scale_, zero_point_, y_;
  size_t offset_ = 0;  // x and y start this far into x_ and y_
  size_t x_size_ = 0;
  size_t y_size_ = 0;
  int stream_threads_ = 1;
};

/// Median seconds of one call of fn, over `repeats` samples each long enough to time (>= 2 ms).
double median_seconds(const std::function<void()>& fn, int repeats) {
  // Calibrate: how many calls make a sample of at least 2 ms.
  int64_t calls = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < calls; ++i) fn();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt >= 2e-3 || calls >= (int64_t{1} << 20)) break;
    calls *= 4;
  }
  std::vector<double> samples;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < calls; ++i) fn();
    samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(calls));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// A timed function, with what runs before and after each of its samples (outside the timing).
struct Interleaved {
  std::function<void()> call;
  std::function<void()> before = [] {};
  std::function<void()> after = [] {};
};

/// Mean seconds of one call of each function, timed in alternating samples of about a millisecond
/// each (at least one call), in random order and of random length (so that they cannot lock onto
/// the scheduler's time slices), for at least 5 samples and half a second of each. On a shared
/// machine the load changes from one millisecond to the next; means, unlike medians, keep the
/// stalls that a loaded machine causes, which are what a comparison of thread counts is about.
/// Those stalls are rare and long, so the means need many samples to settle.
std::vector<double> mean_seconds_interleaved(const std::vector<Interleaved>& fns) {
  const auto calls_for = [](const Interleaved& fn) {
    fn.before();
    int64_t calls = 1;
    for (;;) {
      const auto t0 = Clock::now();
      for (int64_t i = 0; i < calls; ++i) fn.call();
      if (Clock::now() - t0 >= std::chrono::microseconds(500) || calls >= (int64_t{1} << 20)) break;
      calls *= 2;
    }
    fn.after();
    return calls;
  };
  std::vector<int64_t> calls;
  for (const Interleaved& fn : fns) calls.push_back(calls_for(fn));
  std::mt19937 rng(7);
  std::vector<double> seconds(fns.size(), 0.0);
  std::vector<int64_t> total(fns.size(), 0);
  std::vector<size_t> order(fns.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const auto unfinished = [&] { return std::any_of(seconds.begin(), seconds.end(), [](double s) { return s < 0.5; }); };
  for (int r = 0; r < 5 || unfinished(); ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      const int64_t n = calls[i] * static_cast<int64_t>(1 + rng() % 4);
      fns[i].before();
      const auto t0 = Clock::now();
      for (int64_t k = 0; k < n; ++k) fns[i].call();
      seconds[i] += std::chrono::duration<double>(Clock::now() - t0).count();
      fns[i].after();
      total[i] += n;
    }
  }
  std::vector<double> means;
  for (size_t i = 0; i < fns.size(); ++i) means.push_back(seconds[i] / static_cast<double>(total[i]));
  return means;
}

/// The least overhead a call's tasks can have on `threads` threads, as the reference for qdq's
/// pool: thread k of n runs tasks [k·t/n, (k+1)·t/n) of every call, in order, with nothing claimed
/// or counted per task, and the helpers spin on a word between calls while active (so that no
/// wake-up is ever paid) and sleep while parked. Used as ExecutionOptions::parallel_for, one call
/// at a time; activate() before a sample of calls (outside its timing), park() after it.
class StaticSplit {
 public:
  explicit StaticSplit(int threads) : threads_(threads) {
    for (int k = 1; k < threads; ++k) helpers_.emplace_back([this, k] { help(k); });
  }
  ~StaticSplit() {
    stop_.store(true);
    active_.store(true);
    active_.notify_all();
    for (std::thread& t : helpers_) t.join();
  }
  StaticSplit(const StaticSplit&) = delete;
  StaticSplit& operator=(const StaticSplit&) = delete;

  /// Wakes the helpers and returns once every one is spinning.
  void activate() {
    active_.store(true);
    active_.notify_all();
    static const std::function<void(size_t)> nothing = [](size_t) {};
    run(0, nothing);
  }
  void park() { active_.store(false); }

  void run(size_t tasks, const std::function<void(size_t)>& body) {
    tasks_ = tasks;
    body_ = &body;
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);  // publishes tasks_ and body_
    run_share(0);
    while (done_.load(std::memory_order_acquire) != threads_ - 1) cpu_relax();
  }

 private:
  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  void run_share(int k) {
    const size_t n = static_cast<size_t>(threads_);
    for (size_t t = tasks_ * static_cast<size_t>(k) / n; t < tasks_ * static_cast<size_t>(k + 1) / n; ++t) (*body_)(t);
  }
  void help(int k) {
    uint64_t seen = 0;
    while (!stop_.load()) {
      if (!active_.load()) {
        active_.wait(false);
        continue;
      }
      const uint64_t generation = generation_.load(std::memory_order_acquire);
      if (generation == seen) {
        cpu_relax();
        continue;
      }
      seen = generation;
      run_share(k);
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  const int threads_;
  size_t tasks_ = 0;
  const std::function<void(size_t)>* body_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> active_{false};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

/// `threads` threads that keep a core busy each (arithmetic, no memory traffic) until destroyed:
/// the other work of a loaded machine, for `qdq bench --load`.
class BusyLoad {
 public:
  explicit BusyLoad(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        double x = 1.0;
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 1000; ++k) x = x * 0.999999 + 1e-6;
        }
        sink_.store(x, std::memory_order_relaxed);
      });
    }
  }
  ~BusyLoad() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> sink_{0};
  std::vector<std::thread> threads_;
};

std::string fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, v);
  return buffer;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const std::vector<CaseInfo>& all_cases() {
  static const std::vector<CaseInfo> cases = build_cases();
  return cases;
}

std::unique_ptr<PreparedCase> prepare_case(const CaseInfo& info, int64_t elements, int64_t* actual_elements,
                                           int offset) {
  if (offset < 0 || offset > 63) throw Error("bench: the offset must be 0 to 63 bytes, got " + std::to_string(offset));
  auto c = std::make_unique<Case>(info, std::max<int64_t>(1024, elements / 1024 * 1024), offset);
  if (actual_elements != nullptr) *actual_elements = c->elements();
  return c;
}

std::vector<BenchResult> run_benchmarks(const BenchOptions& options,
                                        const std::function<void(const BenchResult&)>& progress) {
  std::vector<BenchResult> results;
  // The kernels' target, and the references on the same one so that their ratios compare like with like.
  set_simd_target(options.target);
  const std::string target = simd_target();
  if (!use_reference_target(target)) use_reference_target("");
  const int threads = options.threads > 0 ? options.threads : default_num_threads();
  const BusyLoad load(options.load);
  // The cases' and the references' buffers, on the pages the options ask for (prepare_case's default
  // again afterwards).
  g_huge_pages = !options.small_pages;
  struct RestorePages {
    ~RestorePages() { g_huge_pages = true; }
  } restore_pages;
  std::unique_ptr<CeilingBuffers> ceiling_buffers;
  for (const CaseInfo& info : all_cases()) {
    if (!options.filter.empty() && info.name.find(options.filter) == std::string::npos) continue;
    int64_t elements = 0;
    auto prepared = prepare_case(info, options.elements, &elements, options.offset);
    auto* c = static_cast<Case*>(prepared.get());
    c->set_stream_threads(threads);
    std::vector<bool> kernels;  // force_scalar per row
    kernels.push_back(options.force_scalar);
    if (options.compare_scalar && !options.force_scalar) kernels.push_back(true);
    // Warm up (page faults, thread pool start-up).
    c->stream(false);
    c->stream(true);
    c->run(ExecutionOptions{});
    const bool huge_pages = on_huge_page(c->larger_buffer());
    const bool quantize = info.op != "dequantize";
    const bool in_cache = c->bytes_in() + c->bytes_out() <= kInCacheBytes;
    if (!ceiling_buffers || static_cast<int64_t>(ceiling_buffers->floats.size()) < elements) {
      ceiling_buffers.reset();
      ceiling_buffers = std::make_unique<CeilingBuffers>(elements);
    }
    ceiling(*ceiling_buffers, quantize, elements, threads);
    for (bool scalar : kernels) {
      ExecutionOptions exec;
      exec.num_threads = options.threads;
      exec.force_scalar = scalar;
      // The references before and after the kernel; the faster of the two is the machine's limit
      // (on a shared machine either may have lost its core for a while). An operator that reads x
      // twice is held to that traffic: a reading pass over x (the faster of a plain loop and one
      // that asks for lines ahead) before the streaming pass.
      const bool reads_twice = c->input_passes() == 2;
      const auto references = [&] {
        return std::array<double, 4>{
            median_seconds([&] { c->stream(false); }, options.repeats),
            median_seconds([&] { c->stream(true); }, options.repeats),
            median_seconds([&] { ceiling(*ceiling_buffers, quantize, elements, threads); }, options.repeats),
            reads_twice ? std::min(median_seconds([&] { c->read(false); }, options.repeats),
                                   median_seconds([&] { c->read(true); }, options.repeats))
                        : 0.0};
      };
      const std::array<double, 4> before = references();
      double seconds = 0;
      std::vector<double> means;  // compare_one_thread: exec, one thread, then the static split
      if (options.compare_one_thread) {
        ExecutionOptions one = exec;
        one.num_threads = 1;
        std::vector<Interleaved> fns{{[&] { c->run(exec); }}, {[&] { c->run(one); }}};
        std::unique_ptr<StaticSplit> split;
        ExecutionOptions split_exec = exec;
        if (threads > 1) {
          split = std::make_unique<StaticSplit>(threads);
          split_exec.parallel_for = [&](size_t tasks, const std::function<void(size_t)>& body) {
            split->run(tasks, body);
          };
          fns.push_back({[&] { c->run(split_exec); }, [&] { split->activate(); }, [&] { split->park(); }});
        }
        means = mean_seconds_interleaved(fns);
        seconds = means[0];
      } else {
        seconds = median_seconds([&] { c->run(exec); }, options.repeats);
      }
      const std::array<double, 4> after = references();
      const double bytes =
          static_cast<double>(c->bytes_in() * static_cast<uint64_t>(c->input_passes()) + c->bytes_out());
      const double read_seconds = std::min(before[3], after[3]);
      BenchResult r;
      r.name = info.name;
      r.op = info.op;
      r.x = data_type_name(info.x);
      r.y = data_type_name(info.y);
      r.granularity = info.granularity;
      r.block_size = info.block_size;
      r.elements = elements;
      r.threads = threads;
      r.kernel = scalar ? "scalar" : "simd";
      r.seconds = seconds;
      r.gelem_per_s = static_cast<double>(elements) / seconds / 1e9;
      r.gbps = bytes / seconds / 1e9;
      r.stream_normal_gbps = bytes / (read_seconds + std::min(before[0], after[0])) / 1e9;
      r.stream_nt_gbps = bytes / (read_seconds + std::min(before[1], after[1])) / 1e9;
      r.stream_gbps = std::max(r.stream_normal_gbps, r.stream_nt_gbps);
      r.ratio = r.gbps / r.stream_gbps;
      r.ceiling_gelem_per_s = static_cast<double>(elements) / std::min(before[2], after[2]) / 1e9;
      r.ceiling_ratio = r.gelem_per_s / r.ceiling_gelem_per_s;
      r.reference = in_cache ? "ceiling" : "streaming";
      r.vs_reference = in_cache ? r.ceiling_ratio : r.ratio;
      r.reference_target = reference_target();
      r.target = scalar ? "" : target;
      // FLOAT8E8M0 scales are powers of two: the vector kernels multiply by their exact reciprocals
      // (the bench's codes all have one).
      if (quantize && !scalar) {
        // The scale is of x's type, which is then the division type.
        r.routes = info.e8m0_scales ? "exact reciprocal" : quantize_division_route(info.y, info.x);
      }
      if (quantize && scalar) r.routes = "division";
      r.stores = scalar ? "normal" : output_stores(c->bytes_out());
      if (!scalar) {
        const auto count = static_cast<uint64_t>(elements);
        r.x_requests = info.op == "dequantize" ? x_line_requests("dequantize", info.x, count)
                       : info.op == "dynamic"  ? std::string(x_line_requests("range", info.x, count)) + ", " +
                                                    x_line_requests("quantize", info.x, count)
                                              : x_line_requests("quantize", info.x, count);
      }
      r.load = options.load;
      r.offset = options.offset;
      r.pages = huge_pages ? "2 MiB" : "4 KiB";
      if (options.compare_one_thread) {
        r.one_thread_gelem_per_s = static_cast<double>(elements) / means[1] / 1e9;
        r.vs_one_thread = means[1] / means[0];
      }
      if (means.size() > 2) {
        r.static_split_gelem_per_s = static_cast<double>(elements) / means[2] / 1e9;
        r.vs_static_split = means[2] / means[0];
      }
      if (progress) progress(r);
      results.push_back(r);
    }
  }
  return results;
}

std::string to_json(const std::vector<BenchResult>& results) {
  std::string out = "[\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    out += "  {\"case\": " + json_string(r.name) + ", \"op\": " + json_string(r.op) + ", \"x\": " + json_string(r.x) +
           ", \"y\": " + json_string(r.y) + ", \"granularity\": " + json_string(r.granularity) +
           ", \"block_size\": " + std::to_string(r.block_size) + ", \"elements\": " + std::to_string(r.elements) +
           ", \"threads\": " + std::to_string(r.threads) + ", \"kernel\": " + json_string(r.kernel) +
           ", \"seconds\": " + fixed(r.seconds, 9) + ", \"gelem_per_s\": " + fixed(r.gelem_per_s, 4) +
           ", \"gbps\": " + fixed(r.gbps, 3) + ", \"stream_gbps\": " + fixed(r.stream_gbps, 3) +
           ", \"stream_normal_gbps\": " + fixed(r.stream_normal_gbps, 3) +
           ", \"stream_nt_gbps\": " + fixed(r.stream_nt_gbps, 3) + ", \"ratio\": " + fixed(r.ratio, 3) +
           ", \"ceiling_gelem_per_s\": " + fixed(r.ceiling_gelem_per_s, 4) +
           ", \"ceiling_ratio\": " + fixed(r.ceiling_ratio, 3) + ", \"reference\": " + json_string(r.reference) +
           ", \"vs_reference\": " + fixed(r.vs_reference, 3) +
           ", \"reference_target\": " + json_string(r.reference_target) + ", \"target\": " + json_string(r.target) +
           ", \"routes\": " + json_string(r.routes) + ", \"stores\": " + json_string(r.stores) +
           ", \"x_requests\": " + json_string(r.x_requests) + ", \"load\": " + std::to_string(r.load) +
           ", \"offset\": " + std::to_string(r.offset) + ", \"pages\": " + json_string(r.pages) +
           ", \"one_thread_gelem_per_s\": " + fixed(r.one_thread_gelem_per_s, 4) +
           ", \"vs_one_thread\": " + fixed(r.vs_one_thread, 3) +
           ", \"static_split_gelem_per_s\": " + fixed(r.static_split_gelem_per_s, 4) +
           ", \"vs_static_split\": " + fixed(r.vs_static_split, 3) + "}";
    out += i + 1 < results.size() ? ",\n" : "\n";
  }
  return out + "]\n";
}

std::string table_header(bool thread_columns) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "%-46s %-6s %7s %10s %8s %8s %6s %8s %6s %-9s %6s %-6s %-5s", "case", "kernel",
                "threads", "Gelem/s", "GB/s", "streamGB", "ratio", "ceilGe/s", "vsCeil", "ref", "vsRef", "stores",
                "pages");
  std::string header = buffer;
  if (thread_columns) {
    std::snprintf(buffer, sizeof buffer, " %4s %10s %6s %10s %6s", "load", "1T Gelem/s", "vs1T", "statGe/s", "vsStat");
    header += buffer;
  }
  return header;
}

std::string table_row(const BenchResult& r) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, "%-46s %-6s %7d %10.3f %8.2f %8.2f %6.2f %8.2f %6.2f %-9s %6.2f %-6s %-5s",
                r.name.c_str(), r.kernel.c_str(), r.threads, r.gelem_per_s, r.gbps, r.stream_gbps, r.ratio,
                r.ceiling_gelem_per_s, r.ceiling_ratio, r.reference.c_str(), r.vs_reference,
                r.stores == "non-temporal" ? "nt" : r.stores.c_str(), r.pages == "2 MiB" ? "2M" : "4K");
  std::string row = buffer;
  if (r.vs_one_thread > 0) {
    std::snprintf(buffer, sizeof buffer, " %4d %10.3f %6.2f", r.load, r.one_thread_gelem_per_s, r.vs_one_thread);
    row += buffer;
    if (r.vs_static_split > 0) {
      std::snprintf(buffer, sizeof buffer, " %10.3f %6.2f", r.static_split_gelem_per_s, r.vs_static_split);
      row += buffer;
    }
  }
  return row;
}

std::string to_table(const std::vector<BenchResult>& results) {
  const bool thread_columns =
      std::any_of(results.begin(), results.end(), [](const BenchResult& r) { return r.vs_one_thread > 0; });
  std::string out = table_header(thread_columns) + "\n";
  for (const BenchResult& r : results) out += table_row(r) + "\n";
  return out;
}

}  // namespace qdq::bench
