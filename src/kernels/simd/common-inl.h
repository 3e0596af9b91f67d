// Per-target SIMD building blocks shared by the vectorised kernels: exact conversions between float32
// and qdq's narrow float formats (bit-identical to types/float_formats.hpp's encode/decode), loads of
// x, scales and zero points as float32/int32 vectors, and whole-byte packing of 2/4-bit codes.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_COMMON_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_COMMON_INL_H_
#undef QDQ_SIMD_COMMON_INL_H_
#else
#define QDQ_SIMD_COMMON_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "types/float_formats.hpp"
#include "plan.hpp"
#include "types/packing.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;

/// Elements per chunk: a multiple of 4 (whole bytes of 2/4-bit data) and of every vector length.
constexpr int64_t kChunk = 1024;

// ---------------------------------------------------------------------------------------------
// Minifloat conversions. F is one of the MiniFloat formats of types/float_formats.hpp.

/// EncodeF for the 8- and 4-bit formats (the float8 types, FLOAT4E2M1), in fewer operations than
/// the general form below: saturation clamps the finite magnitude before rounding (a NaN compares
/// false and stays NaN); overflow, ±inf and NaN then all produce codes above the largest finite one,
/// sorted out by one unsigned minimum and, per format, a select; codes below the smallest normal come
/// from the FPU's own round-to-nearest-even of |v| + 2^k, where 2^k has the format's subnormal
/// spacing as its ulp.
template <class F>
HWY_INLINE VU EncodeNarrow(VF v, bool saturate) {
  static_assert(F::kBits <= 8);
  const DF df;
  const DI di;
  const DU du;
  constexpr int kM = F::kManBits;
  constexpr int kS = 23 - kM;
  constexpr bool kSaturateAlways = F::kSpecials == SpecialValues::kNone;
  const VU bits = hn::BitCast(du, v);
  const VU sign = hn::ShiftRight<31 - F::kExpBits - kM>(hn::And(bits, hn::Set(du, 0x80000000u)));
  VU mag = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  if (saturate || kSaturateAlways) {
    // The largest finite value, as float32 bits: exponent and mantissa of kMaxCode, rebiased.
    constexpr uint32_t kMaxBits = ((F::kMaxCode >> kM) + 127 - F::kBias) << 23 | (F::kMaxCode & F::kManMask) << kS;
    const VF max = hn::BitCast(df, hn::Set(du, kMaxBits));
    const VF magnitude = hn::BitCast(df, mag);
    auto over = hn::Gt(magnitude, max);
    if constexpr (F::kSpecials == SpecialValues::kFnuz) {
      // ±inf becomes the NaN even when saturating: only finite magnitudes are clamped.
      over = hn::And(over, hn::RebindMask(df, hn::Lt(hn::BitCast(di, mag), hn::Set(di, 0x7F800000))));
    }
    mag = hn::BitCast(du, hn::IfThenElse(over, max, magnitude));
  }
  const VU odd = hn::And(hn::ShiftRight<kS>(mag), hn::Set(du, 1u));
  const VU rounded = hn::Add(mag, hn::Add(hn::Set(du, (1u << (kS - 1)) - 1u), odd));
  VU code = hn::Sub(hn::ShiftRight<kS>(rounded), hn::Set(du, static_cast<uint32_t>(127 - F::kBias) << kM));
  // Below the smallest normal (the normal code above wraps around there): spacing 2^(1 - bias - M).
  const VF magic = hn::BitCast(df, hn::Set(du, static_cast<uint32_t>(127 + 1 - F::kBias - kM + 23) << 23));
  const VU tiny_code = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, mag), magic)), hn::BitCast(du, magic));
  const auto tiny = hn::Lt(hn::BitCast(di, mag), hn::Set(di, static_cast<int32_t>(127 + 1 - F::kBias) << 23));
  code = hn::IfThenElse(hn::RebindMask(du, tiny), tiny_code, code);
  if constexpr (F::kSpecials == SpecialValues::kFn) {
    // Overflow (not saturating), ±inf and NaN: the NaN S.1111.111.
    return hn::Or(hn::Min(code, hn::Set(du, F::kMagnitudeMask)), sign);
  } else if constexpr (F::kSpecials == SpecialValues::kIeee) {
    // Overflow (not saturating) and ±inf: ±inf; NaN: the quiet NaN.
    const auto is_nan = hn::Gt(hn::BitCast(di, mag), hn::Set(di, 0x7F800000));
    code = hn::IfThenElse(hn::RebindMask(du, is_nan), hn::Set(du, nan_code<F>(false)), hn::Min(code, hn::Set(du, F::kExpFieldMax << kM)));
    return hn::Or(code, sign);
  } else if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    // Overflow (not saturating), ±inf and NaN: the unsigned NaN 0x80; zero has no sign.
    code = hn::Min(code, hn::Set(du, F::kSignBit));
    const auto unsigned_code = hn::Or(hn::Eq(code, hn::Set(du, F::kSignBit)), hn::Eq(code, hn::Zero(du)));
    return hn::IfThenElse(unsigned_code, code, hn::Or(code, sign));
  } else {
    // FLOAT4E2M1 (clamped above, so only a NaN passes the largest code): NaN is +6, unsigned.
    const auto is_nan = hn::Gt(code, hn::Set(du, F::kMaxCode));
    return hn::IfThenElse(is_nan, hn::Set(du, F::kMaxCode), hn::Or(code, sign));
  }
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
  VI code = hn::BitCast(di, hn::Sub(hn::ShiftRight<kS>(rounded), hn::Set(du, static_cast<uint32_t>(127 - F::kBias) << kM)));
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
    const auto special = hn::RebindMask(du, hn::Gt(hn::BitCast(di, magc), hn::Set(di, static_cast<int32_t>(F::kExpFieldMax << kM) - 1)));
    const auto has_man = hn::RebindMask(du, hn::Gt(hn::BitCast(di, man), hn::Zero(di)));
    // float16/bfloat16 NaNs keep their payload (made quiet); float8 NaNs decode to the default NaN.
    const VU quiet = hn::IfThenElseZero(has_man, hn::Set(du, 0x00400000u));
    const VU payload = F::kBits == 16 ? hn::ShiftLeft<23 - kM>(man) : hn::Zero(du);
    const VU inf_nan = hn::Or(hn::Set(du, 0x7F800000u), hn::Or(payload, quiet));
    out = hn::IfThenElse(special, inf_nan, out);
  } else if constexpr (F::kSpecials == SpecialValues::kFn) {
    const auto nan = hn::RebindMask(du, hn::Eq(hn::BitCast(di, magc), hn::Set(di, static_cast<int32_t>(F::kMagnitudeMask))));
    out = hn::IfThenElse(nan, hn::Set(du, 0x7FC00000u), out);
  } else if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    // 0x80 (sign bit, zero magnitude) is the NaN: the negative quiet NaN.
    const auto nan = hn::RebindMask(du, hn::Eq(hn::BitCast(di, code), hn::Set(di, static_cast<int32_t>(F::kSignBit))));
    out = hn::IfThenElse(nan, hn::Set(du, 0x7FC00000u), out);
  }
  return hn::BitCast(df, hn::Or(out, sign));
}

