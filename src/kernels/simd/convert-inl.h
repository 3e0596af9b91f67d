// Exact conversions between float32 lanes and qdq's narrow float formats, bit-identical to
// types/float_formats.hpp's encode/decode (tests/unit/simd_helpers_test.cc checks every target).
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_CONVERT_INL_H_
#undef QDQ_SIMD_CONVERT_INL_H_
#else
#define QDQ_SIMD_CONVERT_INL_H_
#endif

#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/simd/vectors-inl.h"
#include "types/float_formats.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

// ---------------------------------------------------------------------------------------------
// Minifloat conversions. F is one of the MiniFloat formats of types/float_formats.hpp.

/// Each lane rounded to an int32 in the current rounding mode (nearest even unless the caller
/// changed it, as for the division itself), for lanes known to lie within ±2^31: the bare
/// conversion instruction, without the out-of-range fix-up of Highway's NearestInt. (On x86 a NaN lane
/// and one outside ±2^31 give INT32_MIN, the integer indefinite, which CodesBeforeZeroPoint uses.)
HWY_INLINE VI NearestIntInRange(VF v) {
#if HWY_TARGET == HWY_AVX3
  return VI{_mm512_cvtps_epi32(v.raw)};
#elif HWY_TARGET == HWY_AVX2
  return VI{_mm256_cvtps_epi32(v.raw)};
#elif HWY_TARGET == HWY_SSE4
  return VI{_mm_cvtps_epi32(v.raw)};
#else
  return hn::NearestInt(v);
#endif
}

/// min(limit, v) for a non-NaN limit, a NaN v passed through.
HWY_INLINE VF MinKeepingNaN(VF limit, VF v) {
#if HWY_TARGET == HWY_AVX3
  return VF{_mm512_min_ps(limit.raw, v.raw)};  // minps returns its second operand when either is NaN
#elif HWY_TARGET == HWY_AVX2
  return VF{_mm256_min_ps(limit.raw, v.raw)};
#elif HWY_TARGET == HWY_SSE4
  return VF{_mm_min_ps(limit.raw, v.raw)};
#else
  return hn::IfThenElse(hn::Gt(v, limit), limit, v);
#endif
}

/// v clamped to [-limit, limit], a NaN v becoming +limit.
HWY_INLINE VF ClampNaNToLimit(VF v, VF limit) {
#if HWY_TARGET == HWY_AVX3
  return VF{_mm512_max_ps(hn::Neg(limit).raw, _mm512_min_ps(v.raw, limit.raw))};  // NaN: second operand
#elif HWY_TARGET == HWY_AVX2
  return VF{_mm256_max_ps(hn::Neg(limit).raw, _mm256_min_ps(v.raw, limit.raw))};
#elif HWY_TARGET == HWY_SSE4
  return VF{_mm_max_ps(hn::Neg(limit).raw, _mm_min_ps(v.raw, limit.raw))};
#else
  return hn::IfThenElse(hn::IsNaN(v), limit, hn::Clamp(v, hn::Neg(limit), limit));
#endif
}

/// min(v, limit) for a non-NaN limit, a NaN v becoming +limit.
HWY_INLINE VF MinNaNToLimit(VF v, VF limit) {
#if HWY_TARGET == HWY_AVX3
  return VF{_mm512_min_ps(v.raw, limit.raw)};  // NaN: second operand
#elif HWY_TARGET == HWY_AVX2
  return VF{_mm256_min_ps(v.raw, limit.raw)};
#elif HWY_TARGET == HWY_SSE4
  return VF{_mm_min_ps(v.raw, limit.raw)};
#else
  return hn::IfThenElse(hn::IsNaN(v), limit, hn::Min(v, limit));
#endif
}

/// The FLOAT4E2M1 code of |v|, v replaced by v clamped to ±6 (NaN to +6), whose sign is then the
/// code's: EncodeNarrowMagnitude for FLOAT4E2M1.
///
/// Clamped, |v| lies in binade k = max(e, 0) (e its exponent) of spacing 2^(k-1), whose codes start
/// at 2k: the code is 2k + RNE(|v| · 2^(1-k)). The factor goes into the exponent field by one integer
/// addition of (1 - k) << 23 = min((128 - E) << 23, 1 << 23), E the biased field. Below binade 0 the
/// sum is 2|v| for normal v, and for ±0 and subnormals a value under 2^-125, which rounds to 0 as 2|v|
/// does. The addition keeps v's sign, which the conversion keeps and the absolute value drops.
/// `scaled` receives ±|v|·2^(1-k), the value that the conversion rounds (CodeRoundingCheck reads it).
/// kUncapped: v is only clamped to at most 6 (NaN to +6), and the result is the code less 2 (at
/// least -2): below -6, |v| lies in a higher binade and the code is above 7 (at most 258, ±inf
/// included), for a caller that adds the 2 and takes the minimum with 7 once on bytes
/// (StoreSignedNibbles4) instead of the lower clamp and the addition per vector.
template <bool kUncapped = false>
HWY_INLINE VU EncodeFloat4Magnitude(VF& v, VF& scaled) {
  const DF df;
  const DI di;
  v = kUncapped ? MinNaNToLimit(v, hn::Set(df, 6.0f)) : ClampNaNToLimit(v, hn::Set(df, 6.0f));
  const VI bits = hn::BitCast(di, v);
  const VI exponent_field = hn::And(bits, hn::Set(di, 0x7F800000));
  const VI factor = hn::Min(hn::Sub(hn::Set(di, 128 << 23), exponent_field), hn::Set(di, 1 << 23));
  scaled = hn::BitCast(df, hn::Add(bits, factor));
  const VI rounded = hn::Abs(NearestIntInRange(scaled));
  // 2k = 2 - (factor >> 22).
  const VI code_less_two = hn::Sub(rounded, hn::ShiftRight<22>(factor));
  return hn::BitCast(DU(), kUncapped ? code_less_two : hn::Add(code_less_two, hn::Set(di, 2)));
}

