// Vectorised QuantizeLinear kernels, compiled once per Highway target by each quantize_<family>.cc
// (one small unit per output type, from family_unit.cc.in; the kernels are listed in quantize_kernels.inc).
// Each kernel equals quantize_scalar bit for bit: the same two stages (the quotient in the division
// type P, then the output type's rule), evaluated lane-wise with exact vector forms of the scalar
// operations.
//
// Granularity → path. Every path ends in the one loop, QuantizeLoop, which takes where its parameters
// come from (Params) and how it forms the quotient (Quotient) as template policies:
//   per-tensor, 2/4-bit y        whole groups of 4 vectors: BroadcastParams, codes packed in registers
//                                straight into y; the rest as below
//   per-tensor; per-axis with    chunks of kChunk; one BroadcastParams run per segment (QuantizeRun)
//   inner >= 256
//   blocked along the last axis, one BroadcastParams run per block, packed in registers
//   blocks tiling rows of whole  (QuantizeUniformBlocks)
//   groups (UniformBlocks)
//   blocked along the last axis, pieces of whole blocks: one flat loop, each vector with its block's
//   blocks tiling rows, a power  broadcast parameters (VectorBlockParams), packed in registers
//   of two of 1-8 vectors (1-3   (QuantizeVectorBlocks)
//   for 16-bit y where the
//   route multiplies)
//   (VectorBlockShift)
//   other blocked; per-axis      chunks of kChunk: long float32 segments stepping by one read their
//   with inner < 256             parameters in place (InPlaceParams), the rest of the chunk is
//                                expanded per element first (ExpandedView)
// Broadcast runs divide, or multiply by the reciprocal where that is exact (ExactReciprocal), or (float32
// division, where the target measured it faster: quotient_route.hpp) take a reciprocal route with the
// same codes (markstein-inl.h): the rounding check for 8-bit and narrower integers, the rounding check
// on the code for float8 and FLOAT4E2M1 without a zero point, Markstein's corrected reciprocal for the
// others; float16 and bfloat16 division multiplies by the reciprocal on every target, a product that
// rounds to the same quotient in that type (HalfProduct). Blocks of 1-8 vectors take each block's own
// reciprocal (PerVectorReciprocals), and in-place segments of blocks along an outer axis keep their
// row's reciprocals for the rows that share it.
// 2/4-bit outputs not packed in registers go through a code buffer packed per chunk (pack-inl.h).
//
// Stores (StoreMode): every path above takes `stream` at run time, QuantizeLoop does not. Normal
// stores write y directly; streaming writes each chunk (or piece, or kChunk elements of uniform
// blocks) to a stage on the stack and copies it to y with non-temporal stores (PieceOutput,
// StreamBytes), and the kernel fences once at the end of the task. One copy of the loops serves
// both, so the units do not grow.
//
// The performance notes behind these choices are in docs/performance.md ("Quantize kernel loop").
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_QUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_QUANTIZE_INL_H_
#undef QDQ_SIMD_QUANTIZE_INL_H_
#else
#define QDQ_SIMD_QUANTIZE_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "kernels/simd/convert-inl.h"
#include "kernels/simd/families.hpp"
#include "kernels/simd/load_store-inl.h"
#include "kernels/simd/markstein-inl.h"
#include "kernels/simd/pack-inl.h"
#include "kernels/simd/params-inl.h"
#include "kernels/simd/quotient_route.hpp"
#include "kernels/simd/vectors-inl.h"
#include "kernels/store_policy.hpp"
#include "types/integer_types.hpp"
#include "types/type_traits.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
namespace {

using T = DataType;

constexpr int OutBits(T y) { return quantized_bits(y); }
constexpr bool IsIntegerOut(T y) { return is_quantized_integer(y); }
constexpr bool IsSignedOut(T y) { return is_signed_quantized_integer(y); }
constexpr int32_t OutMin(T y) { return integer_min(y); }
constexpr int32_t OutMax(T y) { return integer_max(y); }

/// The scale at `index`, rounded once to the division type P (exact as float).
template <T P>
float ScalarScale(const QuantizeCall& c, int64_t index) {
  const double s = load_real(c.scale, c.scale_type, index);
  if constexpr (TypeTraits<P>::kKind == TypeKind::kMiniFloat) return round_to<typename TypeTraits<P>::Format>(s);
  return static_cast<float>(s);
}

template <T P>
HWY_INLINE VF RoundToP(VF v) {
  if constexpr (TypeTraits<P>::kKind == TypeKind::kMiniFloat) return RoundToF<typename TypeTraits<P>::Format>(v);
  return v;
}

/// Scales [index, index + n) of type S rounded to P.
template <T S, T P>
HWY_INLINE VF LoadScale(const void* scale, int64_t index, size_t n) {
  if constexpr (S == P) return LoadFloat<S>(scale, index, n);
  return RoundToP<P>(LoadScaleAsFloat<S>(scale, index, n));
}

// Clamping quotients to ±2^24 keeps the int32 conversion in range and changes no result: every zero
// point is below 2^16 in magnitude, so such quotients saturate either way.
constexpr float kCodeClamp = 16777216.0f;

/// The int32 code of an integer output before saturation to the output's range: NearestInt of the
/// quotient clamped to ±2^24, plus the zero point. A NaN quotient becomes −2^24 + zero point, which
/// saturates to the output's minimum — the NaN rule. (On x86, max_ps returns its second operand when
/// the first is NaN; elsewhere the NaN lanes are selected explicitly.)
HWY_INLINE VI UnsaturatedCodes(VF q, VI zp) {
  const DF df;
  VF clamped = hn::Min(hn::Max(q, hn::Set(df, -kCodeClamp)), hn::Set(df, kCodeClamp));
#if !HWY_ARCH_X86
  clamped = hn::IfThenElse(hn::IsNaN(q), hn::Set(df, -kCodeClamp), clamped);
#endif
  return hn::Add(NearestIntInRange(clamped), zp);
}

/// The output rule of an integer type: round half to even, add the zero point, saturate; NaN → min.
/// 16-bit outputs saturate in their store (DemoteTo or the pack instructions); 8-bit and narrower
/// ones are clamped here (Highway 1.0.3's int32 → uint8 DemoteTo on x86 goes through an unsigned
/// 16-bit pack and maps 32768..65535 to 0).
template <T Y>
HWY_INLINE VI IntegerCodes(VF q, VI zero_point) {
  const DI di;
  VI v = UnsaturatedCodes(q, zero_point);
  if constexpr (OutBits(Y) <= 8) v = hn::Min(hn::Max(v, hn::Set(di, OutMin(Y))), hn::Set(di, OutMax(Y)));
  return v;
}

/// The codes of a narrow float output (a MiniFloat of at most 8 bits).
template <T Y>
HWY_INLINE VU FloatCodes(VF q, bool saturate) {
  static_assert(TypeTraits<Y>::kKind == TypeKind::kMiniFloat && TypeTraits<Y>::kBits <= 8);
  return EncodeF<typename TypeTraits<Y>::Format>(q, saturate);
}

/// Writes n output values. Packed outputs go to a code buffer (one code per byte).
template <T Y>
HWY_INLINE void StoreOut(VI v, void* out, int64_t index, size_t n) {
  constexpr int kBits = OutBits(Y);
  const DI di;
  if constexpr (kBits == 16) {
    StoreNarrow<16, IsSignedOut(Y)>(v, out, index, n);
  } else if constexpr (kBits == 8) {
    StoreNarrow<8, IsSignedOut(Y) && IsIntegerOut(Y)>(v, out, index, n);
  } else {
    StoreNarrow<8, false>(hn::And(v, hn::Set(di, (1 << kBits) - 1)), out, index, n);
  }
}

/// True, with *reciprocal = 1/s, when s = ±2^e with -126 <= e <= 126, so that both s and 2^-e are
/// normal float32 numbers and 2^-e is exact. Then x / s == x · (1/s) bit for bit for every float32
/// x: IEEE division and multiplication both return the correctly rounded value of their exact
/// result, and x / 2^e and x · 2^-e are the same real number, so they round to the same float32 —
/// overflow to ±inf and gradual underflow to subnormals or ±0 included. The special operands agree
/// too: ±inf and ±0 keep the sign rule (the reciprocal is finite, non-zero and of the scale's sign),
/// and a NaN x propagates as the same quieted NaN in both operations. Keeping s and 1/s normal means
/// that even a caller's denormals-are-zero mode cannot treat one differently from the other. The
/// 16-bit division types round this float32 quotient once more, identically either way. Scales of
/// FLOAT8E8M0 (MX) are always powers of two, so they always take this route.
HWY_INLINE bool ExactReciprocal(float s, float* reciprocal) {
  uint32_t bits;
  std::memcpy(&bits, &s, 4);
  const uint32_t exponent = (bits >> 23) & 0xFFu;
  if ((bits & 0x007FFFFFu) != 0 || exponent < 1 || exponent > 253) return false;  // e = exponent − 127
  const uint32_t inverse = (bits & 0x80000000u) | ((254u - exponent) << 23);      // ±2^-e
  std::memcpy(reciprocal, &inverse, 4);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Quotient policies: how QuantizeLoop turns x and the run's "scale" slot into the quotient before it
// is rounded to P.

/// x / s, the IEEE float32 division (the same correctly rounded quotient as the scalar kernel).
struct Divide {
  static HWY_INLINE VF Quotient(VF x, VF scale) { return hn::Div(x, scale); }
};

/// Whether a quotient route's groups are checked on their codes (CodeRoundingCheck), so that
/// QuantizeLoop encodes before it commits.
template <class Route>
constexpr bool ChecksCodes() {
  if constexpr (requires { Route::kChecksCodes; }) {
    return Route::kChecksCodes;
  } else {
    return false;
  }
}

/// Whether output type Y's float32 broadcast runs take this target's reciprocal route (the call's
/// zero point decides FLOAT4E2M1's: reciprocal_kind), each kind measured once per target.
template <T Y>
HWY_INLINE bool UseReciprocal(const QuantizeCall& c) {
#if HWY_NATIVE_FMA
  return quotient_route(HWY_TARGET, reciprocal_kind(Y, c.zero_point != nullptr)) == QuotientRoute::kReciprocal;
#else
  (void)c;
  return false;
#endif
}

/// Whether output type Y's blocks along the last axis, dividing in P, take each block's own reciprocal
/// in the flat loop where the target's route is the reciprocal one: in float32 the outputs of the
/// rounding checks (FLOAT4E2M1 with a zero point divides there: Markstein per block measured slower
/// than the division for float8 blocks, whose encoder bounds the loop, before the check on the code
/// existed); in float16 and bfloat16 every output (HalfProduct).
template <T P, T Y>
constexpr bool kBlockReciprocals = is_half_division(P) || rounding_check_applies(Y) ||
                                   is_float8(Y) || Y == T::kFloat4E2M1;

/// x · (1/s), with the scale slot holding 1/s where ExactReciprocal proved the product exact.
struct MultiplyByExactReciprocal {
  static HWY_INLINE VF Quotient(VF x, VF reciprocal) { return hn::Mul(x, reciprocal); }
};

// No quantized output depends on a NaN's payload (integers take the minimum, float8 its NaN code,
// FLOAT4E2M1 +6), only on its being a NaN: the quotient path below keeps NaNs NaN and no more.

/// Lanes [0, n) of x from `index` as float32, rounded to the division type P (RNE, as the scale is),
/// to be divided. bfloat16 NaNs stay signalling where x is already of type P or float32 divides
/// (LoadFloat would quiet them): the division quiets them anyway.
template <T X, T P>
HWY_INLINE VF LoadDividend(const void* x, int64_t index, size_t n) {
  if constexpr (X != P && is_half_division(P)) {
    return RoundToP<P>(LoadFloat<X>(x, index, n));
  } else if constexpr (X == T::kBFloat16) {
    const hn::Rebind<uint16_t, DF> d16;
    return hn::BitCast(
        DF(), hn::ShiftLeft<16>(hn::PromoteTo(DU(), LoadPartial(d16, static_cast<const uint16_t*>(x) + index, n))));
  }
  return LoadFloat<X>(x, index, n);
}

/// A quotient rounded to the division type P, as output Y's encoder needs it. For bfloat16 the plain
/// bit rounding is exact: every NaN quotient has zero low bits (its operands are bfloat16 values —
/// x, and scales rounded by LoadScale — or it is the default NaN). For float16 and integer outputs of
/// up to 16 bits, the same rounding at bit 13 (float16's NaNs have zero low bits too) gives the code
/// that RoundToF gives: it differs from float16 only for |q| < 2^-14, which round to ±0 either way,
/// and from 65520 up, finite where float16 is ±inf, which saturate either way. Four integer
/// operations (three and a mask test on AVX3) instead of the two conversions. Measured on Zen 4, 64 Ki,
/// against the conversions: AVX3 float16 -> uint8 per tensor 1.24x, -> int4 blocked-last-32 1.17x;
/// SSE4, without F16C, 2.1x and 3.0x; but AVX2 0.83x and 0.97x, so AVX2 keeps the conversions. Not
/// for float8 and FLOAT4E2M1 outputs, where ±inf and 65536 encode differently.
template <T P, T Y>
HWY_INLINE VF RoundQuotient(VF q) {
  constexpr bool kFloat16ByBits = HWY_TARGET == HWY_AVX3 || !QDQ_SIMD_F16C;
  if constexpr (P == T::kBFloat16) return hn::BitCast(DF(), hn::And(RoundBitsToBF16(q), hn::Set(DU(), 0xFFFF0000u)));
  if constexpr (kFloat16ByBits && P == T::kFloat16 && IsIntegerOut(Y) && OutBits(Y) <= 16) {
    return hn::BitCast(DF(), hn::And(RoundBitsAt<13>(q), hn::Set(DU(), 0xFFFFE000u)));
  }
  return RoundToP<P>(q);
}

/// The int32 code of an integer output of at most 8 bits before its zero point, for
/// StoreBytes4PlusZeroPoints and StoreNarrowCodes4PlusZeroPoints. On x86 the quotient is clamped
/// above at 2^24 only: a NaN quotient, and one below -2^31, convert to the integer indefinite
/// INT32_MIN, which saturates to the output's minimum as the NaN rule and the lower clamp would (one
/// clamp instead of two). Elsewhere UnsaturatedCodes' two clamps.
HWY_INLINE VI CodesBeforeZeroPoint(VF q) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
  return NearestIntInRange(MinKeepingNaN(hn::Set(DF(), kCodeClamp), q));
#else
  return UnsaturatedCodes(q, hn::Zero(DI()));
#endif
}

/// Where the output of element `at` starts in y (for 2/4-bit y, `at` starts a whole byte).
template <T Y>
HWY_INLINE uint8_t* OutputAt(void* y, int64_t at) {
  constexpr int kBits = OutBits(Y);
  return static_cast<uint8_t*>(y) + (kBits < 8 ? at * kBits / 8 : at * (kBits / 8));
}

/// The output codes of one vector of quotients with the parameters of lanes [k, k + n): the output
/// rule of Y, in int32 lanes. kSaturatedByStore: the 16-bit integer codes are left unsaturated for a
/// whole-group store whose pack instructions saturate them (integer outputs of at most 8 bits take
/// CodesBeforeZeroPoint in whole groups instead).
template <T Y, bool kSaturatedByStore, class Params>
HWY_INLINE VI OutputCodes(const QuantizeCall& c, bool saturate, VF q, const Params& params, int64_t k, size_t n) {
  const DI di;
  if constexpr (IsIntegerOut(Y)) {
    if constexpr (kSaturatedByStore && OutBits(Y) >= 8) return UnsaturatedCodes(q, params.ZeroPoint(k, n));
    return IntegerCodes<Y>(q, params.ZeroPoint(k, n));
  } else if constexpr (has_float_zero_point(Y)) {
    // The zero point is added in float32 to the quotient (already a float32 value).
    return hn::BitCast(di, FloatCodes<Y>(c.zero_point != nullptr ? hn::Add(q, params.FloatZeroPoint(k, n)) : q, true));
  } else {
    return hn::BitCast(di, FloatCodes<Y>(q, saturate));
  }
}

/// Stores the codes of 4·Lanes elements at `out` (element 0 of the group): 8/16-bit outputs with
/// saturating packs; 2/4-bit ones packed in registers (kPackInRegisters, `out` in y) or one code per
/// byte (into a code buffer).
template <T Y, bool kPackInRegisters>
HWY_INLINE void StoreGroup(VI c0, VI c1, VI c2, VI c3, uint8_t* out) {
  constexpr int kBits = OutBits(Y);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DI()));
  if constexpr (kBits == 16) {
    StoreWords2<IsSignedOut(Y)>(c0, c1, out);
    StoreWords2<IsSignedOut(Y)>(c2, c3, out + 4 * lanes);
  } else if constexpr (kBits == 8) {
    StoreBytes4<IsSignedOut(Y) && IsIntegerOut(Y)>(c0, c1, c2, c3, out);
  } else if constexpr (kPackInRegisters) {
    StorePacked4<kBits>(c0, c1, c2, c3, out);
  } else {
    const VI mask = hn::Set(DI(), (1 << kBits) - 1);
    StoreBytes4<false>(hn::And(c0, mask), hn::And(c1, mask), hn::And(c2, mask), hn::And(c3, mask), out);
  }
}

