// The run-time choice of quotient route per target (quotient_route.hpp): each route's per-tensor
// kernels timed on an in-cache buffer, alternating, the faster kept by a margin.
#include "kernels/simd/quotient_route.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "hwy/highway.h"
#include "kernels/simd/simd_kernels.hpp"
#include "plan.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail::simd {
namespace {

QuotientRoute route_from_environment() {
  const char* value = std::getenv("QDQ_QUANTIZE_ROUTE");
  if (value == nullptr) return QuotientRoute::kAuto;
  if (std::strcmp(value, "divide") == 0) return QuotientRoute::kDivide;
  if (std::strcmp(value, "reciprocal") == 0 || std::strcmp(value, "markstein") == 0) return QuotientRoute::kReciprocal;
  return QuotientRoute::kAuto;
}

std::atomic<int>& forced() {
  static std::atomic<int> route{static_cast<int>(route_from_environment())};
  return route;
}

// Set on the measuring thread only, so that its timed runs take the route being timed while other
// threads keep theirs.
thread_local QuotientRoute measuring = QuotientRoute::kAuto;

bool has_fma(int64_t target) {
#if HWY_ARCH_X86
  return target == HWY_AVX2 || target == HWY_AVX3 || target == HWY_AVX3_DL;
#else
  (void)target;
  return false;
#endif
}

/// The route a target keeps where the two measured within the margin of each other: on the Xeon
/// (AVX-512) measured for docs/performance.md, the reciprocal routes won by 1.5-3x at 512 bits and
/// were level with or ahead of the division at 256 bits, where Zen 3's fast vdivps may tie them.
QuotientRoute default_route(int64_t target) {
  (void)target;
  return QuotientRoute::kReciprocal;
}

/// The two routes' best times (seconds) for one per-tensor float32 -> y kernel of `target` on an
/// in-cache buffer of quantization-like data (quotients within ±127, fractions spread evenly).
struct Timing {
  double divide = 1e30;
  double reciprocal = 1e30;
};

class KernelTimer {
 public:
  KernelTimer(int64_t target, DataType y) : x_(kElements) {
    uint32_t state = 12345;
    for (float& v : x_) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) * 0x1p-23f * 2.0f;  // [-2, 2)
    }
    shape_[0] = kElements;
    const TensorView xv{DataType::kFloat, shape_, x_.data(), x_.size() * sizeof(float)};
    const TensorView sv{DataType::kFloat, {}, &scale_, sizeof(float)};
    QuantizeLinearAttributes attributes;
    attributes.output_dtype = static_cast<int64_t>(y);
    call_ = plan_quantize(attributes, xv, sv, nullptr);
    kernel_ = quantize_kernel_for_target(target, call_);
    y_.resize(static_cast<size_t>(call_.y_bytes));
  }

  bool valid() const { return kernel_ != nullptr; }

  /// One run of the kernel with `route`, in seconds.
  double run(QuotientRoute route) {
    measuring = route;
    const auto start = std::chrono::steady_clock::now();
    kernel_(call_, y_.data(), 0, kElements);
    const auto stop = std::chrono::steady_clock::now();
    measuring = QuotientRoute::kAuto;
    return std::chrono::duration<double>(stop - start).count();
  }

 private:
  static constexpr int64_t kElements = 2048;  // 8 KiB in: in L1 beside the output
  std::vector<float> x_;
  std::array<int64_t, 1> shape_{};
  const float scale_ = 2.0f / 127.0f;  // not a power of two: the reciprocal routes apply
  QuantizeCall call_{};
  QuantizeKernel kernel_ = nullptr;
  std::vector<uint8_t> y_;
};

struct Measured {
  QuotientRoute rounding_check = QuotientRoute::kDivide;
  QuotientRoute other = QuotientRoute::kDivide;
};

QuotientRoute decide(const Timing& t, int64_t target) {
  constexpr double kMargin = 0.95;
  if (t.reciprocal <= kMargin * t.divide) return QuotientRoute::kReciprocal;
  if (t.divide <= kMargin * t.reciprocal) return QuotientRoute::kDivide;
  return default_route(target);
}

/// Times int8 (rounding check) and int16 (Markstein) outputs with each route, best of 16 runs each,
/// the routes and kernels alternating so that a slow moment of the machine hits them alike.
Measured measure(int64_t target) {
  KernelTimer narrow(target, DataType::kInt8);
  KernelTimer wide(target, DataType::kInt16);
  Timing narrow_time, wide_time;
  if (!narrow.valid() || !wide.valid()) return {};
  for (const QuotientRoute route : {QuotientRoute::kDivide, QuotientRoute::kReciprocal}) {  // warm caches
    narrow.run(route);
    wide.run(route);
  }
  for (int round = 0; round < 16; ++round) {
    narrow_time.divide = std::min(narrow_time.divide, narrow.run(QuotientRoute::kDivide));
    narrow_time.reciprocal = std::min(narrow_time.reciprocal, narrow.run(QuotientRoute::kReciprocal));
    wide_time.divide = std::min(wide_time.divide, wide.run(QuotientRoute::kDivide));
    wide_time.reciprocal = std::min(wide_time.reciprocal, wide.run(QuotientRoute::kReciprocal));
  }
  return {decide(narrow_time, target), decide(wide_time, target)};
}

}  // namespace

void force_quotient_route(QuotientRoute route) { forced().store(static_cast<int>(route), std::memory_order_relaxed); }

QuotientRoute forced_quotient_route() { return static_cast<QuotientRoute>(forced().load(std::memory_order_relaxed)); }

QuotientRoute quotient_route(int64_t target, bool rounding_check) {
  if (!has_fma(target)) return QuotientRoute::kDivide;
  if (measuring != QuotientRoute::kAuto) return measuring;
  const QuotientRoute route = forced_quotient_route();
  if (route != QuotientRoute::kAuto) return route;
  constexpr int kBits = 64;
  static std::array<std::once_flag, kBits> once;
  static std::array<std::atomic<int>, kBits> measured{};  // Measured's two routes, 4 bits each
  const size_t index = static_cast<size_t>(std::countr_zero(static_cast<uint64_t>(target)) % kBits);
  std::call_once(once[index], [&] {
    const Measured m = measure(target);
    measured[index].store(static_cast<int>(m.rounding_check) | (static_cast<int>(m.other) << 4));
  });
  const int both = measured[index].load();
  return static_cast<QuotientRoute>(rounding_check ? both & 0xF : both >> 4);
}

const char* quotient_route_name(QuotientRoute route) {
  switch (route) {
    case QuotientRoute::kDivide: return "division";
    case QuotientRoute::kReciprocal: return "reciprocal";
    case QuotientRoute::kAuto: break;
  }
  return "auto";
}

const char* quotient_route_description(int64_t target, DataType y) {
  const bool rounding_check = rounding_check_applies(y);
  if (quotient_route(target, rounding_check) != QuotientRoute::kReciprocal) return "division";
  return rounding_check ? "rounding check" : "Markstein reciprocal";
}

}  // namespace qdq::detail::simd