/// The constant term 2^M·(M - emin) of EncodeFloat8Magnitude's code (M the mantissa bits, emin the
/// smallest normal exponent: 72 for FLOAT8E4M3FN, 64 for E5M2, 80 and 68 for the FNUZ formats, all
/// below 128), which kUncapped leaves to the caller.
template <class F>
constexpr int32_t Float8CodeBase() {
  return (F::kManBits - (1 - F::kBias)) << F::kManBits;
}

/// The code of |v| in float8 format F, the sign left to ApplyNarrowSign: EncodeNarrow without its
/// sign.
///
/// As EncodeFloat4Magnitude: |v| in binade k = max(e, emin) (e its exponent, emin the format's
/// smallest normal exponent) has spacing 2^(k-M), and its code is 2^M·(k - emin) + RNE(|v|·2^(M-k))
/// (a carry into 2^(M+1) is the next binade's first code; subnormal codes are the k = emin case).
/// The factor goes into the exponent field by one integer addition of (M - k) << 23 =
/// min((M + 127 - E) << 23, (M - emin) << 23), E the biased field, and one conversion rounds. ±0 and
/// float32 subnormals end far below 1/2 and give 0. Saturation clamps the finite magnitude before
/// (a NaN stays NaN). ±inf and NaN (E = 255) land at codes above 2^M·(128 - emin), above every
/// finite code, as overflow does above the largest one: one minimum, and per format a select, sorts
/// them out. Checked against types/float_formats.hpp's encode for every non-negative float32, both
/// saturation modes, all four formats (a scalar model of these operations; the unit tests check the
/// vectors on every target exhaustively over the high bits).
/// `scaled` receives |v|·2^(M-k) (v saturated first where that applies), the value that the
/// conversion rounds (CodeRoundingCheck reads it). kFinite: the caller uses the codes only where
/// every lane of v is finite, so that FNUZ saturation needs no select by finiteness. kUncapped:
/// where the last step is one minimum with Float8CodeCap, the codes before it less Float8CodeBase
/// (-Float8CodeBase to 2^11), for a caller that adds the base and takes the minimum once on bytes
/// (StoreSignedBytes4); otherwise the codes as always.
template <class F, bool kFinite = false, bool kUncapped = false>
HWY_INLINE VU EncodeFloat8Magnitude(VF v, bool saturate, VF& scaled) {
  static_assert(F::kBits == 8);
  const DF df;
  const DI di;
  const DU du;
  constexpr int kM = F::kManBits;
  constexpr int kMinExponent = 1 - F::kBias;  // emin
  // The largest finite value, as float32 bits: exponent and mantissa of kMaxCode, rebiased.
  constexpr uint32_t kMaxBits = ((F::kMaxCode >> kM) + 127 - F::kBias) << 23 | (F::kMaxCode & F::kManMask) << (23 - kM);
  constexpr bool kFnuz = F::kSpecials == SpecialValues::kFnuz;
  const VU unclamped = hn::And(hn::BitCast(du, v), hn::Set(du, 0x7FFFFFFFu));
  VU mag = unclamped;
  // FNUZ formats saturate ±inf to their NaN, not to the largest value: they are sorted out below.
  if (saturate && !kFnuz)
    mag = hn::BitCast(du, MinKeepingNaN(hn::BitCast(df, hn::Set(du, kMaxBits)), hn::BitCast(df, mag)));
  const VI exponent_field = hn::BitCast(di, hn::And(mag, hn::Set(du, 0x7F800000u)));
  const VI factor =
      hn::Min(hn::Sub(hn::Set(di, (kM + 127) << 23), exponent_field), hn::Set(di, (kM - kMinExponent) << 23));
  scaled = hn::BitCast(df, hn::Add(hn::BitCast(di, mag), factor));
  const VI rounded = NearestIntInRange(scaled);
  // 2^M·(k - emin) = ((M - emin) << M) - (factor >> (23 - M)), the first term Float8CodeBase.
  const VI code_less_base = hn::Sub(rounded, hn::ShiftRight<23 - kM>(factor));
  const VU code = hn::BitCast(du, hn::Add(code_less_base, hn::Set(di, Float8CodeBase<F>())));
  const auto capped = [&](uint32_t cap) QDQ_INLINE_LAMBDA {
    return kUncapped ? hn::BitCast(du, code_less_base) : hn::Min(code, hn::Set(du, cap));
  };
  if constexpr (F::kSpecials == SpecialValues::kFn) {
    // Overflow (not saturating), ±inf and NaN: the NaN S.1111.111.
    return capped(F::kMagnitudeMask);
  } else if constexpr (F::kSpecials == SpecialValues::kIeee) {
    // Saturating, only a NaN passes the largest finite code, and the quiet NaN's code is above it;
    // otherwise overflow and ±inf give ±inf and a NaN the quiet NaN.
    if (saturate) return capped(nan_code<F>(false));
    const auto is_nan = hn::Gt(hn::BitCast(di, unclamped), hn::Set(di, 0x7F800000));
    return hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Set(du, nan_code<F>(false)),
                          hn::Min(code, hn::Set(du, F::kExpFieldMax << kM)));
  } else {
    static_assert(kFnuz);
    // Overflow (not saturating), ±inf and NaN: the unsigned NaN 0x80; saturating, finite overflow
    // takes the largest code and only ±inf and NaN the NaN.
    if (saturate) {
      if constexpr (kFinite) return capped(F::kMaxCode);
      // ±inf and NaN by their exponent field: one equality, where the compilers turned "below
      // 0x7F800000" on the non-negative magnitude into a minimum and an equality.
      const auto special = hn::Eq(exponent_field, hn::Set(di, 0x7F800000));
      return hn::IfThenElse(hn::RebindMask(du, special), hn::Set(du, F::kSignBit),
                            hn::Min(code, hn::Set(du, F::kMaxCode)));
    }
    return capped(F::kSignBit);
  }
}