/// Stores the outputs of four vectors of rounded quotients, run elements [k, k + 4·Lanes), as
/// StoreGroup does. The float8 types and FLOAT4E2M1 packed in registers store sign and magnitude
/// apart (StoreSignedBytes4, StoreSignedNibbles4), which saves the shifts that would put each
/// vector's sign bits in place; integer outputs of at most 8 bits add their zero points in the
/// stores (StoreBytes4PlusZeroPoints, StoreNarrowCodes4PlusZeroPoints).
template <T Y, bool kPackInRegisters, class Params>
HWY_INLINE void StoreQuotientGroup(const QuantizeCall& c, bool saturate, VF q0, VF q1, VF q2, VF q3,
                                   const Params& params, int64_t k, uint8_t* out) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const size_t full = static_cast<size_t>(lanes);
  if constexpr (is_float8(Y)) {
    using F = typename TypeTraits<Y>::Format;
    const DI di;
    if constexpr (F::kSpecials == SpecialValues::kFnuz) {
      // Saturating, FNUZ sends ±inf and NaN to 0x80 but finite overflow to the largest code: a select
      // per vector by finiteness, which a group without ±inf and NaN (its largest magnitude's bits
      // below 0x7F800000: one test for four vectors) leaves out.
      const VI magnitude = hn::Set(di, 0x7FFFFFFF);
      const VI largest =
          hn::Max(hn::Max(hn::And(hn::BitCast(di, q0), magnitude), hn::And(hn::BitCast(di, q1), magnitude)),
                  hn::Max(hn::And(hn::BitCast(di, q2), magnitude), hn::And(hn::BitCast(di, q3), magnitude)));
      if (saturate && hn::AllTrue(di, hn::Lt(largest, hn::Set(di, 0x7F800000)))) {
        VF t0, t1, t2, t3;  // unused
        StoreSignedBytes4<true, true>(hn::BitCast(di, EncodeNarrowMagnitude<F, true, true>(q0, true, t0)),
                                      hn::BitCast(di, EncodeNarrowMagnitude<F, true, true>(q1, true, t1)),
                                      hn::BitCast(di, EncodeNarrowMagnitude<F, true, true>(q2, true, t2)),
                                      hn::BitCast(di, EncodeNarrowMagnitude<F, true, true>(q3, true, t3)), q0, q1, q2,
                                      q3, out, Float8CodeCap<F, true>(true), Float8CodeBase<F>());
        return;
      }
    }
    // Where the codes end in one minimum, it is taken once on the packed bytes instead of per vector.
    if (const uint32_t cap = Float8CodeCap<F>(saturate); cap != 0) {
      VF t0, t1, t2, t3;  // unused
      StoreSignedBytes4<F::kSpecials == SpecialValues::kFnuz, true>(
          hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q0, saturate, t0)),
          hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q1, saturate, t1)),
          hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q2, saturate, t2)),
          hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q3, saturate, t3)), q0, q1, q2, q3, out,
          static_cast<uint8_t>(cap), Float8CodeBase<F>());
      return;
    }
    const VI m0 = hn::BitCast(di, EncodeNarrowMagnitude<F>(q0, saturate));
    const VI m1 = hn::BitCast(di, EncodeNarrowMagnitude<F>(q1, saturate));
    const VI m2 = hn::BitCast(di, EncodeNarrowMagnitude<F>(q2, saturate));
    const VI m3 = hn::BitCast(di, EncodeNarrowMagnitude<F>(q3, saturate));
    StoreSignedBytes4<F::kSpecials == SpecialValues::kFnuz>(m0, m1, m2, m3, q0, q1, q2, q3, out);
  } else if constexpr (Y == T::kFloat4E2M1 && kPackInRegisters) {
    using F = Float4E2M1Format;
    const DI di;
    const bool zp = c.zero_point != nullptr;
    // As OutputCodes: the zero point is added in float32; then the magnitudes (the values clamped in
    // place, NaN to +6) and the signs of the clamped values apart, as for float8.
    if (zp) {
      q0 = hn::Add(q0, params.FloatZeroPoint(k, full));
      q1 = hn::Add(q1, params.FloatZeroPoint(k + lanes, full));
      q2 = hn::Add(q2, params.FloatZeroPoint(k + 2 * lanes, full));
      q3 = hn::Add(q3, params.FloatZeroPoint(k + 3 * lanes, full));
    }
    // Uncapped: the codes' lower clamp and last addition are taken once on the packed bytes.
    VF t0, t1, t2, t3;  // unused
    const VI m0 = hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q0, true, t0));
    const VI m1 = hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q1, true, t1));
    const VI m2 = hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q2, true, t2));
    const VI m3 = hn::BitCast(di, EncodeNarrowMagnitude<F, false, true>(q3, true, t3));
    StoreSignedNibbles4<true>(m0, m1, m2, m3, q0, q1, q2, q3, out);
  } else if constexpr (IsIntegerOut(Y) && OutBits(Y) <= 8) {
    // The zero points are added in the stores, after one clamp; 2/4-bit outputs clamp to their range
    // on the bytes.
    const VI c0 = CodesBeforeZeroPoint(q0), c1 = CodesBeforeZeroPoint(q1);
    const VI c2 = CodesBeforeZeroPoint(q2), c3 = CodesBeforeZeroPoint(q3);
    const VI z0 = params.ZeroPoint(k, full), z1 = params.ZeroPoint(k + lanes, full);
    const VI z2 = params.ZeroPoint(k + 2 * lanes, full), z3 = params.ZeroPoint(k + 3 * lanes, full);
    if constexpr (OutBits(Y) == 8) {
      StoreBytes4PlusZeroPoints<IsSignedOut(Y)>(c0, c1, c2, c3, z0, z1, z2, z3, out);
    } else {
      StoreNarrowCodes4PlusZeroPoints<OutBits(Y), IsSignedOut(Y), kPackInRegisters>(c0, c1, c2, c3, z0, z1, z2, z3,
                                                                                    out);
    }
  } else {
    StoreGroup<Y, kPackInRegisters>(OutputCodes<Y, true>(c, saturate, q0, params, k, full),
                                    OutputCodes<Y, true>(c, saturate, q1, params, k + lanes, full),
                                    OutputCodes<Y, true>(c, saturate, q2, params, k + 2 * lanes, full),
                                    OutputCodes<Y, true>(c, saturate, q3, params, k + 3 * lanes, full), out);
  }
}

