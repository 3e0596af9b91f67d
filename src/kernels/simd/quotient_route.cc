// The run-time choice of quotient route per target (quotient_route.hpp): each route's per-tensor
// kernels timed on an in-cache buffer, alternating, the faster kept by a margin.
#include "kernels/simd/quotient_route.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include "hwy/highway.h"
#include "kernels/simd/forced_choice.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "plan.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail::simd {
namespace {

constexpr NamedChoice<QuotientRoute> kNames[] = {{"divide", QuotientRoute::kDivide},
                                                 {"reciprocal", QuotientRoute::kReciprocal},
                                                 {"markstein", QuotientRoute::kReciprocal}};

ForcedChoice<QuotientRoute>& forced() {
  static ForcedChoice<QuotientRoute> route("QDQ_QUANTIZE_ROUTE", kNames);
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
/// in-cache buffer of quantization-like data (quotients within ±127, fractions spread evenly; for
/// float8e4m3fn, codes of every binade up to 127).
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

  /// One run of the kernel with `route`, in seconds, timed after an untimed one: a first run after
  /// another kernel measured up to 20 % off either way on the Xeon (AVX-512), enough to flip a choice.
  double run(QuotientRoute route) {
    measuring = route;
    kernel_(call_, y_.data(), 0, kElements);
    const auto start = std::chrono::steady_clock::now();
    kernel_(call_, y_.data(), 0, kElements);
    const auto stop = std::chrono::steady_clock::now();
    measuring = QuotientRoute::kAuto;
    return std::chrono::duration<double>(stop - start).count();
  }

 private:
  static constexpr int64_t kElements = 4096;  // 16 KiB in: in L1 beside the output
  std::vector<float> x_;
  std::array<int64_t, 1> shape_{};
  const float scale_ = 2.0f / 127.0f;  // not a power of two: the reciprocal routes apply
  QuantizeCall call_{};
  QuantizeKernel kernel_ = nullptr;
  std::vector<uint8_t> y_;
};

QuotientRoute decide(const Timing& t, int64_t target) {
  constexpr double kMargin = 0.95;
  if (t.reciprocal <= kMargin * t.divide) return QuotientRoute::kReciprocal;
  if (t.divide <= kMargin * t.reciprocal) return QuotientRoute::kDivide;
  return default_route(target);
}

/// The output types timed for the ReciprocalKinds: a kind's routes are compared on the sum of its
/// outputs' times. The rounding check is timed on int8 and on uint4 too: on Zen 3 (AVX2) the two
/// routes tie on int8 in L1 (the reciprocal 1.03-1.08x the division's time), where the check costs
/// more on every 2/4-bit, per-axis and blocked output (the division 1.2-1.3x as fast in one
/// process), so that an int8-only probe kept the slower route for those.
constexpr std::array<DataType, 4> kTimedOutputs{DataType::kInt8, DataType::kUint4, DataType::kFloat8E4M3FN,
                                                DataType::kInt16};
static_assert(reciprocal_kind(kTimedOutputs[0], false) == ReciprocalKind::kRoundingCheck &&
              reciprocal_kind(kTimedOutputs[1], false) == ReciprocalKind::kRoundingCheck &&
              reciprocal_kind(kTimedOutputs[2], false) == ReciprocalKind::kCodeCheck &&
              reciprocal_kind(kTimedOutputs[3], false) == ReciprocalKind::kMarkstein);

/// Times each output with each route, best of 16 runs each, the routes and kernels alternating so
/// that a slow moment of the machine hits them alike.
std::array<QuotientRoute, kReciprocalKinds> measure(int64_t target) {
  std::array<QuotientRoute, kReciprocalKinds> routes;
  routes.fill(QuotientRoute::kDivide);
  std::vector<KernelTimer> timers;
  timers.reserve(kTimedOutputs.size());  // each timer's call points at its own members: never moved
  for (const DataType y : kTimedOutputs) {
    timers.emplace_back(target, y);
    if (!timers.back().valid()) return routes;
  }
  std::array<Timing, kTimedOutputs.size()> best;
  for (const QuotientRoute route : {QuotientRoute::kDivide, QuotientRoute::kReciprocal}) {  // warm caches
    for (KernelTimer& timer : timers) timer.run(route);
  }
  for (int round = 0; round < 16; ++round) {
    for (size_t k = 0; k < timers.size(); ++k) {
      best[k].divide = std::min(best[k].divide, timers[k].run(QuotientRoute::kDivide));
      best[k].reciprocal = std::min(best[k].reciprocal, timers[k].run(QuotientRoute::kReciprocal));
    }
  }
  std::array<Timing, kReciprocalKinds> times;
  times.fill(Timing{0, 0});
  for (size_t k = 0; k < timers.size(); ++k) {
    Timing& t = times[static_cast<size_t>(reciprocal_kind(kTimedOutputs[k], false))];
    t.divide += best[k].divide;
    t.reciprocal += best[k].reciprocal;
  }
  for (size_t kind = 0; kind < times.size(); ++kind) routes[kind] = decide(times[kind], target);
  return routes;
}

}  // namespace

void force_quotient_route(QuotientRoute route) { forced().force(route); }

QuotientRoute forced_quotient_route() { return forced().get(); }

QuotientRoute quotient_route(int64_t target, ReciprocalKind kind) {
  if (!has_fma(target)) return QuotientRoute::kDivide;
  if (measuring != QuotientRoute::kAuto) return measuring;
  const QuotientRoute route = forced_quotient_route();
  if (route != QuotientRoute::kAuto) return route;
  static OncePerTarget<std::array<QuotientRoute, kReciprocalKinds>> measured;
  return measured.get(target, measure)[static_cast<size_t>(kind)];
}

const char* quotient_route_name(QuotientRoute route) {
  switch (route) {
    case QuotientRoute::kDivide: return "division";
    case QuotientRoute::kReciprocal: return "reciprocal";
    case QuotientRoute::kAuto: break;
  }
  return "auto";
}

const char* quotient_route_description(int64_t target, DataType division_type, DataType y) {
  if (is_half_division(division_type)) return half_product_route() ? "16-bit reciprocal" : "division";
  if (division_type != DataType::kFloat) return "division";  // float64 (int32 scales): the scalar kernels
  const ReciprocalKind kind = reciprocal_kind(y, false);
  if (quotient_route(target, kind) != QuotientRoute::kReciprocal) return "division";
  switch (kind) {
    case ReciprocalKind::kRoundingCheck: return "rounding check";
    case ReciprocalKind::kCodeCheck: return "code rounding check";
    case ReciprocalKind::kMarkstein: return "Markstein reciprocal";
  }
  return "division";
}

}  // namespace qdq::detail::simd