/// The code that EncodeFloat8Magnitude<F, kFinite> ends with one minimum against (the step that
/// kUncapped leaves out), or 0 where its last step is not one minimum (IEEE formats not saturating,
/// FNUZ saturating unless kFinite).
template <class F, bool kFinite = false>
constexpr uint32_t Float8CodeCap(bool saturate) {
  if constexpr (F::kSpecials == SpecialValues::kFn) {
    return F::kMagnitudeMask;
  } else if constexpr (F::kSpecials == SpecialValues::kIeee) {
    return saturate ? nan_code<F>(false) : 0;
  } else {
    return saturate ? (kFinite ? F::kMaxCode : 0) : F::kSignBit;
  }
}

/// The code of |v| in format F (a float8 type or FLOAT4E2M1), the sign left to ApplyNarrowSign.
/// FLOAT4E2M1 replaces v by v clamped to ±6, NaN by +6, whose sign is then the code's; the float8
/// formats leave v as it is.
/// `scaled` receives the value that the encoder's conversion rounds to the code's low part; kFinite
/// as for EncodeFloat8Magnitude, kUncapped as for EncodeFloat8Magnitude and EncodeFloat4Magnitude.
template <class F, bool kFinite = false, bool kUncapped = false>
HWY_INLINE VU EncodeNarrowMagnitude(VF& v, bool saturate, VF& scaled) {
  if constexpr (std::is_same_v<F, Float4E2M1Format>) {
    return EncodeFloat4Magnitude<kUncapped>(v, scaled);
  } else {
    return EncodeFloat8Magnitude<F, kFinite, kUncapped>(v, saturate, scaled);
  }
}

template <class F>
HWY_INLINE VU EncodeNarrowMagnitude(VF& v, bool saturate) {
  VF scaled;
  return EncodeNarrowMagnitude<F>(v, saturate, scaled);
}

/// The signed code of EncodeNarrowMagnitude's `magnitude` and (possibly replaced) v: v's sign bit
/// on top, except that FNUZ zero has no sign (and their NaN 0x80 has it already).
template <class F>
HWY_INLINE VU ApplyNarrowSign(VU magnitude, VF v) {
  const DU du;
  const VU sign = hn::ShiftRight<31 - F::kExpBits - F::kManBits>(hn::And(hn::BitCast(du, v), hn::Set(du, 0x80000000u)));
  if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    return hn::Or(magnitude, hn::IfThenZeroElse(hn::Eq(magnitude, hn::Zero(du)), sign));
  }
  return hn::Or(magnitude, sign);
}

/// EncodeF for the 8- and 4-bit formats (the float8 types, FLOAT4E2M1).
template <class F>
HWY_INLINE VU EncodeNarrow(VF v, bool saturate) {
  const VU magnitude = EncodeNarrowMagnitude<F>(v, saturate);
  return ApplyNarrowSign<F>(magnitude, v);
}

/// EncodeF for float16 and bfloat16 (IEEE specials; NaNs keep their top payload bits).
template <class F>
HWY_INLINE VU EncodeWide(VF v, bool saturate) {
  static_assert(F::kBits == 16 && F::kSpecials == SpecialValues::kIeee);
  const DF df;
  const DI di;
  const DU du;
  constexpr int kM = F::kManBits;
  constexpr int kS = 23 - kM;  // float32 mantissa bits dropped
  const VU bits = hn::BitCast(du, v);
  const VU mag = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const VI mag_i = hn::BitCast(di, mag);

  // Normal range of F: round the float32 bits to nearest even at bit kS (a carry moves into the
  // exponent, which is the correct next binade), then rebias the exponent.
  const VU odd = hn::And(hn::ShiftRight<kS>(mag), hn::Set(du, 1u));
  const VU rounded = hn::Add(mag, hn::Add(hn::Set(du, (1u << (kS - 1)) - 1u), odd));
  VI code =
      hn::BitCast(di, hn::Sub(hn::ShiftRight<kS>(rounded), hn::Set(du, static_cast<uint32_t>(127 - F::kBias) << kM)));
  if constexpr (F::kBias != 127) {
    // Below F's smallest normal: the code is |v| / 2^(1 - bias - M) rounded to an integer (RNE); the
    // scaling by a power of two is exact, and a result of 2^M is the smallest normal's code.
    const auto tiny = hn::Lt(mag_i, hn::Set(di, static_cast<int32_t>(127 + 1 - F::kBias) << 23));
    const VF scaled = hn::Mul(hn::BitCast(df, mag), hn::Set(df, static_cast<float>(1ll << (F::kBias - 1 + kM))));
    code = hn::IfThenElse(tiny, hn::ConvertTo(di, hn::Round(scaled)), code);
  }
  // (bfloat16 shares float32's exponent range: the rounding above is right for subnormals too.)

  const VI max_code = hn::Set(di, static_cast<int32_t>(F::kMaxCode));
  const auto overflow = hn::Gt(code, max_code);
  const auto is_inf = hn::Eq(mag_i, hn::Set(di, 0x7F800000));
  const auto is_nan = hn::Gt(mag_i, hn::Set(di, 0x7F800000));
  const VU sign = hn::ShiftRight<31 - F::kExpBits - kM>(hn::And(bits, hn::Set(du, 0x80000000u)));
  const VI inf_code = hn::Set(di, static_cast<int32_t>(F::kExpFieldMax << kM));
  code = hn::IfThenElse(hn::Or(overflow, is_inf), saturate ? max_code : inf_code, code);
  // NaNs keep the top payload bits (bfloat16 forced quiet; never a zero payload).
  VI top = hn::BitCast(di, hn::ShiftRight<kS>(hn::And(mag, hn::Set(du, 0x007FFFFFu))));
  if constexpr (F::kExpBits == 8) top = hn::Or(top, hn::Set(di, 1 << (kM - 1)));
  top = hn::Max(top, hn::Set(di, 1));
  code = hn::IfThenElse(is_nan, hn::Or(top, inf_code), code);
  return hn::Or(hn::BitCast(du, code), sign);
}