#if HWY_NATIVE_FMA
/// StoreQuotientGroup for a narrow float y (float8, FLOAT4E2M1 without a zero point) under
/// CodeRoundingCheck: x0..x3 · RN(1/s) encoded, kept where the check on the encoder's scaled values
/// passes, else the group's divisions encoded (DivideGroup).
template <T Y, bool kPackInRegisters, class Divisors>
HWY_INLINE void StoreCheckedGroup(bool saturate, VF x0, VF x1, VF x2, VF x3, const Divisors& d, uint8_t* out) {
  using F = typename TypeTraits<Y>::Format;
  const DI di;
  // FLOAT4E2M1 packed in registers: uncapped codes, completed on the packed bytes (StoreSignedNibbles4).
  constexpr bool kUncapped = Y == T::kFloat4E2M1 && kPackInRegisters;
  constexpr bool kFnuz = F::kSpecials == SpecialValues::kFnuz;
  VF q0 = hn::Mul(x0, d.r0), q1 = hn::Mul(x1, d.r1), q2 = hn::Mul(x2, d.r2), q3 = hn::Mul(x3, d.r3);
  VF t0, t1, t2, t3;
  // The FLOAT4E2M1 encoder replaces q by q clamped, whose sign the store takes. The encoders take q
  // as finite: that changes only FNUZ saturating (no select by finiteness), whose kept groups hold
  // only |q| < 2^127 (the guard in `kept`); a group with NaN or ±inf is encoded again after dividing.
  const auto kept = [&]() QDQ_INLINE_LAMBDA {
    auto keep = CodeRoundingCheck::Keeps(t0, t1, t2, t3);
    if constexpr (kFnuz) {
      if (saturate) {
        // ±inf and finite overflow encode unlike here: no product at 2^127 or beyond stands for x / s.
        // The magnitudes' bits order as the magnitudes do, NaN above ±inf: a NaN fails too, as the
        // codes above, encoded as finite, require (vrangeps would pass over a NaN beside a number).
        const DU du;
        const VU magnitude = hn::Set(du, 0x7FFFFFFFu);
        const VU largest =
            hn::Max(hn::Max(hn::And(hn::BitCast(du, q0), magnitude), hn::And(hn::BitCast(du, q1), magnitude)),
                    hn::Max(hn::And(hn::BitCast(du, q2), magnitude), hn::And(hn::BitCast(du, q3), magnitude)));
        keep = hn::And(keep, hn::RebindMask(DF(), hn::Lt(largest, hn::Set(du, 0x7F000000u))));  // 2^127
      }
    }
    return hn::AllTrue(DF(), keep);
  };
  const auto divide = [&]() QDQ_INLINE_LAMBDA {
    const GroupScales s = d.Scales();
    const GroupQuotients divided = DivideGroup(x0, x1, x2, x3, s.s0, s.s1, s.s2, s.s3);
    q0 = divided.q0;
    q1 = divided.q1;
    q2 = divided.q2;
    q3 = divided.q3;
  };
  if constexpr (is_float8(Y) && !kFnuz) {
    // Where the kept codes end in one minimum, it is taken once on the packed bytes with their
    // constant term (as StoreQuotientGroup does); the divided codes take it per vector. The FNUZ
    // formats measured 3-5 % slower so (Zen 3, the route forced): they keep the minimum per vector.
    if (const uint32_t cap = Float8CodeCap<F, true>(saturate); cap != 0) {
      const VU u0 = EncodeNarrowMagnitude<F, true, true>(q0, saturate, t0);
      const VU u1 = EncodeNarrowMagnitude<F, true, true>(q1, saturate, t1);
      const VU u2 = EncodeNarrowMagnitude<F, true, true>(q2, saturate, t2);
      const VU u3 = EncodeNarrowMagnitude<F, true, true>(q3, saturate, t3);
      if (HWY_LIKELY(kept())) {
        StoreSignedBytes4<kFnuz, true>(hn::BitCast(di, u0), hn::BitCast(di, u1), hn::BitCast(di, u2),
                                       hn::BitCast(di, u3), q0, q1, q2, q3, out, static_cast<uint8_t>(cap),
                                       Float8CodeBase<F>());
        return;
      }
      divide();
      StoreSignedBytes4<kFnuz>(hn::BitCast(di, EncodeNarrowMagnitude<F>(q0, saturate)),
                               hn::BitCast(di, EncodeNarrowMagnitude<F>(q1, saturate)),
                               hn::BitCast(di, EncodeNarrowMagnitude<F>(q2, saturate)),
                               hn::BitCast(di, EncodeNarrowMagnitude<F>(q3, saturate)), q0, q1, q2, q3, out);
      return;
    }
  }
  VU m0 = EncodeNarrowMagnitude<F, true, kUncapped>(q0, saturate, t0);
  VU m1 = EncodeNarrowMagnitude<F, true, kUncapped>(q1, saturate, t1);
  VU m2 = EncodeNarrowMagnitude<F, true, kUncapped>(q2, saturate, t2);
  VU m3 = EncodeNarrowMagnitude<F, true, kUncapped>(q3, saturate, t3);
  if (HWY_UNLIKELY(!kept())) {
    divide();
    m0 = EncodeNarrowMagnitude<F, false, kUncapped>(q0, saturate, t0);
    m1 = EncodeNarrowMagnitude<F, false, kUncapped>(q1, saturate, t1);
    m2 = EncodeNarrowMagnitude<F, false, kUncapped>(q2, saturate, t2);
    m3 = EncodeNarrowMagnitude<F, false, kUncapped>(q3, saturate, t3);
  }
  if constexpr (is_float8(Y)) {
    StoreSignedBytes4<kFnuz>(hn::BitCast(di, m0), hn::BitCast(di, m1), hn::BitCast(di, m2), hn::BitCast(di, m3), q0, q1,
                             q2, q3, out);
  } else if constexpr (kPackInRegisters) {
    StoreSignedNibbles4<true>(hn::BitCast(di, m0), hn::BitCast(di, m1), hn::BitCast(di, m2), hn::BitCast(di, m3), q0,
                              q1, q2, q3, out);
  } else {
    StoreGroup<Y, false>(hn::BitCast(di, ApplyNarrowSign<F>(m0, q0)), hn::BitCast(di, ApplyNarrowSign<F>(m1, q1)),
                         hn::BitCast(di, ApplyNarrowSign<F>(m2, q2)), hn::BitCast(di, ApplyNarrowSign<F>(m3, q3)), out);
  }
}
#endif