/// Each lane rounded to an int32 in the current rounding mode (nearest even unless the caller
/// changed it, as for the division itself), for lanes known to lie within ±2^31: the bare
/// conversion instruction, without the out-of-range fix-up of Highway's NearestInt.
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

// ---------------------------------------------------------------------------------------------
// Loads. `n` is the number of valid lanes (1..Lanes); partial vectors are zero-padded through a
// stack buffer so that nothing is read past the caller's data.

template <class T, class D>
HWY_INLINE hn::Vec<D> LoadPartial(D d, const T* p, size_t n) {
  if (n == hn::Lanes(d)) return hn::LoadU(d, p);
  HWY_ALIGN T buffer[HWY_MAX_BYTES / sizeof(T)] = {};
  std::memcpy(buffer, p, n * sizeof(T));
  return hn::Load(d, buffer);
}

template <class T, class D>
HWY_INLINE void StorePartial(D d, hn::Vec<D> v, T* p, size_t n) {
  if (n == hn::Lanes(d)) {
    hn::StoreU(v, d, p);
    return;
  }
  HWY_ALIGN T buffer[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(v, d, buffer);
  std::memcpy(p, buffer, n * sizeof(T));
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
    const auto nan = hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000)));
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

/// The float32 bits of v rounded to nearest even at bit 16: the high half is v's bfloat16 code, the
/// low half is left over. Right for every v that is not a NaN (a carry moves into the exponent, up to
/// ±inf, never into the sign). A NaN whose low 16 bits are zero — the result of any arithmetic on
/// NaNs that came from bfloat16 or float8 codes, and the default NaN — keeps its high half, which is
/// then its quiet bfloat16 code; other NaNs may come out as ±inf or the other sign's NaN, so callers
/// either know their NaNs are of that kind or do not care about the result for NaN lanes.
HWY_INLINE VU RoundBitsToBF16(VF v) {
  const DU du;
  const VU bits = hn::BitCast(du, v);
  const VU odd = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  return hn::Add(bits, hn::Add(hn::Set(du, 0x7FFFu), odd));
}

