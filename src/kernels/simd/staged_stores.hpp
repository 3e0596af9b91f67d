// Whether the 512-bit dequantize kernels for blocks of whole vectors write a float32 y that starts
// off a vector boundary through a stage, copied to y on whole vectors, or store to y directly, each
// 64-byte store then crossing a cache line. On the Intel Xeon the stage won 1.6x in cache; on Zen 4,
// which splits 512-bit stores into 256-bit halves anyway, it ran at 0.64-0.68x the speed of direct
// stores (docs/performance.md, "Zen 4: the store probe's median, staged stores measured"). So each target times both
// once, at first use, on its own kernel. Plain C++.
#pragma once

#include <cstdint>

#include "kernels/simd/forced_choice.hpp"

namespace qdq::detail::simd {

enum class StagedStores : int { kAuto = 0, kDirect = 1, kStaged = 2 };

/// Forces the choice of every target (kAuto: the measured one) until forced again; starts as
/// QDQ_STAGED_STORES (auto|direct|staged, anything else = auto) says. Allocates nothing; atomic, but
/// meant to be called while no kernel runs (tests, benchmarks).
void force_staged_stores(StagedStores choice);

/// The forced choice (kAuto where none is). Allocates nothing; thread-safe.
StagedStores forced_staged_stores();

/// Whether `target`'s blocked dequantize kernels stage a float32 y that starts off a vector
/// boundary: the forced choice, or the one measured once per target at first use (int4 -> float32 in
/// blocks of 32 along rows of 1024, 16 Ki elements, y 16 bytes into a line, best of 16 alternating
/// runs of each after an untimed one; about 0.2 ms on the calling thread), the stage kept only where
/// it was faster by 3 %. Allocates only small buffers while measuring; thread-safe.
bool stages_misaligned_output(int64_t target);

/// Forces a choice and restores the one it found when it goes out of scope (tests). Not thread-safe.
using ScopedStagedStores = ScopedForced<StagedStores, force_staged_stores, forced_staged_stores>;

}  // namespace qdq::detail::simd