/// Encodes each lane of `v` (float32) into format F: exactly encode<F>(float, saturate), lane-wise.
/// Returns the codes in the low bits of u32 lanes.
template <class F>
HWY_INLINE VU EncodeF(VF v, bool saturate) {
  if constexpr (F::kBits <= 8) {
    return EncodeNarrow<F>(v, saturate);
  } else {
    return EncodeWide<F>(v, saturate);
  }
}

/// Decodes codes of format F (low bits of u32 lanes, higher bits ignored) to float32, exactly as
/// decode<F> does, NaN payloads included.
template <class F>
HWY_INLINE VF DecodeF(VU code) {
  const DF df;
  const DI di;
  const DU du;
  constexpr int kM = F::kManBits;
  code = hn::And(code, hn::Set(du, (F::kSignBit << 1) - 1u));
  const VU sign = hn::ShiftLeft<31 - F::kExpBits - kM>(hn::And(code, hn::Set(du, F::kSignBit)));
  const VU magc = hn::And(code, hn::Set(du, F::kMagnitudeMask));
  const VU man = hn::And(code, hn::Set(du, F::kManMask));
  VU out;
  if constexpr (F::kExpBits == 8) {
    out = hn::ShiftLeft<23 - kM>(magc);
  } else {
    const VU normal = hn::Add(hn::ShiftLeft<23 - kM>(magc), hn::Set(du, static_cast<uint32_t>(127 - F::kBias) << 23));
    // Subnormal codes: man · 2^(1 − bias − M), computed from normal float32 numbers only.
    const VF sub = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, man)),
                           hn::BitCast(df, hn::Set(du, static_cast<uint32_t>(127 + 1 - F::kBias - kM) << 23)));
    const auto is_sub = hn::RebindMask(du, hn::Lt(hn::BitCast(di, magc), hn::Set(di, 1 << kM)));
    out = hn::IfThenElse(is_sub, hn::BitCast(du, sub), normal);
  }
  if constexpr (F::kSpecials == SpecialValues::kIeee) {
    const auto special =
        hn::RebindMask(du, hn::Gt(hn::BitCast(di, magc), hn::Set(di, static_cast<int32_t>(F::kExpFieldMax << kM) - 1)));
    const auto has_man = hn::RebindMask(du, hn::Gt(hn::BitCast(di, man), hn::Zero(di)));
    // float16/bfloat16 NaNs keep their payload (made quiet); float8 NaNs decode to the default NaN.
    const VU quiet = hn::IfThenElseZero(has_man, hn::Set(du, 0x00400000u));
    const VU payload = F::kBits == 16 ? hn::ShiftLeft<23 - kM>(man) : hn::Zero(du);
    const VU inf_nan = hn::Or(hn::Set(du, 0x7F800000u), hn::Or(payload, quiet));
    out = hn::IfThenElse(special, inf_nan, out);
  } else if constexpr (F::kSpecials == SpecialValues::kFn) {
    const auto nan =
        hn::RebindMask(du, hn::Eq(hn::BitCast(di, magc), hn::Set(di, static_cast<int32_t>(F::kMagnitudeMask))));
    out = hn::IfThenElse(nan, hn::Set(du, 0x7FC00000u), out);
  } else if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    // 0x80 (sign bit, zero magnitude) is the NaN: the negative quiet NaN.
    const auto nan = hn::RebindMask(du, hn::Eq(hn::BitCast(di, code), hn::Set(di, static_cast<int32_t>(F::kSignBit))));
    out = hn::IfThenElse(nan, hn::Set(du, 0x7FC00000u), out);
  }
  return hn::BitCast(df, hn::Or(out, sign));
}

// ---------------------------------------------------------------------------------------------
// float16 and bfloat16, the formats on the hot paths of 16-bit inputs and outputs. They get shorter
// exact forms than the general MiniFloat code above: F16C instructions where the target has them
// (Highway's AVX2 and AVX3 targets require F16C), and bit arithmetic for bfloat16, which shares
// float32's exponent. Both give exactly DecodeF/EncodeF<F>(v, false) on every input they receive:
// - VCVTPH2PS is exact and, like decode<Float16Format>, makes a NaN quiet and keeps its payload;
// - VCVTPS2PH (immediate 0: round to nearest even, not MXCSR's mode) rounds like encode<Float16Format>
//   and keeps a NaN's top payload bits; it also sets the quiet bit, which encode does not do for a
//   signalling NaN. Encoders here only ever see the results of arithmetic (quotients and products),
//   which are never signalling NaNs, and for a quiet NaN the two agree. The unit tests compare
//   every float16/bfloat16 code and every float32 high-bit pattern with the scalar encoder.
#undef QDQ_SIMD_F16C
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define QDQ_SIMD_F16C 1
#else
#define QDQ_SIMD_F16C 0
#endif

/// Lanes [0, n) of float16 (F = Float16Format) or bfloat16 codes at p as exact float32, NaNs quiet.
template <class F>
HWY_INLINE VF LoadHalf(const uint16_t* p, size_t n) {
  const DF df;
  if constexpr (std::is_same_v<F, BFloat16Format>) {
    const DU du;
    const DI di;
    const hn::Rebind<uint16_t, DF> d16;
    const VU bits = hn::ShiftLeft<16>(hn::PromoteTo(du, LoadPartial(d16, p, n)));
    const auto nan =
        hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000)));
    return hn::BitCast(df, hn::Or(bits, hn::IfThenElseZero(nan, hn::Set(du, 0x00400000u))));
  } else {
#if QDQ_SIMD_F16C
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, LoadPartial(dh, reinterpret_cast<const hwy::float16_t*>(p), n));
#else
    const hn::Rebind<uint16_t, DF> d16;
    return DecodeF<F>(hn::PromoteTo(DU(), LoadPartial(d16, p, n)));