/// The float16/bfloat16 codes of v (round to nearest even, overflow to ±inf), in the low 16 bits of
/// u32 lanes: EncodeF<F>(v, false) for every v that is not a signalling NaN.
template <class F>
HWY_INLINE VU EncodeHalf(VF v) {
  const DU du;
  if constexpr (std::is_same_v<F, BFloat16Format>) {
    const DI di;
    const VU bits = hn::BitCast(du, v);
    const VU rounded = hn::ShiftRight<16>(RoundBitsToBF16(v));
    const auto nan = hn::RebindMask(du, hn::Gt(hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000)));
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

/// Lanes [0, n) of a float32/float16/bfloat16 array as exact float32.
template <DataType X>
HWY_INLINE VF LoadFloat(const void* base, int64_t index, size_t n) {
  const DF df;
  if constexpr (X == DataType::kFloat) {
    return LoadPartial(df, static_cast<const float*>(base) + index, n);
  } else {
    const uint16_t* p = static_cast<const uint16_t*>(base) + index;
    if constexpr (X == DataType::kFloat16) return LoadHalf<Float16Format>(p, n);
    return LoadHalf<BFloat16Format>(p, n);
  }
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

/// Lanes [0, n) of a FLOAT8E8M0 array as float32.
HWY_INLINE VF LoadE8M0(const void* base, int64_t index, size_t n) {
  const hn::Rebind<uint8_t, DF> d8;
  return DecodeE8M0(hn::PromoteTo(DU(), LoadPartial(d8, static_cast<const uint8_t*>(base) + index, n)));
}

/// Lanes [0, n) of an 8/16-bit integer array (or of unpacked 2/4-bit codes, one per byte,
/// sign-extended from `bits` when Signed) as int32.
template <int Bits, bool Signed>
HWY_INLINE VI LoadInt(const void* base, int64_t index, size_t n) {
  const DI di;
  if constexpr (Bits == 16) {
    using T = std::conditional_t<Signed, int16_t, uint16_t>;
    const hn::Rebind<T, DF> d;
    return hn::PromoteTo(di, LoadPartial(d, static_cast<const T*>(base) + index, n));
  } else if constexpr (Bits == 8) {
    using T = std::conditional_t<Signed, int8_t, uint8_t>;
    const hn::Rebind<T, DF> d;
    return hn::PromoteTo(di, LoadPartial(d, static_cast<const T*>(base) + index, n));
  } else {
    const hn::Rebind<uint8_t, DF> d;
    const VI v = hn::PromoteTo(di, LoadPartial(d, static_cast<const uint8_t*>(base) + index, n));
    if constexpr (Signed) return hn::ShiftRight<32 - Bits>(hn::ShiftLeft<32 - Bits>(v));
    return hn::And(v, hn::Set(di, (1 << Bits) - 1));
  }
}

/// Lanes [0, n) of an unpacked code array (one code per byte) as u32.
HWY_INLINE VU LoadCodes(const uint8_t* codes, size_t n) {
  const hn::Rebind<uint8_t, DF> d8;
  return hn::PromoteTo(DU(), LoadPartial(d8, codes, n));
}

/// Stores the low 8 bits of each i32 lane (values already in the 8-bit type's range).
template <bool Signed>
HWY_INLINE void StoreInt8(VI v, void* base, int64_t index, size_t n) {
  if constexpr (Signed) {
    const hn::Rebind<int8_t, DF> d8;
    StorePartial(d8, hn::DemoteTo(d8, v), static_cast<int8_t*>(base) + index, n);
  } else {
    const hn::Rebind<uint8_t, DF> d8;
    StorePartial(d8, hn::DemoteTo(d8, v), static_cast<uint8_t*>(base) + index, n);
  }
}

/// Stores the low 16 bits of each i32 lane (values in the 16-bit type's range; for codes, 0..0xFFFF
/// as unsigned).
template <bool Signed>
HWY_INLINE void StoreInt16(VI v, void* base, int64_t index, size_t n) {
  if constexpr (Signed) {
    const hn::Rebind<int16_t, DF> d16;
    StorePartial(d16, hn::DemoteTo(d16, v), static_cast<int16_t*>(base) + index, n);
  } else {
    const hn::Rebind<uint16_t, DF> d16;
    StorePartial(d16, hn::DemoteTo(d16, v), static_cast<uint16_t*>(base) + index, n);
  }
}

/// Stores 2·Lanes int32 values as 16-bit integers, saturated to int16 (Signed) or uint16.
template <bool Signed>
HWY_INLINE void StoreWords2(VI a, VI b, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = Signed ? _mm256_packs_epi32(a.raw, b.raw) : _mm256_packus_epi32(a.raw, b.raw);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(ab, 0xD8));
#elif HWY_TARGET == HWY_SSE4
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), Signed ? _mm_packs_epi32(a.raw, b.raw) : _mm_packus_epi32(a.raw, b.raw));
#else
  const size_t lanes = hn::Lanes(DI());
  StoreInt16<Signed>(a, out, 0, lanes);
  StoreInt16<Signed>(b, out + 2 * lanes, 0, lanes);