/// The one quantize loop: elements [first, first + count) of x, output element first + i at
/// `out` + i (bytes per element for 8/16-bit y; for 2/4-bit y a code buffer, one code per byte, or
/// with kPackInRegisters y itself at element `first`, which then starts a byte, and count a multiple
/// of 4·Lanes). Four whole vectors per iteration, no partial vectors and no per-iteration branches,
/// then the partial rest a vector at a time. Params gives the scale slot, zero point and float zero
/// point of the n-lane vector at run element k; Quotient forms x / scale from the scale slot.
/// `saturate` is c.saturate, passed apart so that QuantizeLoop can make it a constant.
template <T X, T P, T Y, class Quotient, bool kPackInRegisters, class Params>
HWY_INLINE void QuantizeLoopWith(const QuantizeCall& c, bool saturate, int64_t first, int64_t count,
                                 const Params& params, uint8_t* out, const Quotient& route) {
  constexpr int kBits = OutBits(Y);
  constexpr int64_t kBytesPer = kBits >= 8 ? kBits / 8 : (kPackInRegisters ? 0 : 1);  // packed: see below
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const size_t full = static_cast<size_t>(lanes);
  // Routes that read their parameters themselves (PerVectorReciprocals) take the Params.
  constexpr bool kRouteReadsParams = requires(VF v) { route.Quotient(v, params, int64_t{0}, size_t{0}); };
  const auto quotient = [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
    const VF x = LoadDividend<X, P>(c.x, first + k, n);
    if constexpr (kRouteReadsParams) {
      return RoundQuotient<P, Y>(route.Quotient(x, params, k, n));
    } else {
      return RoundQuotient<P, Y>(route.Quotient(x, params.Scale(k, n)));
    }
  };
  // Parameters that change per step, not per vector (StepBlockParams).
  const auto begin_step = [&](int64_t k) QDQ_INLINE_LAMBDA {
    if constexpr (requires { params.BeginStep(k); }) params.BeginStep(k);
  };
  // One scale and zero point for the run, in registers: its vectors may start at any element.
  constexpr bool kAnyStart = std::is_same_v<Params, BroadcastParams> && !kPackInRegisters;
  if constexpr (kAnyStart) {
    // An x that does not start on a vector (NumPy's arrays start 16 bytes into a line as often as
    // not) has every load cross a cache line: float32 -> uint8 per tensor took 1.12x the time in
    // cache on the Intel Xeon. One whole vector at element 0, then the run moved on to the first
    // element on a vector boundary; the loop rewrites the overlap with the same codes.
    constexpr auto kXBytes = static_cast<uintptr_t>(TypeTraits<X>::kBits / 8);
    const auto at = reinterpret_cast<uintptr_t>(c.x) + static_cast<uintptr_t>(first) * kXBytes;
    const auto vector_bytes = static_cast<uintptr_t>(lanes) * kXBytes;
    const auto head = static_cast<int64_t>((vector_bytes - at % vector_bytes) % vector_bytes / kXBytes);
    if (at % kXBytes == 0 && head != 0 && head + 4 * lanes <= count) {
      StoreOut<Y>(OutputCodes<Y, false>(c, saturate, quotient(0, full), params, 0, full), out, 0, full);
      first += head;
      count -= head;
      out += head * kBytesPer;
    }
  }
  // Out of cache the loads wait on memory while the divider idles: each group asks for its lines
  // ahead (PrefetchAhead; one request per group for two lines gained nothing).
  constexpr uintptr_t kInBytes = TypeTraits<X>::kBits / 8;
  constexpr uintptr_t kGroupBytes = 4 * hn::MaxLanes(DF()) * kInBytes;
  const uintptr_t x_at = reinterpret_cast<uintptr_t>(c.x) + static_cast<uintptr_t>(first) * kInBytes;
  const LineAhead ahead = LineAheadFor(c.x_requests, static_cast<uint64_t>(c.plan.elements) * kInBytes, {true, false});
  int64_t i = 0;
  for (; i + 4 * lanes <= count; i += 4 * lanes) {
    begin_step(i);
    PrefetchAhead(x_at + static_cast<uintptr_t>(i) * kInBytes, kGroupBytes, ahead);
    uint8_t* const dst = kBytesPer != 0 ? out + i * kBytesPer : out + i * kBits / 8;
    if constexpr (ChecksCodes<Quotient>()) {
#if HWY_NATIVE_FMA
      // The check reads the encoder's scaled values: encoded first, committed after.
      const VF x0 = LoadDividend<X, P>(c.x, first + i, full), x1 = LoadDividend<X, P>(c.x, first + i + lanes, full);
      const VF x2 = LoadDividend<X, P>(c.x, first + i + 2 * lanes, full);
      const VF x3 = LoadDividend<X, P>(c.x, first + i + 3 * lanes, full);
      if constexpr (kRouteReadsParams) {
        StoreCheckedGroup<Y, kPackInRegisters>(saturate, x0, x1, x2, x3, route.Divisors(params, i), dst);
      } else {
        StoreCheckedGroup<Y, kPackInRegisters>(saturate, x0, x1, x2, x3, route.Divisors(params.Scale(i, full)), dst);
      }
#endif
    } else if constexpr (kRouteReadsParams || requires(VF & v) { route.Group(v, v, v, v, v); }) {
      // The reciprocal routes check a whole group at once (one branch), with one scale for the run
      // or each vector's own.
      VF q0 = LoadDividend<X, P>(c.x, first + i, full), q1 = LoadDividend<X, P>(c.x, first + i + lanes, full);
      VF q2 = LoadDividend<X, P>(c.x, first + i + 2 * lanes, full),
         q3 = LoadDividend<X, P>(c.x, first + i + 3 * lanes, full);
      if constexpr (kRouteReadsParams) {
        route.Group(q0, q1, q2, q3, params, i);
      } else {
        route.Group(q0, q1, q2, q3, params.Scale(i, full));
      }
      StoreQuotientGroup<Y, kPackInRegisters>(c, saturate, RoundQuotient<P, Y>(q0), RoundQuotient<P, Y>(q1),
                                              RoundQuotient<P, Y>(q2), RoundQuotient<P, Y>(q3), params, i, dst);
    } else {
      StoreQuotientGroup<Y, kPackInRegisters>(c, saturate, quotient(i, full), quotient(i + lanes, full),
                                              quotient(i + 2 * lanes, full), quotient(i + 3 * lanes, full), params, i,
                                              dst);
    }
  }
  if constexpr (kAnyStart) {
    for (; i + lanes <= count; i += lanes) {
      StoreOut<Y>(OutputCodes<Y, false>(c, saturate, quotient(i, full), params, i, full), out, i, full);
    }
    if (i < count && count >= lanes) {
      // The last whole vector, overlapping the one before: a partial vector goes through a buffer.
      const int64_t last = count - lanes;
      StoreOut<Y>(OutputCodes<Y, false>(c, saturate, quotient(last, full), params, last, full), out, last, full);
      return;
    }
  }
  if constexpr (!kPackInRegisters || kBits >= 8) {
    for (; i < count; i += lanes) {
      const size_t n = static_cast<size_t>(std::min(lanes, count - i));
      begin_step(i);
      StoreOut<Y>(OutputCodes<Y, false>(c, saturate, quotient(i, n), params, i, n), out, i, n);
    }
  }
}

