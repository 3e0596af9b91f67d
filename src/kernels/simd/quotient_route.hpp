// How the vectorised quantize kernels form x / s for float32 division by one scale held in a register:
// the division, or a reciprocal route that gives the same codes (markstein-inl.h): the rounding check
// for integer outputs of at most 8 bits, the rounding check on the code for the float8 types and
// FLOAT4E2M1, Markstein's corrected reciprocal for the others. Which is faster depends on the target,
// the CPU and the output (vdivps at 512 bits is slow on Intel, fast at 256 bits on Zen 3), so each
// target times both once per kind, at first use, on the real kernels. Plain C++.
#pragma once

#include <cstdint>

#include "kernels/simd/forced_choice.hpp"
#include "qdq/types.hpp"
#include "types/integer_types.hpp"

namespace qdq::detail::simd {

enum class QuotientRoute : int { kAuto = 0, kDivide = 1, kReciprocal = 2 };

/// Which reciprocal route an output takes where its target chose the reciprocal over the division.
enum class ReciprocalKind : int {
  kRoundingCheck = 0,  // integers of at most 8 bits, whose every quotient beyond ±384 saturates
  kCodeCheck = 1,      // float8 and FLOAT4E2M1: the rounding check on the encoder's scaled value
  kMarkstein = 2,      // the others: Markstein's corrected reciprocal, the quotient itself
};
inline constexpr int kReciprocalKinds = 3;

/// Whether output type y's reciprocal route is the rounding check (integers of at most 8 bits).
/// Allocates nothing.
constexpr bool rounding_check_applies(DataType y) { return is_quantized_integer(y) && quantized_bits(y) <= 8; }

/// Whether output type y's reciprocal route is the rounding check on the code: the float8 types, and
/// FLOAT4E2M1 where no zero point is added to the quotient before it is encoded. Allocates nothing.
constexpr bool code_check_applies(DataType y, bool zero_point) {
  return is_float8(y) || (y == DataType::kFloat4E2M1 && !zero_point);
}

/// Whether QuantizeLinear divides in a 16-bit type (float16, bfloat16), where every target multiplies
/// by the reciprocal instead (HalfProduct in markstein-inl.h). Allocates nothing.
constexpr bool is_half_division(DataType division_type) {
  return division_type == DataType::kFloat16 || division_type == DataType::kBFloat16;
}

/// Whether the vectorised quantize kernels keep a row segment's reciprocals for the next rows that
/// read the same scales (blocks along an outer axis, in row-tile tasks): float32 division by float32
/// scales into outputs of the rounding check, where the target's route is the reciprocal one.
/// Allocates nothing.
constexpr bool shares_row_reciprocals(DataType division_type, DataType scale_type, DataType y, bool reciprocal_route) {
  return reciprocal_route && division_type == DataType::kFloat && scale_type == DataType::kFloat &&
         rounding_check_applies(y);
}

/// The reciprocal route of output type y, with or without a zero point. Allocates nothing.
constexpr ReciprocalKind reciprocal_kind(DataType y, bool zero_point) {
  if (rounding_check_applies(y)) return ReciprocalKind::kRoundingCheck;
  return code_check_applies(y, zero_point) ? ReciprocalKind::kCodeCheck : ReciprocalKind::kMarkstein;
}

/// Forces the route of every target (kAuto: the measured one) until forced again; starts as
/// QDQ_QUANTIZE_ROUTE (auto|divide|reciprocal, "markstein" = reciprocal, anything else = auto) says.
/// Allocates nothing; atomic, but meant to be called while no kernel runs (tests, benchmarks).
void force_quotient_route(QuotientRoute route);

/// The forced route (kAuto where none is). Allocates nothing; thread-safe.
QuotientRoute forced_quotient_route();

/// Whether 16-bit division (is_half_division) takes the product: always, unless the division is
/// forced. It is not measured: a multiply never loses to a division. Allocates nothing; thread-safe.
inline bool half_product_route() { return forced_quotient_route() != QuotientRoute::kDivide; }

/// The route `target`'s kernels take for outputs whose reciprocal route is `kind`: the forced one, or
/// the one measured once per target at first use (the division and the reciprocal route of an int8,
/// a float8e4m3fn and an int16 kernel timed on 4096 elements, best of 16 alternating runs each, each
/// run after an untimed one; about 0.2 ms on the calling thread; thread-safe). The reciprocal route is
/// kept where it was faster by 5 %, the division where that was; within that margin the target's
/// default (kDefaultRoute in quotient_route.cc). Always kDivide on a target without fused
/// multiply-add. Allocates only small buffers while measuring.
QuotientRoute quotient_route(int64_t target, ReciprocalKind kind);

/// "division" or "reciprocal" ("auto" for kAuto). Allocates nothing.
const char* quotient_route_name(QuotientRoute route);

/// How `target` divides in `division_type` by a scale that is not a power of two for output type y
/// without a zero point: in float32 "division", "rounding check", "code rounding check" or "Markstein
/// reciprocal"; in float16 and bfloat16 "16-bit reciprocal" (HalfProduct, markstein-inl.h: every
/// target); in any other type "division". Allocates nothing; thread-safe (may measure, as above).
const char* quotient_route_description(int64_t target, DataType division_type, DataType y);

/// Writes the Markstein route's quotients x[i] / s of `target` to q[0, n) and returns true, or
/// returns false where the route does not apply (no fused multiply-add, or |s| outside [2^-62, 2^62]).
/// `grouped`: through the group-of-four form that QuantizeLoop's main loop takes (n a multiple of four
/// vectors), else a vector at a time. For tests. Allocates nothing; thread-safe.
bool markstein_quotients(int64_t target, float s, const float* x, float* q, int64_t n, bool grouped = false);

/// Forces a route and restores the one it found when it goes out of scope (tests). Not thread-safe.
using ScopedQuotientRoute = ScopedForced<QuotientRoute, force_quotient_route, forced_quotient_route>;

}  // namespace qdq::detail::simd
