// The vectorised kernels (Highway, one build per CPU target) as seen from the rest of qdq: which
// targets this CPU can run, and the kernel a target offers for a call. Plain C++: no SIMD types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernels.hpp"

namespace qdq::detail::simd {

struct Target {
  int64_t bit;       // Highway's target bit (HWY_AVX2, ...)
  std::string name;  // "AVX2", ...
};

/// Targets with kernels compiled into qdq that this CPU can run, best first.
const std::vector<Target>& available_targets();

/// The target the operators use: the one set_target chose, else the best available one, or 0 where
/// there is none (the scalar reference kernels are then used).
int64_t best_target();

/// Targets with kernels compiled into qdq, whether or not this CPU runs them, best first.
std::vector<Target> compiled_targets();

/// Makes best_target() return `target` (one of available_targets(); 0 = the best again). For
/// benchmarks (qdq::set_simd_target checks the name); atomic, but not meant to race running calls.
void set_target(int64_t target);

/// The vectorised kernel of `target` for this call that writes y as `stores` says, or nullptr where
/// it does not cover the call's type combination (the scalar kernel is then used).
QuantizeKernel quantize_kernel_for_target(int64_t target, const QuantizeCall& call,
                                          StoreMode stores = StoreMode::kNormal);
DequantizeKernel dequantize_kernel_for_target(int64_t target, const DequantizeCall& call,
                                              StoreMode stores = StoreMode::kNormal);

/// `target`'s DynamicQuantizeLinear range kernel (range_scalar's results), or nullptr where it has none.
RangeKernel range_kernel_for_target(int64_t target);

/// Writes a fixed byte to [dst, dst + bytes) (dst aligned to 64, bytes a multiple of 64) with whole
/// vectors of `target`'s width and `stores` (kStream: then one store fence): the loop that
/// store_policy.cpp times. No allocation; thread-safe.
void fill_lines(int64_t target, uint8_t* dst, size_t bytes, StoreMode stores);

/// Writes each byte of src[0, dst_bytes / 4) widened to a uint32 at dst (dst aligned to 64,
/// dst_bytes a multiple of 64) with whole vectors of `target`'s width and `stores` (kStream: then
/// one store fence): dequantize's traffic, four bytes written per byte read, the loop that
/// store_policy.cpp times. No allocation; thread-safe.
void widen_lines(int64_t target, const uint8_t* src, uint8_t* dst, size_t dst_bytes, StoreMode stores);

}  // namespace qdq::detail::simd