/// QuantizeLoopWith. The float8 outputs get one copy of the loop per saturation mode, so that the
/// encoder takes no branch per vector and keeps its constants in registers.
template <T X, T P, T Y, class Quotient, bool kPackInRegisters, class Params>
HWY_INLINE void QuantizeLoop(const QuantizeCall& c, int64_t first, int64_t count, const Params& params, uint8_t* out,
                             const Quotient& route = Quotient{}) {
  if constexpr (is_float8(Y)) {
    if (c.saturate) {
      QuantizeLoopWith<X, P, Y, Quotient, kPackInRegisters>(c, true, first, count, params, out, route);
    } else {
      QuantizeLoopWith<X, P, Y, Quotient, kPackInRegisters>(c, false, first, count, params, out, route);
    }
  } else {
    QuantizeLoopWith<X, P, Y, Quotient, kPackInRegisters>(c, c.saturate, first, count, params, out, route);
  }
}

/// The broadcast parameters of parameter `param`: its scale rounded to P and its zero point.
template <T P, T Y>
HWY_INLINE BroadcastParams BroadcastAt(const QuantizeCall& c, int64_t param) {
  BroadcastParams b{hn::Set(DF(), ScalarScale<P>(c, param)), hn::Zero(DI()), hn::Zero(DF())};
  if (c.zero_point != nullptr) {
    if constexpr (IsIntegerOut(Y))
      b.zero_point = hn::Set(DI(), static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, param)));
    if constexpr (has_float_zero_point(Y))
      b.float_zero_point = hn::Set(DF(), static_cast<float>(load_real(c.zero_point, Y, param)));
  }
  return b;
}

/// QuantizeLoop over a run with one scale and zero point: multiplying by the reciprocal where that
/// is exact, else (float32 division, `reciprocal`: the target's measured route) the rounding check or
/// Markstein's corrected reciprocal where they apply, (float16 and bfloat16 division) the product by
/// the reciprocal where the scale lies in [2^-62, 2^62] (HalfProduct), dividing otherwise.
template <T X, T P, T Y, bool kPackInRegisters>
HWY_INLINE void QuantizeBroadcast(const QuantizeCall& c, int64_t first, int64_t count, BroadcastParams b, uint8_t* out,
                                  bool reciprocal) {
  constexpr bool kPack = kPackInRegisters && OutBits(Y) < 8;
  float inverse;
  if (ExactReciprocal(hn::GetLane(b.scale), &inverse)) {
    b.scale = hn::Set(DF(), inverse);
    QuantizeLoop<X, P, Y, MultiplyByExactReciprocal, kPack>(c, first, count, b, out);
    return;
  }
#if HWY_NATIVE_FMA
  if constexpr (P == T::kFloat) {
    if (reciprocal && MarksteinReciprocal(hn::GetLane(b.scale), &inverse)) {
      if constexpr (rounding_check_applies(Y)) {
        QuantizeLoop<X, P, Y, RoundingCheck, kPack>(c, first, count, b, out, RoundingCheck{hn::Set(DF(), inverse)});
      } else if constexpr (code_check_applies(Y, false)) {
        if (code_check_applies(Y, c.zero_point != nullptr)) {
          QuantizeLoop<X, P, Y, CodeRoundingCheck, kPack>(c, first, count, b, out,
                                                          CodeRoundingCheck{hn::Set(DF(), inverse)});
        } else {
          QuantizeLoop<X, P, Y, Markstein, kPack>(c, first, count, b, out, Markstein{hn::Set(DF(), inverse)});
        }
      } else {
        QuantizeLoop<X, P, Y, Markstein, kPack>(c, first, count, b, out, Markstein{hn::Set(DF(), inverse)});
      }
      return;
    }
  }
#endif
  if constexpr (is_half_division(P)) {
    if (reciprocal && MarksteinReciprocal(hn::GetLane(b.scale), &inverse)) {
      QuantizeLoop<X, P, Y, HalfProduct, kPack>(c, first, count, b, out, HalfProduct{hn::Set(DF(), inverse)});
      return;
    }
  }
  (void)reciprocal;
  QuantizeLoop<X, P, Y, Divide, kPack>(c, first, count, b, out);
}

/// QuantizeBroadcast out of line, for runs of the general path (per segment, at least a few hundred
/// elements or a whole chunk) and per-tensor packed groups: one copy of the loop serves them all.
template <T X, T P, T Y, bool kPackInRegisters>
HWY_NOINLINE void QuantizeRun(const QuantizeCall& c, int64_t first, int64_t count, BroadcastParams b, uint8_t* out,
                              bool reciprocal) {
  QuantizeBroadcast<X, P, Y, kPackInRegisters>(c, first, count, b, out, reciprocal);
}

// ---------------------------------------------------------------------------------------------
// Chunks cut into many segments (blocks along the last axis, per-axis along the last axis, blocked
// along other axes): the parameters are first expanded to one divisor and one zero point per
// element of the chunk, then one flat loop runs over the chunk. A run of 32 elements with its own
// loop would leave the divider idle between runs; the flat loop keeps four divisions in flight.