#endif
  }
}

/// The float32 bits of v rounded to nearest even at bit kBit: the bits above it, with the low ones
/// cleared, are v rounded to 24 - kBit significant bits (16: bfloat16; 13: float16's 11, within its
/// normal range); the low bits are left over. Right for every v that is not a NaN (a carry moves into
/// the exponent, up to ±inf, never into the sign). A NaN whose low kBit bits are zero — the result of
/// any arithmetic on NaNs that came from bfloat16, float16 or float8 codes, and the default NaN —
/// keeps its high bits, then its quiet code; other NaNs may come out as ±inf or the other sign's NaN,
/// so callers either know their NaNs are of that kind or do not care about the result for NaN lanes.
template <int kBit>
HWY_INLINE VU RoundBitsAt(VF v) {
  static_assert(kBit >= 1 && kBit <= 22);
  const DU du;
  const VU bits = hn::BitCast(du, v);
  constexpr uint32_t kOdd = 1u << kBit;
  constexpr uint32_t kHalf = kOdd >> 1;
#if HWY_TARGET == HWY_AVX3
  // The odd bit as a mask: bits + kHalf where bit kBit is set, else bits + kHalf - 1 (three
  // operations instead of four).
  const __mmask16 odd = _mm512_test_epi32_mask(bits.raw, _mm512_set1_epi32(static_cast<int>(kOdd)));
  return VU{_mm512_mask_add_epi32(_mm512_add_epi32(bits.raw, _mm512_set1_epi32(static_cast<int>(kHalf - 1))), odd,
                                  bits.raw, _mm512_set1_epi32(static_cast<int>(kHalf)))};
#else
  // bits + kHalf - 1, less -1 where bit kBit is set: a compare instead of a shift, which on Zen 3
  // runs beside the shifts and shuffles of the pack that follows rather than on their two pipes.
  const VU odd_bit = hn::Set(du, kOdd);
  const VU odd = hn::VecFromMask(du, hn::Eq(hn::And(bits, odd_bit), odd_bit));
  return hn::Sub(hn::Add(bits, hn::Set(du, kHalf - 1)), odd);
#endif
}

/// RoundBitsAt<16>: the high half is v's bfloat16 code.
HWY_INLINE VU RoundBitsToBF16(VF v) { return RoundBitsAt<16>(v); }

/// The float16/bfloat16 codes of v (round to nearest even, overflow to ±inf), in the low 16 bits of
/// u32 lanes: EncodeF<F>(v, false) for every v that is not a signalling NaN.
template <class F>
HWY_INLINE VU EncodeHalf(VF v) {
  const DU du;
  if constexpr (std::is_same_v<F, BFloat16Format>) {
    const DI di;
    const VU bits = hn::BitCast(du, v);
    const VU rounded = hn::ShiftRight<16>(RoundBitsToBF16(v));
    const auto nan =
        hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000)));
    return hn::IfThenElse(nan, hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u)), rounded);
  } else {
#if QDQ_SIMD_F16C
    const hn::Rebind<hwy::float16_t, DF> dh;
    const hn::Rebind<uint16_t, DF> d16;
    return hn::PromoteTo(du, hn::BitCast(d16, hn::DemoteTo(dh, v)));
#else
    return EncodeF<F>(v, false);
#endif
  }
}

/// Stores lanes [0, n) of v as float16/bfloat16 codes (EncodeHalf) at p.
template <class F>
HWY_INLINE void StoreHalf(VF v, uint16_t* p, size_t n) {
#if QDQ_SIMD_F16C
  if constexpr (std::is_same_v<F, Float16Format>) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    StorePartial(dh, hn::DemoteTo(dh, v), reinterpret_cast<hwy::float16_t*>(p), n);
    return;
  }
#endif
  const hn::Rebind<uint16_t, DF> d16;
  StorePartial(d16, hn::DemoteTo(d16, hn::BitCast(DI(), EncodeHalf<F>(v))), p, n);
}

/// v rounded to the nearest value of format F (RNE, F = float16 or bfloat16): round_to<F>(v).
template <class F>
HWY_INLINE VF RoundToF(VF v) {
#if QDQ_SIMD_F16C
  if constexpr (std::is_same_v<F, Float16Format>) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(DF(), hn::DemoteTo(dh, v));
  }
#endif
  if constexpr (std::is_same_v<F, BFloat16Format>) {
    // The quiet-NaN code keeps the NaN quiet: decoding it is the plain shift.
    return hn::BitCast(DF(), hn::ShiftLeft<16>(EncodeHalf<F>(v)));
  }
  return DecodeF<F>(EncodeF<F>(v, false));
}

/// The power of two by which LoadDecoded<F> multiplies the float16 it converts the codes through (the
/// biases of FLOAT8E4M3FN and FNUZ against float16's), 1 where it does not: with kApplyFactor false
/// the decode leaves it out, for callers that fold it into a scale (an exact product either way).
template <class F>
constexpr float kDecodeFactor = !QDQ_SIMD_F16C                            ? 1.0f
                                : std::is_same_v<F, Float8E4M3FNFormat>   ? 256.0f
                                : std::is_same_v<F, Float8E4M3FNUZFormat> ? 128.0f
                                                                          : 1.0f;