#endif
}

// ---------------------------------------------------------------------------------------------
// Whole-byte packing of 2/4-bit codes (ONNX layout, see types/packing.hpp). These handle complete
// bytes only; partial bytes at the edges go through pack_codes/unpack_codes.

/// Packs `bytes` whole bytes of `bits`-bit codes (one code per byte in `codes`, high bits ignored).
HWY_INLINE void PackWholeBytes(const uint8_t* codes, int bits, int64_t bytes, uint8_t* out) {
  const hn::Full128<uint8_t> d8;
  int64_t b = 0;
  if (bits == 4) {
    const hn::Full128<uint16_t> d16;
    const hn::Full64<uint8_t> d8h;
    const auto mask = hn::Set(d16, 0x000F);
    for (; b + 8 <= bytes; b += 8) {
      const auto v = hn::BitCast(d16, hn::LoadU(d8, codes + 2 * b));
      const auto packed = hn::Or(hn::And(v, mask), hn::ShiftLeft<4>(hn::And(hn::ShiftRight<8>(v), mask)));
      hn::StoreU(hn::DemoteTo(d8h, hn::BitCast(hn::Full128<int16_t>(), packed)), d8h, out + b);
    }
  } else {
    const hn::Full128<uint32_t> d32;
    const hn::Full32<uint8_t> d8q;
    const auto mask = hn::Set(d32, 3u);
    for (; b + 4 <= bytes; b += 4) {
      const auto v = hn::BitCast(d32, hn::LoadU(d8, codes + 4 * b));
      auto packed = hn::And(v, mask);
      packed = hn::Or(packed, hn::ShiftLeft<2>(hn::And(hn::ShiftRight<8>(v), mask)));
      packed = hn::Or(packed, hn::ShiftLeft<4>(hn::And(hn::ShiftRight<16>(v), mask)));
      packed = hn::Or(packed, hn::ShiftLeft<6>(hn::And(hn::ShiftRight<24>(v), mask)));
      hn::StoreU(hn::DemoteTo(d8q, hn::BitCast(hn::Full128<int32_t>(), packed)), d8q, out + b);
    }
  }
  if (b < bytes) {
    const int per_byte = 8 / bits;
    pack_codes(codes + b * per_byte, bits, 0, (bytes - b) * per_byte, out + b, false);
  }
}

