// CPU detection for qdq's Highway targets. Highway's own detection lives in libhwy; doing it here
// (with the compiler's cpuid builtins, which also check that the OS saves the AVX/AVX-512 state)
// keeps qdq dependent on Highway's headers only.
#include "kernels/simd/config.h"

#include "hwy/highway.h"

#include "kernels/simd/simd_kernels.hpp"

namespace qdq::detail::simd {
namespace {

bool cpu_runs(int64_t target) {
  if (target == HWY_STATIC_TARGET) return true;
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // The features each target's code may use (Highway's HWY_TARGET_STR_* for the target).
  const bool sse4 = __builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
                    __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("aes");
  const bool avx2 = sse4 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                    __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx3 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  if (target == HWY_SSE4) return sse4;
  if (target == HWY_AVX2) return avx2;
  if (target == HWY_AVX3) return avx3;
#endif
  return false;
}

std::vector<Target> detect() {
  std::vector<Target> targets;
  // Lower bits are better targets in Highway's numbering.
  for (int64_t remaining = HWY_TARGETS; remaining != 0; remaining &= remaining - 1) {
    const int64_t bit = remaining & -remaining;
    if (bit == HWY_SCALAR || bit == HWY_EMU128) continue;  // no kernels there (config.h)
    if (cpu_runs(bit)) targets.push_back({bit, hwy::TargetName(bit)});
  }
  return targets;
}

}  // namespace

const std::vector<Target>& available_targets() {
  static const std::vector<Target> targets = detect();
  return targets;
}

int64_t best_target() {
  static const int64_t best = [] {
    return available_targets().empty() ? int64_t{0} : available_targets().front().bit;
  }();
  return best;
}

}  // namespace qdq::detail::simd