/// Lanes [0, n) of one-byte codes of format F (a float8 type or FLOAT4E2M1, one code per byte, below
/// 2^F::kBits) at p as float32: exactly DecodeF<F> (decode<F>, NaN sign and default payload included),
/// in fewer operations where the target allows, the decode of the dequantize kernels' hot loop:
/// - FLOAT8E4M3FN/FNUZ and FLOAT8E5M2 through float16, whose conversion instruction is exact on
///   normals and subnormals: the code's sign, exponent and mantissa become a float16 code (biases 7
///   and 8 against 15: times 2^8 or 2^7 afterwards, exact), the NaN codes the quiet float16 NaN of
///   their sign, which converts to the default NaN of that sign (F16C targets);
/// - FLOAT4E2M1 (16 values) one register permute: the whole table at AVX3, the magnitude at AVX2.
/// FLOAT8E5M2FNUZ (an exponent field of 31 that float16 cannot hold by the same shift; LoadDecoded2
/// rebiases it) and SSE4 keep DecodeF.
template <class F, bool kApplyFactor = true>
HWY_INLINE VF LoadDecoded(const uint8_t* p, size_t n) {
  const DF df;
  const hn::Rebind<uint8_t, DF> d8;
#if QDQ_SIMD_F16C
  const hn::Rebind<uint16_t, DF> d16;
  const hn::Rebind<hwy::float16_t, DF> dh;
  if constexpr (std::is_same_v<F, Float8E4M3FNFormat> || std::is_same_v<F, Float8E4M3FNUZFormat>) {
    const hn::Rebind<int8_t, DF> ds8;
    const hn::Rebind<int16_t, DF> ds16;
    // Sign-extended then shifted: bit 15 and bit 14 are the sign, bits 7..13 the magnitude.
    const auto shifted = hn::ShiftLeft<7>(hn::PromoteTo(ds16, LoadPartial(ds8, reinterpret_cast<const int8_t*>(p), n)));
    auto half = hn::And(hn::BitCast(d16, shifted), hn::Set(d16, 0xBFFF));
    if constexpr (std::is_same_v<F, Float8E4M3FNFormat>) {
      // S.1111.111 is the NaN: S.11111.1000000000 in float16.
      const auto nan = hn::Eq(hn::And(half, hn::Set(d16, 0x3F80)), hn::Set(d16, 0x3F80));
      half = hn::IfThenElse(nan, hn::Add(half, hn::Set(d16, 0x3E80)), half);
    } else {
      // 0x80 (negative zero's place) is the NaN: the negative quiet NaN.
      half = hn::IfThenElse(hn::Eq(half, hn::Set(d16, 0x8000)), hn::Set(d16, 0xFE00), half);
    }
    const VF unscaled = hn::PromoteTo(df, hn::BitCast(dh, half));
    return kApplyFactor ? hn::Mul(unscaled, hn::Set(df, kDecodeFactor<F>)) : unscaled;
  } else if constexpr (std::is_same_v<F, Float8E5M2Format>) {
    // The code is the high byte of the float16 of the same value; NaNs lose their payload.
    auto half = hn::ShiftLeft<8>(hn::PromoteTo(d16, LoadPartial(d8, p, n)));
    const auto nan = hn::Gt(hn::BitCast(hn::RebindToSigned<decltype(d16)>(), hn::And(half, hn::Set(d16, 0x7FFF))),
                            hn::Set(hn::RebindToSigned<decltype(d16)>(), 0x7C00));
    half = hn::IfThenElse(hn::RebindMask(d16, nan), hn::Or(hn::And(half, hn::Set(d16, 0x8000)), hn::Set(d16, 0x7E00)),
                          half);
    return hn::PromoteTo(df, hn::BitCast(dh, half));
  }
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  if constexpr (std::is_same_v<F, Float4E2M1Format>) {
    const DU du;
    const VU code = hn::PromoteTo(du, LoadPartial(d8, p, n));
#if HWY_TARGET == HWY_AVX3
    const __m512 table = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f,
                                        -2.0f, -3.0f, -4.0f, -6.0f);
    return VF{_mm512_permutexvar_ps(code.raw, table)};  // the low 4 bits of each lane index the table
#else
    const __m256 table = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    const VF magnitude{_mm256_permutevar8x32_ps(table, code.raw)};  // the low 3 bits index the table
    return hn::BitCast(df, hn::Or(hn::BitCast(du, magnitude), hn::ShiftLeft<28>(hn::And(code, hn::Set(du, 8u)))));
#endif
  }
#endif
  return DecodeF<F>(hn::PromoteTo(DU(), LoadPartial(d8, p, n)));
}

/// Whether LoadDecoded2<F> decodes two vectors in one pass of 16-bit lanes (the float8 formats
/// that LoadDecoded converts through float16); elsewhere it is LoadDecoded twice.
template <class F>
constexpr bool kDecodesInPairs = QDQ_SIMD_F16C &&
                                 (std::is_same_v<F, Float8E4M3FNFormat> || std::is_same_v<F, Float8E4M3FNUZFormat> ||
                                  std::is_same_v<F, Float8E5M2Format> || std::is_same_v<F, Float8E5M2FNUZFormat>);