/// Unpacks `bytes` whole bytes of `bits`-bit codes into one code per byte (no sign extension).
HWY_INLINE void UnpackWholeBytes(const uint8_t* packed, int bits, int64_t bytes, uint8_t* codes) {
  const hn::Full128<uint8_t> d8;
  int64_t b = 0;
  if (bits == 4) {
    const auto mask = hn::Set(d8, 0x0F);
    for (; b + 16 <= bytes; b += 16) {
      const auto v = hn::LoadU(d8, packed + b);
      const auto lo = hn::And(v, mask);
      const auto hi = hn::And(hn::ShiftRight<4>(v), mask);
      hn::StoreU(hn::InterleaveLower(d8, lo, hi), d8, codes + 2 * b);
      hn::StoreU(hn::InterleaveUpper(d8, lo, hi), d8, codes + 2 * b + 16);
    }
  } else {
    const hn::Full128<uint16_t> d16;
    const auto mask = hn::Set(d8, 0x03);
    for (; b + 16 <= bytes; b += 16) {
      const auto v = hn::LoadU(d8, packed + b);
      const auto c0 = hn::And(v, mask);
      const auto c1 = hn::And(hn::ShiftRight<2>(v), mask);
      const auto c2 = hn::And(hn::ShiftRight<4>(v), mask);
      const auto c3 = hn::ShiftRight<6>(v);
      const auto c01l = hn::BitCast(d16, hn::InterleaveLower(d8, c0, c1));
      const auto c01u = hn::BitCast(d16, hn::InterleaveUpper(d8, c0, c1));
      const auto c23l = hn::BitCast(d16, hn::InterleaveLower(d8, c2, c3));
      const auto c23u = hn::BitCast(d16, hn::InterleaveUpper(d8, c2, c3));
      uint8_t* o = codes + 4 * b;
      hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, c01l, c23l)), d8, o);
      hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, c01l, c23l)), d8, o + 16);
      hn::StoreU(hn::BitCast(d8, hn::InterleaveLower(d16, c01u, c23u)), d8, o + 32);
      hn::StoreU(hn::BitCast(d8, hn::InterleaveUpper(d16, c01u, c23u)), d8, o + 48);
    }
  }
  if (b < bytes) {
    const int per_byte = 8 / bits;
    unpack_codes(packed + b, bits, 0, (bytes - b) * per_byte, codes + b * per_byte);
  }
}

/// Unpacks codes [first, first + count) of a packed 2/4-bit array into one code per byte: the
/// whole bytes vectorised, a partial byte at either end through unpack_codes.
HWY_INLINE void UnpackCodes(const uint8_t* packed, int bits, int64_t first, int64_t count, uint8_t* codes) {
  const int per_byte = 8 / bits;
  const int64_t lead = std::min<int64_t>(count, (per_byte - first % per_byte) % per_byte);
  if (lead > 0) unpack_codes(packed, bits, first, lead, codes);
  const int64_t bytes = (count - lead) / per_byte;
  UnpackWholeBytes(packed + (first + lead) / per_byte, bits, bytes, codes + lead);
  const int64_t done = lead + bytes * per_byte;
  if (done < count) unpack_codes(packed, bits, first + done, count - done, codes + done);
}