/// The divisors (in P) and zero points of parameters [first, first + count), a vector at a time
/// (whole vectors: the arrays have a vector of room past the count).
template <T P, T Y>
HWY_INLINE void LoadQuantizeParams(const QuantizeCall& c, int64_t first, int64_t count, float* divisor,
                                   int32_t* zero_point, float* float_zero_point) {
  const DF df;
  const DI di;
  const bool has_zp = c.zero_point != nullptr;
  constexpr bool kPackedZeroPoint = OutBits(Y) < 8;
  HWY_ALIGN uint8_t zp_codes[kPackedZeroPoint ? ExpandedParams::kSize : 1];
  if constexpr (kPackedZeroPoint) {
    if (has_zp)
      UnpackCodes<OutBits(Y), IsSignedOut(Y)>(static_cast<const uint8_t*>(c.zero_point), first, count, zp_codes);
  }
  WithScaleType(c.scale_type, [&](auto scale_type) {
    ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
      hn::StoreU(LoadScale<decltype(scale_type)::value, P>(c.scale, first + k, n), df, divisor + k);
    });
  });
  if constexpr (IsIntegerOut(Y)) {
    if (!has_zp) {
      ForEachVector(count, [&](int64_t k, size_t) QDQ_INLINE_LAMBDA { hn::StoreU(hn::Zero(di), di, zero_point + k); });
    } else if constexpr (kPackedZeroPoint) {
      ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
        hn::StoreU(LoadInt<OutBits(Y), IsSignedOut(Y)>(zp_codes, k, n), di, zero_point + k);
      });
    } else {
      ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
        hn::StoreU(LoadInt<OutBits(Y), IsSignedOut(Y)>(c.zero_point, first + k, n), di, zero_point + k);
      });
    }
  }
  if constexpr (has_float_zero_point(Y)) {
    using F = typename TypeTraits<Y>::Format;
    ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
      hn::StoreU(has_zp ? DecodeF<F>(LoadCodes(zp_codes + k, n)) : hn::Zero(df), df, float_zero_point + k);
    });
  }
}

/// Bytes of y that `count` elements from a whole byte on fill.
template <T Y>
constexpr int64_t OutputBytes(int64_t count) {
  return OutBits(Y) < 8 ? count * OutBits(Y) / 8 : count * (OutBits(Y) / 8);
}

/// Elements [begin, end) (begin a multiple of 4) of any plan, chunk by chunk; `reciprocal` as in
/// QuantizeBroadcast; `stream`: y's whole lines with non-temporal stores. Out of line: the kernel
/// calls it for up to three ranges, and each inlined copy would be the whole general path again.
template <T X, T P, T Y>
HWY_NOINLINE void QuantizeGeneral(const QuantizeCall& c, void* y, int64_t begin, int64_t end, bool reciprocal,
                                  bool stream) {
  constexpr int kBits = OutBits(Y);
  constexpr bool kPacked = kBits < 8;
  HWY_ALIGN uint8_t stage[OutputBytes<Y>(kChunk)];  // streaming: a chunk's bytes of y
  if constexpr (kPacked) {
    // Per-tensor: whole groups of 4 vectors packed in registers; the rest (a multiple-of-4 start)
    // goes through the general path below. Streaming, a chunk at a time through the stage.
    const int64_t group = 4 * static_cast<int64_t>(hn::Lanes(DF()));
    if (c.plan.granularity == Granularity::kPerTensor && end - begin >= group) {
      const int64_t whole = (end - begin) / group * group;
      const int64_t step = stream ? kChunk : whole;  // kChunk is a multiple of every group
      for (int64_t at = begin; at < begin + whole; at += step) {
        const int64_t count = std::min(step, begin + whole - at);
        const PieceOutput piece(stage, stream, OutputAt<Y>(y, at));
        QuantizeRun<X, P, Y, true>(c, at, count, BroadcastAt<P, Y>(c, 0), piece.Out(), reciprocal);
        piece.Finish(static_cast<size_t>(OutputBytes<Y>(count)));
      }
      begin += whole;
    }
  }
  if (!kPacked && !stream && c.plan.granularity == Granularity::kPerTensor && end > begin) {
    // One run over the whole range: chunks serve only the code buffer and the stage, and each
    // would load the parameters and choose the quotient route again.
    QuantizeRun<X, P, Y, false>(c, begin, end - begin, BroadcastAt<P, Y>(c, 0), OutputAt<Y>(y, begin), reciprocal);
    return;
  }
  HWY_ALIGN uint8_t codes[kPacked ? kChunk : 1];
  // Per-axis runs along a long inner dimension keep their scale in a register; everything else that
  // is not per-tensor goes through expanded parameters.
  const bool expand = c.plan.granularity == Granularity::kBlocked ||
                      (c.plan.granularity == Granularity::kPerAxis && c.plan.inner < 256);
  HWY_ALIGN ExpandedParams storage;  // 12 KiB of stack
  // Blocks along an outer axis ([K, N] with blocks along K: each row of N scales serves B rows of x)
  // read their scales in place, a row segment at a time. Where the target's route multiplies, a
  // segment's reciprocals (and unpacked 2/4-bit zero points) are kept for the next rows with the same
  // scales: computing them per segment would cost the division they replace. They live in the float
  // zero-point array, which expansion fills only for FLOAT4E2M1: that output divides. Rows of more
  // than a chunk's scales go column tile by column tile across the range's rows of each block
  // (row-tile tasks, c.columns: ChunkOrder takes them tile by tile), so that a tile's reciprocals
  // serve each of those rows in turn. Flat ranges of such rows, and float8 outputs, divide.
  constexpr bool kCachedReciprocals =
      HWY_NATIVE_FMA && P == T::kFloat && kBlockReciprocals<P, Y> && !has_float_zero_point(Y);
  [[maybe_unused]] float* const cached = storage.float_zero_point;
  [[maybe_unused]] int64_t cached_first = -1;  // parameters [cached_first, cached_first + cached_count)
  [[maybe_unused]] int64_t cached_count = 0;
  [[maybe_unused]] bool cached_apply = false;  // and whether the route applies to every one of them
  // and, for 2/4-bit y, their zero points unpacked (as InPlaceParams would unpack them per segment)
  HWY_ALIGN uint8_t cached_codes[kCachedReciprocals && kPacked ? kChunk : 1];
  // (Integer outputs only: float8's check on the code measured 0.95x the division in that order.)
  const bool row_tiles =
      kCachedReciprocals && shares_row_reciprocals(P, c.scale_type, Y, reciprocal) && c.columns.set();
  [[maybe_unused]] const bool block_reciprocals = kCachedReciprocals && reciprocal &&
                                                  c.plan.granularity == Granularity::kBlocked && c.plan.inner > 1 &&
                                                  (c.plan.inner <= kChunk || row_tiles) && c.scale_type == T::kFloat;
  SegmentCursor cursor(c.plan, begin);
  // As in the dequantize kernels' row tiles: each tile's piece of a row lies in another page, where
  // the hardware prefetchers start again, so the next row's piece is asked for into L2 now. Only for
  // an x past the cache (from the size at which outputs stream): from the L3 the requests cost more
  // than they save (Zen 4, float32 -> int4 blocked-axis0-32: 16 and 64 Mi elements 1.22x, 4 Mi and
  // 1 Mi 0.90x).
  constexpr auto kXBytes = static_cast<uint64_t>(TypeTraits<X>::kBits / 8);
  const uint64_t x_bytes = static_cast<uint64_t>(c.plan.elements) * kXBytes;
  const bool next_row_into_l2 = c.columns.set() && PrefetchesIntoL2(x_bytes) && x_bytes >= stream_threshold_bytes();
  ChunkOrder order(c.plan, begin, end, kChunk, c.columns);
  for (int64_t chunk, chunk_end; order.next(chunk, chunk_end);) {
    if (c.columns.set()) cursor.seek(chunk);
    if (next_row_into_l2) {
      PrefetchIntoL2(reinterpret_cast<uintptr_t>(c.x) + static_cast<uintptr_t>((chunk + c.plan.inner) * kXBytes),
                     static_cast<uintptr_t>((chunk_end - chunk) * kXBytes));
    }
    const PieceOutput piece(stage, stream, OutputAt<Y>(y, chunk));
    // Where the output of element `at` goes: the code buffer for 2/4-bit y (packed at the chunk's end).
    const auto out_at = [&](int64_t at) -> uint8_t* {
      if constexpr (kPacked) return codes + (at - chunk);
      return piece.Out() + OutputBytes<Y>(at - chunk);
    };
    if (expand) {
      // Long segments whose float32 scales step by one (dividing in float32) read their parameters
      // in place; whatever is left of the chunk is expanded.
      int64_t position = chunk;
      if constexpr (P == T::kFloat) {
        position = InPlaceSegments(
            cursor, c.scale_type == T::kFloat, chunk, chunk_end, [&](int64_t at, const Segment& s) QDQ_INLINE_LAMBDA {
              const bool zp_used = IsIntegerOut(Y) || has_float_zero_point(Y);
              const void* const zero_point = zp_used ? c.zero_point : nullptr;
#if HWY_NATIVE_FMA
              if (kCachedReciprocals && block_reciprocals) {
                if (s.param_index < cached_first || s.param_index + s.count > cached_first + cached_count) {
                  cached_first = s.param_index;
                  cached_count = s.count;
                  cached_apply =
                      MarksteinReciprocals(static_cast<const float*>(c.scale) + s.param_index, cached, s.count);
                  if constexpr (kBits < 8) {
                    if (cached_apply && zero_point != nullptr) {
                      UnpackCodes<kBits, IsSignedOut(Y)>(static_cast<const uint8_t*>(zero_point), s.param_index,
                                                         s.count, cached_codes);
                    }
                  }
                }
                if (cached_apply) {
                  const int64_t offset = s.param_index - cached_first;
                  InPlaceParams<kBits, IsSignedOut(Y)> p(c.scale, zero_point, s.param_index, s.count,
                                                         kBits < 8 ? cached_codes + offset : nullptr);
                  p.SetReciprocals(cached + offset);
                  if constexpr (rounding_check_applies(Y)) {
                    QuantizeLoop<X, P, Y, PerVectorReciprocals<RoundingCheck>, false>(c, at, s.count, p, out_at(at));
                    return;
                  } else if constexpr (kCachedReciprocals) {
                    QuantizeLoop<X, P, Y, PerVectorReciprocals<CodeRoundingCheck>, false>(c, at, s.count, p,
                                                                                          out_at(at));
                    return;
                  }
                }
              }
#endif
              const InPlaceParams<kBits, IsSignedOut(Y)> p(c.scale, zero_point, s.param_index, s.count);
              QuantizeLoop<X, P, Y, Divide, false>(c, at, s.count, p, out_at(at));
            });
      }
      if (position < chunk_end) {
        ExpandParams<IsIntegerOut(Y), has_float_zero_point(Y)>(
            cursor, position, chunk_end, storage,
            [&](int64_t first, int64_t count, float* divisor, int32_t* zp, float* zpf) {
              LoadQuantizeParams<P, Y>(c, first, count, divisor, zp, zpf);
            });
        QuantizeLoop<X, P, Y, Divide, false>(c, position, chunk_end - position, ExpandedView{storage},
                                             out_at(position));
      }
    } else {
      for (int64_t position = chunk; position < chunk_end;) {
        const Segment s = cursor.next(position, chunk_end);
        QuantizeRun<X, P, Y, false>(c, position, s.count, BroadcastAt<P, Y>(c, s.param_index), out_at(position),
                                    reciprocal);
        position += s.count;
      }
    }
    if constexpr (kPacked) {
      // `chunk` is a multiple of 4, so the chunk starts on a byte boundary.
      constexpr int kPerByte = 8 / kBits;
      const int64_t count = chunk_end - chunk;
      const int64_t whole = count / kPerByte;
      PackWholeBytes<kBits>(codes, whole, piece.Out());
      piece.Finish(static_cast<size_t>(whole));
      if (whole * kPerByte < count) {
        pack_codes(codes + whole * kPerByte, kBits, chunk + whole * kPerByte, count - whole * kPerByte,
                   static_cast<uint8_t*>(y), chunk_end == c.plan.elements);
      }
    } else {
      piece.Finish(static_cast<size_t>(OutputBytes<Y>(chunk_end - chunk)));
    }
  }
}