/// The 2·Lanes one-byte codes at p as two vectors of float32, `lo` and `hi`: LoadDecoded<F>(p) and
/// LoadDecoded<F>(p + Lanes), with the float16 codes formed once for both (half the operations).
template <class F, bool kApplyFactor = true>
HWY_INLINE void LoadDecoded2(const uint8_t* p, VF& lo, VF& hi) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  if constexpr (kDecodesInPairs<F>) {
#if QDQ_SIMD_F16C
    const hn::Repartition<uint16_t, DF> d16;  // 2·Lanes lanes
    const hn::Repartition<int16_t, DF> ds16;
    const hn::Rebind<hwy::float16_t, DF> dh;  // Lanes lanes
    const hn::Half<decltype(d16)> d16h;
    auto half = hn::Zero(d16);
    if constexpr (std::is_same_v<F, Float8E5M2FNUZFormat>) {
      // Bias 16 against float16's 15: exponent fields E >= 2 become float16's E - 1 (the code shifted
      // into the high byte, less 2^10), E = 0 and 1 float16 subnormals, (4E + M) · 2^-17, the code
      // shifted by 7. Of the two candidates the right one is the larger (the subtraction saturating
      // at zero), so one maximum picks it. 0x80 (negative zero's place) is the NaN.
      const hn::Rebind<uint8_t, decltype(d16)> d8;
      const auto high = hn::ShiftLeft<8>(hn::PromoteTo(d16, hn::LoadU(d8, p)));
      const auto magnitude = hn::And(high, hn::Set(d16, 0x7FFF));
      const auto rebiased = hn::Max(hn::SaturatedSub(magnitude, hn::Set(d16, 0x0400)), hn::ShiftRight<1>(magnitude));
      half = hn::Or(rebiased, hn::Xor(high, magnitude));
      half = hn::IfThenElse(hn::Eq(half, hn::Set(d16, 0x8000)), hn::Set(d16, 0xFE00), half);
    } else if constexpr (std::is_same_v<F, Float8E5M2Format>) {
      // As LoadDecoded: the code is the high byte of the float16 of the same value.
      const hn::Rebind<uint8_t, decltype(d16)> d8;
      half = hn::ShiftLeft<8>(hn::PromoteTo(d16, hn::LoadU(d8, p)));
      const auto nan = hn::Gt(hn::BitCast(ds16, hn::And(half, hn::Set(d16, 0x7FFF))), hn::Set(ds16, 0x7C00));
      half = hn::IfThenElse(hn::RebindMask(d16, nan), hn::Or(hn::And(half, hn::Set(d16, 0x8000)), hn::Set(d16, 0x7E00)),
                            half);
    } else {
      // As LoadDecoded: sign-extended then shifted, the float16 code of the value / 2^8 (2^7 for FNUZ).
      const hn::Rebind<int8_t, decltype(ds16)> ds8;
      const auto shifted = hn::ShiftLeft<7>(hn::PromoteTo(ds16, hn::LoadU(ds8, reinterpret_cast<const int8_t*>(p))));
      half = hn::And(hn::BitCast(d16, shifted), hn::Set(d16, 0xBFFF));
      if constexpr (std::is_same_v<F, Float8E4M3FNFormat>) {
        const auto nan = hn::Eq(hn::And(half, hn::Set(d16, 0x3F80)), hn::Set(d16, 0x3F80));
        half = hn::IfThenElse(nan, hn::Add(half, hn::Set(d16, 0x3E80)), half);
      } else {
        half = hn::IfThenElse(hn::Eq(half, hn::Set(d16, 0x8000)), hn::Set(d16, 0xFE00), half);
      }
    }
    lo = hn::PromoteTo(df, hn::BitCast(dh, hn::LowerHalf(d16h, half)));
    hi = hn::PromoteTo(df, hn::BitCast(dh, hn::UpperHalf(d16h, half)));
    if constexpr (kApplyFactor && kDecodeFactor<F> != 1.0f) {
      lo = hn::Mul(lo, hn::Set(df, kDecodeFactor<F>));
      hi = hn::Mul(hi, hn::Set(df, kDecodeFactor<F>));
    }
    return;
#endif
  }
  lo = LoadDecoded<F, kApplyFactor>(p, lanes);
  hi = LoadDecoded<F, kApplyFactor>(p + lanes, lanes);
}

/// Whether LoadDecoded4<F> forms the float16 codes of its four vectors in one pass over their
/// bytes (AVX2: the four float8 formats; AVX3: FLOAT8E5M2FNUZ); elsewhere it is LoadDecoded2 twice.
/// On AVX3, whose 16-bit lanes select with mask registers, the byte pass (and the permutation it
/// needs there) measured on Zen 4, 64 Ki elements to float32: FLOAT8E5M2FNUZ 1.075x, FLOAT8E5M2
/// 0.99-1.02x, FLOAT8E4M3FNUZ 0.97-0.98x, FLOAT8E4M3FN 0.93-0.94x (blocked 0.92-0.96x).
template <class F>
constexpr bool kDecodesInBytes = kDecodesInPairs<F> &&
                                 (HWY_TARGET == HWY_AVX2 ||
                                  (HWY_TARGET == HWY_AVX3 && std::is_same_v<F, Float8E5M2FNUZFormat>));

/// The 4·Lanes one-byte codes at p as four vectors of float32 in memory order: LoadDecoded2<F> of
/// p and of p + 2·Lanes. Where kDecodesInBytes, each float16 code's two bytes are computed on 32
/// codes (AVX3: 64) at once and interleaved: FLOAT8E5M2 takes 7 operations per 32 codes instead of 14, its
/// FNUZ 16 instead of 20 (Zen 3, 64 Ki elements per tensor to float32: 1.20x each), FLOAT8E4M3FN 8
/// instead of 14 (1.14x; blocked 1.06-1.12x), its FNUZ 7 instead of 10 (1.02-1.08x).
template <class F, bool kApplyFactor = true>
HWY_INLINE void LoadDecoded4(const uint8_t* p, VF& d0, VF& d1, VF& d2, VF& d3) {
  const size_t lanes = hn::Lanes(DF());
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3
  if constexpr (kDecodesInBytes<F>) {
    const DF df;
    const hn::Repartition<uint8_t, DF> d8;  // 4·Lanes lanes
    const hn::Repartition<int8_t, DF> ds8;
    const hn::Repartition<uint16_t, DF> d16;
    const hn::Half<decltype(d16)> d16h;
    const hn::Rebind<hwy::float16_t, DF> dh;
#if HWY_TARGET == HWY_AVX3
    // The 64-bit groups of codes in the order 0, 4, 1, 5, 2, 6, 3, 7, so that interleaving within
    // 128-bit blocks below gives codes [0, 32) in the first vector and [32, 64) in the second.
    const auto code = decltype(hn::Zero(d8)){
        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7), hn::LoadU(d8, p).raw)};
#else
    const auto code = hn::LoadU(d8, p);