/// body(k, n) for the vectors of [0, count): whole vectors first (n is then the constant lane
/// count, so partial-vector branches fold away), then one partial vector if count is not a multiple.
template <class Body>
HWY_INLINE void ForEachVector(int64_t count, Body&& body) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t k = 0;
  for (; k + lanes <= count; k += lanes) body(k, static_cast<size_t>(lanes));
  if (k < count) body(k, static_cast<size_t>(count - k));
}

/// Calls fn(std::integral_constant<DataType, S>{}) for the scale type S of a call (FLOAT, FLOAT16,
/// BFLOAT16 or FLOAT8E8M0): loops over scales then branch on the type once, not per vector.
template <class Fn>
HWY_INLINE void WithScaleType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat16: fn(std::integral_constant<DataType, DataType::kFloat16>{}); break;
    case DataType::kBFloat16: fn(std::integral_constant<DataType, DataType::kBFloat16>{}); break;
    case DataType::kFloat8E8M0: fn(std::integral_constant<DataType, DataType::kFloat8E8M0>{}); break;
    default: fn(std::integral_constant<DataType, DataType::kFloat>{}); break;
  }
}

// ---------------------------------------------------------------------------------------------
// Expanded parameters. Chunks cut into many segments (blocks along the last axis, per-axis along
// the last axis, blocked along other axes) first get one scale and one zero point per element,
// then one flat loop runs over the chunk: a separate loop per 32-element block would leave the
// divider and the pipelines idle between blocks.

/// Per-element scales (divisors, for QuantizeLinear) and zero points of a chunk's elements, with a
/// vector of room past kChunk so that fills may write whole vectors.
struct ExpandedParams {
  static constexpr int64_t kSize = kChunk + HWY_MAX_BYTES / 4;
  HWY_ALIGN float scale[kSize];
  HWY_ALIGN int32_t zero_point[kSize];      // integer types
  HWY_ALIGN float float_zero_point[kSize];  // FLOAT4E2M1
};

/// Segments at least this long whose parameters step by one read them in place rather than
/// expanding them (a segment that covers a whole chunk always does): a copy into ExpandedParams
/// costs as much as the loop that reads it.
constexpr int64_t kInPlaceMin = 256;

/// Calls in_place(position, segment) for the segments at the start of [chunk, chunk_end) that read
/// float32 parameters in place (see kInPlaceMin), moving the cursor past them; returns where the
/// rest of the chunk, to be expanded, starts.
template <class InPlace>
HWY_INLINE int64_t InPlaceSegments(SegmentCursor& cursor, bool float32_scales, int64_t chunk, int64_t chunk_end, InPlace&& in_place) {
  int64_t position = chunk;
  while (float32_scales && position < chunk_end) {
    const Segment s = cursor.peek(position, chunk_end);
    if (s.param_step != 1 || (s.count < kInPlaceMin && s.count != chunk_end - chunk)) break;
    cursor.next(position, chunk_end);
    in_place(position, s);
    position += s.count;
  }
  return position;
}

/// Zero-point codes for calls without zero points, read in place like real ones.
HWY_ALIGN constexpr uint8_t kZeroCodes[2 * kChunk] = {};

/// The parameters of a segment whose float32 scales and zero points (of `kBits` bits, sign-extended
/// when kSigned) step by one from `param` on, read in place: scales and 8/16-bit zero points where
/// they are, 2/4-bit zero points unpacked once (at most kChunk), zeros where zero_point is null.
/// The accessors give the n-lane vector at segment element k, as the loops take them.
template <int kBits, bool kSigned>
class InPlaceParams {
 public:
  InPlaceParams(const void* scale, const void* zero_point, int64_t param, int64_t count)
      : scale_(static_cast<const float*>(scale) + param) {
    if (zero_point == nullptr) {
      zero_point_ = kZeroCodes;
    } else if constexpr (kBits >= 8) {
      zero_point_ = zero_point;
      zero_point_index_ = param;
    } else {
      UnpackCodes(static_cast<const uint8_t*>(zero_point), kBits, param, count, codes_);
      zero_point_ = codes_;
    }
  }
  InPlaceParams(const InPlaceParams&) = delete;
  InPlaceParams& operator=(const InPlaceParams&) = delete;