/// Elements [begin, end) of a UniformBlocks plan, begin and end multiples of the block size: block
/// k (elements [k·B, (k + 1)·B)) uses parameter k. The parameters are loaded a vector at a time,
/// then each block is one broadcast run of whole groups, packed in registers for 2/4-bit y.
/// `stream`: y's whole lines with non-temporal stores. Out of line, as QuantizeGeneral is, so that
/// the kernel's frame holds neither path's buffers while the other runs.
template <T X, T P, T Y>
HWY_NOINLINE void QuantizeUniformBlocks(const QuantizeCall& c, void* y, int64_t begin, int64_t end, bool reciprocal,
                                        bool stream) {
  const DF df;
  const DI di;
  const int64_t block = c.plan.block;
  HWY_ALIGN ExpandedParams params;
  // Streaming: elements [staged_first, staged_first + staged) of y wait in the stage, up to kChunk of
  // them (every count here is a multiple of 4·Lanes, and so is kChunk).
  HWY_ALIGN uint8_t stage[OutputBytes<Y>(kChunk)];
  int64_t staged_first = begin;
  int64_t staged = 0;
  const auto flush = [&] {
    StreamBytes(stage, static_cast<size_t>(OutputBytes<Y>(staged)), OutputAt<Y>(y, staged_first));
    staged_first += staged;
    staged = 0;
  };
  const auto run = [&](int64_t first, int64_t count, const BroadcastParams& b) {
    while (count > 0) {
      const int64_t n = stream ? std::min(count, kChunk - staged) : count;
      // The general path's run (packing in registers for 2/4-bit y), not another inlined copy of it.
      QuantizeRun<X, P, Y, (OutBits(Y) < 8)>(
          c, first, n, b, stream ? stage + OutputBytes<Y>(staged) : OutputAt<Y>(y, first), reciprocal);
      first += n;
      count -= n;
      if (stream) {
        staged += n;
        if (staged == kChunk) flush();
      }
    }
  };
  for (int64_t first_block = begin / block; first_block < end / block; first_block += kChunk) {
    const int64_t blocks = std::min<int64_t>(kChunk, end / block - first_block);
    LoadQuantizeParams<P, Y>(c, first_block, blocks, params.scale, params.zero_point, params.float_zero_point);
    for (int64_t k = 0; k < blocks; ++k) {
      BroadcastParams b{hn::Set(df, params.scale[k]), hn::Zero(di), hn::Zero(df)};
      if constexpr (IsIntegerOut(Y)) b.zero_point = hn::Set(di, params.zero_point[k]);
      if constexpr (has_float_zero_point(Y)) b.float_zero_point = hn::Set(df, params.float_zero_point[k]);
      run((first_block + k) * block, block, b);
    }
  }
  if (stream && staged > 0) flush();
}

/// Replaces scale[0, count) by their reciprocals where every one of them is exact (ExactReciprocal:
/// ±2^e with 2^e and 2^-e normal, as FLOAT8E8M0 scales, the MX formats', nearly always are), and says
/// whether it did. Whole vectors: the array has a vector of room past the count. The first scale alone
/// rules out most arrays of other scales, before a pass over all of them.
HWY_INLINE bool ExactReciprocalsInPlace(float* scale, int64_t count) {
  float first_reciprocal;
  if (count == 0 || !ExactReciprocal(scale[0], &first_reciprocal)) return false;
  const DF df;
  const DI di;
  auto inexact = hn::FirstN(di, 0);
  const auto exponent_of = [&](VI bits)
                               QDQ_INLINE_LAMBDA { return hn::And(hn::ShiftRight<23>(bits), hn::Set(di, 0xFF)); };
  ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
    const VI bits = hn::BitCast(di, hn::Load(df, scale + k));
    const VI exponent = exponent_of(bits);
    const auto bad = hn::Or(hn::Ne(hn::And(bits, hn::Set(di, 0x007FFFFF)), hn::Zero(di)),
                            hn::Or(hn::Lt(exponent, hn::Set(di, 1)), hn::Gt(exponent, hn::Set(di, 253))));
    inexact = hn::Or(inexact, hn::And(bad, hn::FirstN(di, n)));
  });
  if (!hn::AllFalse(di, inexact)) return false;
  ForEachVector(count, [&](int64_t k, size_t) QDQ_INLINE_LAMBDA {
    const VI bits = hn::BitCast(di, hn::Load(df, scale + k));
    const VI inverse = hn::Or(hn::And(bits, hn::Set(di, static_cast<int32_t>(0x80000000u))),
                              hn::ShiftLeft<23>(hn::Sub(hn::Set(di, 254), exponent_of(bits))));
    hn::Store(hn::BitCast(df, inverse), df, scale + k);
  });
  return true;
}

