// The run-time choice of quotient route per target (quotient_route.hpp): both routes' per-tensor
// float32 -> int8 kernel timed on an in-cache buffer, the faster kept.
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
  if (std::strcmp(value, "markstein") == 0) return QuotientRoute::kMarkstein;
  return QuotientRoute::kAuto;
}

std::atomic<int>& forced() {
  static std::atomic<int> route{static_cast<int>(route_from_environment())};
  return route;
}

// Set on the measuring thread only, so that its two timed runs take the route being timed while
// other threads keep theirs.
thread_local QuotientRoute measuring = QuotientRoute::kAuto;

bool has_fma(int64_t target) {
#if HWY_ARCH_X86
  return target == HWY_AVX2 || target == HWY_AVX3 || target == HWY_AVX3_DL;
#else
  (void)target;
  return false;
#endif
}

/// Times the per-tensor float32 -> int8 kernel of `target` with each route (best of several runs of
/// 4096 elements, alternating) and returns the faster.
QuotientRoute measure(int64_t target) {
  constexpr int64_t kElements = 4096;  // 16 KiB in, 4 KiB out: in L1
  std::vector<float> x(kElements);
  for (int64_t i = 0; i < kElements; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 511 - 255) * 0.37f;
  const float scale = 0.0173f;  // not a power of two: the Markstein route applies
  const std::array<int64_t, 1> shape{kElements};
  const TensorView xv{DataType::kFloat, shape, x.data(), x.size() * sizeof(float)};
  const TensorView sv{DataType::kFloat, {}, &scale, sizeof(float)};
  QuantizeLinearAttributes attributes;
  attributes.output_dtype = static_cast<int64_t>(DataType::kInt8);
  const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
  const QuantizeKernel kernel = quantize_kernel_for_target(target, call);
  if (kernel == nullptr) return QuotientRoute::kDivide;
  std::vector<uint8_t> y(static_cast<size_t>(call.y_bytes));
  const QuotientRoute routes[2] = {QuotientRoute::kDivide, QuotientRoute::kMarkstein};
  double best[2] = {1e30, 1e30};
  for (int round = 0; round < 8; ++round) {
    for (int r = 0; r < 2; ++r) {
      measuring = routes[r];
      const auto start = std::chrono::steady_clock::now();
      kernel(call, y.data(), 0, kElements);
      const auto stop = std::chrono::steady_clock::now();
      best[r] = std::min(best[r], std::chrono::duration<double>(stop - start).count());
    }
  }
  measuring = QuotientRoute::kAuto;
  return best[1] < best[0] ? QuotientRoute::kMarkstein : QuotientRoute::kDivide;
}

}  // namespace

void force_quotient_route(QuotientRoute route) { forced().store(static_cast<int>(route), std::memory_order_relaxed); }

QuotientRoute forced_quotient_route() { return static_cast<QuotientRoute>(forced().load(std::memory_order_relaxed)); }

QuotientRoute quotient_route(int64_t target) {
  if (!has_fma(target)) return QuotientRoute::kDivide;
  if (measuring != QuotientRoute::kAuto) return measuring;
  const QuotientRoute route = forced_quotient_route();
  if (route != QuotientRoute::kAuto) return route;
  constexpr int kBits = 64;
  static std::array<std::once_flag, kBits> once;
  static std::array<std::atomic<int>, kBits> measured{};
  const int index = std::countr_zero(static_cast<uint64_t>(target)) % kBits;
  std::call_once(once[static_cast<size_t>(index)],
                 [&] { measured[static_cast<size_t>(index)].store(static_cast<int>(measure(target))); });
  return static_cast<QuotientRoute>(measured[static_cast<size_t>(index)].load());
}

const char* quotient_route_name(QuotientRoute route) {
  switch (route) {
    case QuotientRoute::kDivide: return "division";
    case QuotientRoute::kMarkstein: return "Markstein reciprocal";
    case QuotientRoute::kAuto: break;
  }
  return "auto";
}

}  // namespace qdq::detail::simd