  VF Scale(int64_t k, size_t n) const { return LoadPartial(DF(), scale_ + k, n); }
  VI ZeroPoint(int64_t k, size_t n) const { return LoadInt<kBits, kSigned>(zero_point_, zero_point_index_ + k, n); }
  VF Float4ZeroPoint(int64_t k, size_t n) const {
    return DecodeF<Float4E2M1Format>(LoadCodes(static_cast<const uint8_t*>(zero_point_) + k, n));
  }

 private:
  const float* scale_;
  const void* zero_point_ = nullptr;
  int64_t zero_point_index_ = 0;
  HWY_ALIGN uint8_t codes_[kBits < 8 ? kChunk : 1];
};

/// Whether a plan is blocked along the last axis (inner == 1) with blocks that tile every row
/// (D a multiple of B) and hold whole groups (B a multiple of `group`), its scales of shape
/// [..., D / B]: then element e uses parameter e / B.
inline bool UniformBlocks(const Plan& plan, int64_t group) {
  return plan.granularity == Granularity::kBlocked && plan.inner == 1 && plan.axis_len % plan.block == 0 && plan.block % group == 0 &&
         plan.param_axis_stride == 1 && plan.param_outer_stride == plan.axis_len / plan.block;
}

/// Fills `e` for elements [chunk, chunk_end), walking the segments with `cursor`: the scales and,
/// as the type needs, integer or float zero points. load(first, count, scale, zero_point,
/// float_zero_point) stores parameters [first, first + count) at those pointers, whole vectors.
/// Step-1 segments load straight into place; runs of step-0 segments with consecutive parameters
/// (blocks along the last axis, short per-axis runs) load theirs a vector at a time, then broadcast
/// each over its segment.
template <bool kIntegerZeroPoint, bool kFloatZeroPoint, class Load>
HWY_INLINE void ExpandParams(SegmentCursor& cursor, int64_t chunk, int64_t chunk_end, ExpandedParams& e, Load&& load) {
  const DF df;
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int32_t counts[kChunk];
  int64_t params[kChunk];
  bool stepped[kChunk];
  int64_t segments = 0;
  for (int64_t position = chunk; position < chunk_end; ++segments) {
    const Segment s = cursor.next(position, chunk_end);
    counts[segments] = static_cast<int32_t>(s.count);
    params[segments] = s.param_index;
    stepped[segments] = s.param_step != 0;
    position += s.count;
  }
  HWY_ALIGN ExpandedParams run;
  int64_t at = 0;
  for (int64_t k = 0; k < segments;) {
    if (stepped[k]) {
      load(params[k], counts[k], e.scale + at, e.zero_point + at, e.float_zero_point + at);
      at += counts[k];
      ++k;
      continue;
    }
    int64_t r = k + 1;
    while (r < segments && !stepped[r] && params[r] == params[r - 1] + 1) ++r;
    load(params[k], r - k, run.scale, run.zero_point, run.float_zero_point);
    for (int64_t j = k; j < r; ++j) {
      const VF scale = hn::Set(df, run.scale[j - k]);
      VI zp = hn::Zero(di);
      VF zpf = hn::Zero(df);
      if constexpr (kIntegerZeroPoint) zp = hn::Set(di, run.zero_point[j - k]);
      if constexpr (kFloatZeroPoint) zpf = hn::Set(df, run.float_zero_point[j - k]);
      // Whole vectors, the last one possibly past the segment (the next segment overwrites it).
      for (int64_t q = 0; q < counts[j]; q += lanes) {
        hn::StoreU(scale, df, e.scale + at + q);
        if constexpr (kIntegerZeroPoint) hn::StoreU(zp, di, e.zero_point + at + q);
        if constexpr (kFloatZeroPoint) hn::StoreU(zpf, df, e.float_zero_point + at + q);
      }
      at += counts[j];
    }
    k = r;
  }
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_COMMON_INL_H_