/// Elements [begin, end) of a plan with VectorBlockShift `shift` (blocks of one to eight vectors),
/// begin and end multiples of the block size and, for 2/4-bit y, end − begin a multiple of four
/// vectors: pieces of whole blocks (up to VectorBlockParams::kBlocks of them; kChunk elements when streaming) load
/// their blocks' parameters once, then one flat loop divides four vectors at a time, each vector with its block's
/// broadcast scale (and, where `reciprocal` says the target takes a reciprocal route, that scale's reciprocal),
/// and packs 2/4-bit codes in registers. `stream`: y's whole lines with non-temporal stores, each piece through
/// the stage. Out of line, and without the general path inside: a call's stack stays within qdq.hpp's bound (its
/// parameter arrays, 4 KiB, and stage, at most 2 KiB, come on top of the kernel's frame).
template <T X, T P, T Y>
HWY_NOINLINE void QuantizeVectorBlocks(const QuantizeCall& c, void* y, int64_t begin, int64_t end, int shift,
                                       bool reciprocal, bool stream) {
  constexpr bool kPack = OutBits(Y) < 8;
  HWY_ALIGN VectorBlockParams params;
  HWY_ALIGN uint8_t stage[OutputBytes<Y>(kChunk)];  // streaming: a piece's bytes of y
  params.shift = shift;
  int vector_shift = 0;  // log2 of the lanes of a vector
  while ((int64_t{1} << vector_shift) < static_cast<int64_t>(hn::Lanes(DF()))) ++vector_shift;
  const int64_t span = VectorBlockParams::PieceSpan(shift, stream);
  for (int64_t first = begin; first < end; first += span) {
    const int64_t count = std::min(span, end - first);
    LoadQuantizeParams<P, Y>(c, first >> shift, count >> shift, params.scale, params.zero_point,
                             params.float_zero_point);
    // Pieces start on whole blocks, of whole vectors: on whole bytes of 2/4-bit y.
    const PieceOutput piece(stage, stream, OutputAt<Y>(y, first));
    // Pieces start on a block: each step of the loop lies in one block of four vectors or more, or
    // holds two whole blocks of two vectors.
    const auto loop = [&](auto quotient) QDQ_INLINE_LAMBDA {
      using Quotient = decltype(quotient);
      if (shift >= vector_shift + 2) {
        QuantizeLoop<X, P, Y, Quotient, kPack>(c, first, count, StepBlockParams<4>{params}, piece.Out());
      } else if (shift == vector_shift + 1) {
        QuantizeLoop<X, P, Y, Quotient, kPack>(c, first, count, StepBlockParams<2>{params}, piece.Out());
      } else {
        QuantizeLoop<X, P, Y, Quotient, kPack>(c, first, count, params, piece.Out());
      }
    };
    // Power-of-two scales (the MX formats' FLOAT8E8M0 ones) multiply by their exact reciprocals;
    // others take the target's reciprocal route with each block's own reciprocal, where it applies
    // to every block of the piece.
    if constexpr (is_half_division(P)) {
      if (ExactReciprocalsInPlace(params.scale, count >> shift)) {
        loop(MultiplyByExactReciprocal{});
      } else if (reciprocal && MarksteinReciprocals(params.scale, params.reciprocal, count >> shift)) {
        loop(PerVectorReciprocals<HalfProduct>{});
      } else {
        loop(Divide{});
      }
    } else if constexpr (P == T::kFloat) {
      if (ExactReciprocalsInPlace(params.scale, count >> shift)) {
        loop(MultiplyByExactReciprocal{});
#if HWY_NATIVE_FMA
      } else if (kBlockReciprocals<P, Y> && reciprocal &&
                 MarksteinReciprocals(params.scale, params.reciprocal, count >> shift)) {
        if constexpr (rounding_check_applies(Y)) {
          loop(PerVectorReciprocals<RoundingCheck>{});
        } else if constexpr (kBlockReciprocals<P, Y>) {
          // FLOAT4E2M1 with a zero point divides: Markstein per block lost to the division.
          if (code_check_applies(Y, c.zero_point != nullptr)) {
            loop(PerVectorReciprocals<CodeRoundingCheck>{});
          } else {
            loop(Divide{});
          }
        }
#endif
      } else {
        loop(Divide{});
      }
    } else {
      loop(Divide{});
    }
    (void)reciprocal;
    piece.Finish(static_cast<size_t>(OutputBytes<Y>(count)));
  }
}

/// One task, elements [begin, end): shared by both StoreModes (out of line, so that the kernels of
/// the two modes are one copy of the code).
template <T X, T P, T Y>
HWY_NOINLINE void QuantizeKernelBody(const QuantizeCall& c, void* y, int64_t begin, int64_t end, bool reciprocal,
                                     bool stream) {
  if (c.columns.set()) {  // a row-tile task: blocks along an outer axis, which only the general path reads
    QuantizeGeneral<X, P, Y>(c, y, begin, end, reciprocal, stream);
    return;
  }
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  // Where the target's route multiplies by a reciprocal, the flat loop takes each block's own for
  // kBlockReciprocals outputs; for the others it divides, so their blocks of four vectors and more
  // keep a loop per block with one reciprocal in a register.
  const int shift =
      VectorBlockShift(c.plan, lanes, (reciprocal && !kBlockReciprocals<P, Y> ? 3 : kMaxFlatBlockVectors) * lanes);
  if (shift >= 0) {
    // Whole blocks in the middle; a partial block at either end of the task goes the general way.
    // 2/4-bit y packs whole groups of four vectors in registers: the last partial group goes the
    // general way too.
    const int64_t block = c.plan.block;
    const int64_t group = OutBits(Y) < 8 ? std::max(4 * lanes, block) : block;
    const WholeBlocks whole = WholeBlocksOf(begin, end, block, group);
    QuantizeGeneral<X, P, Y>(c, y, begin, whole.lo, reciprocal, stream);
    QuantizeVectorBlocks<X, P, Y>(c, y, whole.lo, whole.hi, shift, reciprocal, stream);
    QuantizeGeneral<X, P, Y>(c, y, whole.hi, end, reciprocal, stream);
    return;
  }
  if (UniformBlocks(c.plan, 4 * lanes)) {
    // Whole blocks in the middle; a partial block at either end of the task goes the general way.
    const WholeBlocks whole = WholeBlocksOf(begin, end, c.plan.block, c.plan.block);
    QuantizeGeneral<X, P, Y>(c, y, begin, whole.lo, reciprocal, stream);
    QuantizeUniformBlocks<X, P, Y>(c, y, whole.lo, whole.hi, reciprocal, stream);
    QuantizeGeneral<X, P, Y>(c, y, whole.hi, end, reciprocal, stream);
    return;
  }
  QuantizeGeneral<X, P, Y>(c, y, begin, end, reciprocal, stream);
}

/// The kernel: the route is looked up (at the first call, measured) before QuantizeKernelBody's frame
/// with its parameter buffers is entered, so the measurement's kernel runs do not stack on it.
template <T X, T P, T Y, StoreMode kStores>
void QuantizeKernelT(const QuantizeCall& c, void* y, int64_t begin, int64_t end) {
  bool reciprocal = false;
  if constexpr (P == T::kFloat) reciprocal = UseReciprocal<Y>(c);
  if constexpr (is_half_division(P)) reciprocal = half_product_route();
  QuantizeKernelBody<X, P, Y>(c, y, begin, end, reciprocal, kStores == StoreMode::kStream);
  // The task's last held-back bytes, then its non-temporal stores ordered before whatever reports it
  // done.
  if constexpr (kStores == StoreMode::kStream) {
    FlushStreamCarry();
    hwy::FlushStream();
  }
}

/// The kernel of family kFamily for the call and stores, or nullptr where quantize_kernels.inc lists
/// none for its (x, division type, y) in this family or the vector kernels do not read its parameters.
template <QuantizeFamily kFamily>
QuantizeKernel ChooseFamilyKernel(const QuantizeCall& c, StoreMode stores) {
  // FLOAT8E8M0 (MX) scales are powers of two (or NaN): runs sharing one take the exact-reciprocal
  // route where the scale and its inverse are normal floats (codes 1..253), the division otherwise.
  if (!IsVectorScaleType(c.scale_type)) return nullptr;
  // A zero point must be of the output type (float8 zero points only select the type).
  if (c.zero_point != nullptr && c.zero_point_type != c.y_type) return nullptr;
#define QDQ_QUANTIZE_KERNEL(FAMILY, X, P, Y)                                                        \
  if constexpr (kFamily == QuantizeFamily::k##FAMILY) {                                             \
    if (c.x_type == T::X && c.division_type == T::P && c.y_type == T::Y) {                          \
      return stores == StoreMode::kStream ? &QuantizeKernelT<T::X, T::P, T::Y, StoreMode::kStream>  \
                                          : &QuantizeKernelT<T::X, T::P, T::Y, StoreMode::kNormal>; \
    }                                                                                               \
  }
#include "kernels/simd/quantize_kernels.inc"
#undef QDQ_QUANTIZE_KERNEL
  return nullptr;
}

}  // namespace
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_QUANTIZE_INL_H_
