// CPU detection for qdq's Highway targets. Highway's own detection lives in libhwy; doing it here
// (cpuid and XGETBV, which also tell whether the OS saves the AVX/AVX-512 state)
// keeps qdq dependent on Highway's headers only.
#include "kernels/simd/config.h"

#include "hwy/highway.h"

#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#include <atomic>
#include <cstdint>

#include "kernels/simd/simd_kernels.hpp"

namespace qdq::detail::simd {
namespace {

#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
struct CpuFeatures {
  bool sse4 = false;
  bool avx2 = false;
  bool avx3 = false;
};

/// cpuid plus XGETBV (does the OS save the YMM/ZMM state?). Written with <cpuid.h>, which GCC and
/// clang both provide, rather than __builtin_cpu_supports, whose feature names differ between them.
CpuFeatures read_cpu_features() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const unsigned leaf1_ecx = c;
  f.sse4 = (leaf1_ecx & bit_SSSE3) && (leaf1_ecx & bit_SSE4_1) && (leaf1_ecx & bit_SSE4_2) &&
           (leaf1_ecx & bit_PCLMUL) && (leaf1_ecx & bit_AES);
  uint64_t xcr0 = 0;
  if (leaf1_ecx & bit_OSXSAVE) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (uint64_t{hi} << 32) | lo;
  }
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return f;
  const unsigned leaf7_ebx = b;
  // The features each target's code may use (Highway's HWY_TARGET_STR_* for the target).
  f.avx2 = f.sse4 && ymm_state && (leaf1_ecx & bit_AVX) && (leaf1_ecx & bit_FMA) && (leaf1_ecx & bit_F16C) &&
           (leaf7_ebx & bit_AVX2) && (leaf7_ebx & bit_BMI) && (leaf7_ebx & bit_BMI2);
  f.avx3 = f.avx2 && zmm_state && (leaf7_ebx & bit_AVX512F) && (leaf7_ebx & bit_AVX512VL) &&
           (leaf7_ebx & bit_AVX512DQ) && (leaf7_ebx & bit_AVX512BW);
  return f;
}
#endif

bool cpu_runs(int64_t target) {
  if (target == HWY_STATIC_TARGET) return true;
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
  static const CpuFeatures features = read_cpu_features();
  if (target == HWY_SSE4) return features.sse4;
  if (target == HWY_AVX2) return features.avx2;
  if (target == HWY_AVX3) return features.avx3;
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

namespace {
std::atomic<int64_t> chosen_target{0};  // set_target's choice; 0 = the best available
}  // namespace

std::vector<Target> compiled_targets() {
  std::vector<Target> targets;
  for (int64_t remaining = HWY_TARGETS; remaining != 0; remaining &= remaining - 1) {
    const int64_t bit = remaining & -remaining;
    if (bit != HWY_SCALAR && bit != HWY_EMU128) targets.push_back({bit, hwy::TargetName(bit)});
  }
  return targets;
}

void set_target(int64_t target) { chosen_target.store(target, std::memory_order_relaxed); }

int64_t best_target() {
  static const int64_t best = [] {
    return available_targets().empty() ? int64_t{0} : available_targets().front().bit;
  }();
  const int64_t chosen = chosen_target.load(std::memory_order_relaxed);
  return chosen != 0 ? chosen : best;
}

}  // namespace qdq::detail::simd