#endif
    auto high = code;
    auto low = hn::Zero(d8);
    if constexpr (std::is_same_v<F, Float8E5M2FNUZFormat>) {
      // LoadDecoded2's rebias on bytes: the high byte is the larger of the magnitude less 4 (the
      // exponent field less 1, saturating) and the magnitude halved; the low byte the bit that halving
      // shifts out, where the halved magnitude wins (below 8: the subnormal candidate), in its top bit.
      // 0x80 (negative zero's place) is the NaN, the float16 0xFE00.
      const auto magnitude = hn::And(code, hn::Set(d8, 0x7F));
      const auto halved = hn::And(hn::BitCast(d8, hn::ShiftRight<1>(hn::BitCast(d16, magnitude))), hn::Set(d8, 0x7F));
      high = hn::Max(hn::SaturatedSub(magnitude, hn::Set(d8, 4)), halved);
      high = hn::Or(high, hn::And(code, hn::Set(d8, 0x80)));
      high = hn::Or(high, hn::IfThenElseZero(hn::Eq(code, hn::Set(d8, 0x80)), hn::Set(d8, 0x7E)));
      low = hn::IfThenElseZero(hn::Eq(hn::And(magnitude, hn::Set(d8, 0x79)), hn::Set(d8, 1)), hn::Set(d8, 0x80));
    } else if constexpr (std::is_same_v<F, Float8E4M3FNFormat> || std::is_same_v<F, Float8E4M3FNUZFormat>) {
      // LoadDecoded2's code shifted by 7 on bytes: the high byte is the sign and the magnitude halved
      // (the code less the magnitude's half rounded up), the low byte the magnitude's low bit in its
      // top bit (a byte lookup by the magnitude). FLOAT8E4M3FN's NaN (magnitude 0x7F: high 0x3F and
      // low 0x80 so far) becomes the quiet 0x7E of its sign: 0x3F more, and an index of 0xFF, which
      // the lookup gives 0 for. FNUZ's NaN 0x80 becomes the float16 0xFE00.
      const auto magnitude = hn::And(code, hn::Set(d8, 0x7F));
      high = hn::Sub(code, hn::AverageRound(magnitude, hn::Zero(d8)));
      alignas(16) static constexpr uint8_t kOddToTop[16] = {0, 0x80, 0, 0x80, 0, 0x80, 0, 0x80,
                                                            0, 0x80, 0, 0x80, 0, 0x80, 0, 0x80};
      const auto odd_to_top = hn::LoadDup128(d8, kOddToTop);
      if constexpr (std::is_same_v<F, Float8E4M3FNFormat>) {
        const auto nan = hn::VecFromMask(d8, hn::Eq(magnitude, hn::Set(d8, 0x7F)));
        high = hn::Add(high, hn::And(nan, hn::Set(d8, 0x3F)));
        low = hn::TableLookupBytesOr0(odd_to_top, hn::Or(magnitude, nan));
      } else {
        high = hn::Or(high, hn::IfThenElseZero(hn::Eq(code, hn::Set(d8, 0x80)), hn::Set(d8, 0x7E)));
        low = hn::TableLookupBytesOr0(odd_to_top, magnitude);
      }
    } else {
      // The code is the float16's high byte; NaNs (magnitude above 0x7C) become the quiet 0x7E of
      // their sign: the low two bits set, then one taken off.
      const auto nan =
          hn::RebindMask(d8, hn::Gt(hn::BitCast(ds8, hn::And(code, hn::Set(d8, 0x7F))), hn::Set(ds8, int8_t{0x7C})));
      high = hn::Add(hn::Or(code, hn::IfThenElseZero(nan, hn::Set(d8, 3))), hn::VecFromMask(d8, nan));
    }
    // Interleaved within 128-bit blocks. AVX2: the first holds codes [0, 8) and [16, 24), the
    // second [8, 16) and [24, 32). AVX3 (the groups permuted above): the first [0, 32), the second
    // [32, 64).
    const auto first = hn::BitCast(d16, hn::InterleaveLower(d8, low, high));
    const auto second = hn::BitCast(d16, hn::InterleaveUpper(d8, low, high));
    const VF first_lower = hn::PromoteTo(df, hn::BitCast(dh, hn::LowerHalf(d16h, first)));
    const VF first_upper = hn::PromoteTo(df, hn::BitCast(dh, hn::UpperHalf(d16h, first)));
    const VF second_lower = hn::PromoteTo(df, hn::BitCast(dh, hn::LowerHalf(d16h, second)));
    const VF second_upper = hn::PromoteTo(df, hn::BitCast(dh, hn::UpperHalf(d16h, second)));
    constexpr bool kFirstHoldsHalf = HWY_TARGET == HWY_AVX3;  // codes [0, 2·Lanes) in `first`
    d0 = first_lower;
    d1 = kFirstHoldsHalf ? first_upper : second_lower;
    d2 = kFirstHoldsHalf ? second_lower : first_upper;
    d3 = second_upper;
    if constexpr (kApplyFactor && kDecodeFactor<F> != 1.0f) {
      const VF factor = hn::Set(df, kDecodeFactor<F>);
      d0 = hn::Mul(d0, factor);
      d1 = hn::Mul(d1, factor);
      d2 = hn::Mul(d2, factor);
      d3 = hn::Mul(d3, factor);
    }
    return;
  }
#endif
  LoadDecoded2<F, kApplyFactor>(p, d0, d1);
  LoadDecoded2<F, kApplyFactor>(p + 2 * lanes, d2, d3);
}

/// FLOAT8E8M0 codes (low 8 bits of u32 lanes) as float32, exactly as decode_e8m0: code e is 2^(e − 127),
/// the float32 with exponent field e; 0x00 is 2^-127 (the subnormal 0x00400000); 0xFF is the NaN
/// 0x7FC00000.
HWY_INLINE VF DecodeE8M0(VU code) {
  const DU du;
  code = hn::And(code, hn::Set(du, 0xFFu));
  VU bits = hn::ShiftLeft<23>(code);
  bits = hn::IfThenElse(hn::Eq(code, hn::Zero(du)), hn::Set(du, 0x00400000u), bits);
  bits = hn::IfThenElse(hn::Eq(code, hn::Set(du, 0xFFu)), hn::Set(du, 0x7FC00000u), bits);
  return hn::BitCast(DF(), bits);
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_CONVERT_INL_H_
