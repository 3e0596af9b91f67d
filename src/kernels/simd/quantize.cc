// Vectorised QuantizeLinear kernels, compiled once per Highway target. Each kernel equals
// quantize_scalar bit for bit: the same two stages (the quotient in the division type P, then the
// output type's rule), evaluated lane-wise with exact vector forms of the scalar operations.
//
// Division: a true IEEE float32 division per lane (the same correctly rounded quotient as the
// scalar kernel), except for power-of-two scales (ExactReciprocal). On the reference machine (Zen 3,
// AVX2) a minimal division loop converts 5.6 G elements/s in L1 and the same loop with a multiply
// 8.9; making a reciprocal exact (a Markstein correction, or a check that no quotient lies within a
// few ulps of a rounding boundary, with a per-vector fallback) costs 5-10 more vector operations per
// vector, as much time as the divider takes, so it is not done. At 64 Mi elements the minimal loop
// reaches the same ~0.8 of the streaming reference with a multiply as with a division.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "types/integer_types.hpp"
#include "kernels/simd/common-inl.h"
#include "kernels/simd/simd_kernels.hpp"

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
  if constexpr (P == T::kFloat16) return round_to<Float16Format>(s);
  if constexpr (P == T::kBFloat16) return round_to<BFloat16Format>(s);
  return static_cast<float>(s);
}

template <T P>
HWY_INLINE VF RoundToP(VF v) {
  if constexpr (P == T::kFloat16) return RoundToF<Float16Format>(v);
  if constexpr (P == T::kBFloat16) return RoundToF<BFloat16Format>(v);
  return v;
}

/// Scales [index, index + n) of type S rounded to P.
template <T S, T P>
HWY_INLINE VF LoadScale(const void* scale, int64_t index, size_t n) {
  if constexpr (S == T::kFloat8E8M0) return RoundToP<P>(LoadE8M0(scale, index, n));
  if constexpr (S == P) return LoadFloat<S>(scale, index, n);
  return RoundToP<P>(LoadFloat<S>(scale, index, n));
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

template <T Y>
HWY_INLINE VU FloatCodes(VF q, bool saturate) {
  if constexpr (Y == T::kFloat8E4M3FN) return EncodeF<Float8E4M3FNFormat>(q, saturate);
  if constexpr (Y == T::kFloat8E4M3FNUZ) return EncodeF<Float8E4M3FNUZFormat>(q, saturate);
  if constexpr (Y == T::kFloat8E5M2) return EncodeF<Float8E5M2Format>(q, saturate);
  if constexpr (Y == T::kFloat8E5M2FNUZ) return EncodeF<Float8E5M2FNUZFormat>(q, saturate);
  return EncodeF<Float4E2M1Format>(q, true);
}

/// Writes n output values. Packed outputs go to a code buffer (one code per byte).
template <T Y>
HWY_INLINE void StoreOut(VI v, void* out, int64_t index, size_t n) {
  constexpr int kBits = OutBits(Y);
  const DI di;
  if constexpr (kBits == 16) {
    StoreInt16<IsSignedOut(Y)>(v, out, index, n);
  } else if constexpr (kBits == 8) {
    StoreInt8<IsSignedOut(Y) && IsIntegerOut(Y)>(v, out, index, n);
  } else {
    StoreInt8<false>(hn::And(v, hn::Set(di, (1 << kBits) - 1)), out, index, n);
  }
}

// ---------------------------------------------------------------------------------------------
// Fast paths for runs that share one scale and zero point (per-tensor, per-axis with inner > 1,
// blocked along the last axis): four whole vectors per iteration, no partial vectors, no
// per-iteration branches, the int32 codes saturated by the packing instructions themselves.

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
  const uint32_t inverse = (bits & 0x80000000u) | ((254u - exponent) << 23);     // ±2^-e
  std::memcpy(reciprocal, &inverse, 4);
  return true;
}

/// Stores 4·Lanes int32 values as bytes, saturated to int8 (Signed) or uint8.
template <bool Signed>
HWY_INLINE void StoreBytes4(VI a, VI b, VI c, VI d, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_packs_epi32(a.raw, b.raw);  // a0-3 b0-3 | a4-7 b4-7 (int16, saturated)
  const __m256i cd = _mm256_packs_epi32(c.raw, d.raw);
  const __m256i bytes = Signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 ...
  const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
#elif HWY_TARGET == HWY_SSE4
  const __m128i ab = _mm_packs_epi32(a.raw, b.raw);
  const __m128i cd = _mm_packs_epi32(c.raw, d.raw);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), Signed ? _mm_packs_epi16(ab, cd) : _mm_packus_epi16(ab, cd));
#else
  const DI di;
  const size_t lanes = hn::Lanes(di);
  const VI lo = hn::Set(di, Signed ? -128 : 0);
  const VI hi = hn::Set(di, Signed ? 127 : 255);
  using B = std::conditional_t<Signed, int8_t, uint8_t>;
  const hn::Rebind<B, DF> d8;
  B* o = reinterpret_cast<B*>(out);
  hn::StoreU(hn::DemoteTo(d8, hn::Min(hn::Max(a, lo), hi)), d8, o);
  hn::StoreU(hn::DemoteTo(d8, hn::Min(hn::Max(b, lo), hi)), d8, o + lanes);
  hn::StoreU(hn::DemoteTo(d8, hn::Min(hn::Max(c, lo), hi)), d8, o + 2 * lanes);
  hn::StoreU(hn::DemoteTo(d8, hn::Min(hn::Max(d, lo), hi)), d8, o + 3 * lanes);
#endif
}

/// Packs 4·Lanes codes of kBits (2 or 4) bits, int32 lanes already in the output's range, in ONNX
/// layout: the portable form of StoreNibbles4/StoreCrumbs4 (one code per byte, then whole bytes).
template <int kBits>
HWY_INLINE void StorePackedCodes4(VI a, VI b, VI c, VI d, uint8_t* out) {
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(di));
  HWY_ALIGN uint8_t codes[4 * HWY_MAX_BYTES / 4];
  const VI mask = hn::Set(di, (1 << kBits) - 1);
  StoreBytes4<false>(hn::And(a, mask), hn::And(b, mask), hn::And(c, mask), hn::And(d, mask), codes);
  PackWholeBytes(codes, kBits, 4 * lanes * kBits / 8, out);
}

/// Packs 4·Lanes 4-bit codes (int32 lanes already in the output's range) into 2·Lanes bytes, the
/// first code of each pair in the low nibble (ONNX layout).
HWY_INLINE void StoreNibbles4(VI a, VI b, VI c, VI d, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_packs_epi32(a.raw, b.raw);
  const __m256i cd = _mm256_packs_epi32(c.raw, d.raw);
  const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  // Each 16-bit lane holds codes 2k (low byte) and 2k + 1 (high byte): combine them into one byte.
  const __m256i pairs = _mm256_or_si256(_mm256_and_si256(bytes, _mm256_set1_epi16(0x000F)),
                                        _mm256_and_si256(_mm256_srli_epi16(bytes, 4), _mm256_set1_epi16(0x00F0)));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(pairs, pairs), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
#elif HWY_TARGET == HWY_SSE4
  const __m128i bytes = _mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw));
  const __m128i pairs = _mm_or_si128(_mm_and_si128(bytes, _mm_set1_epi16(0x000F)),
                                     _mm_and_si128(_mm_srli_epi16(bytes, 4), _mm_set1_epi16(0x00F0)));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(pairs, pairs));
#else
  StorePackedCodes4<4>(a, b, c, d, out);
#endif
}

/// Packs 4·Lanes 2-bit codes (int32 lanes already in the output's range) into Lanes bytes, the
/// first code of each four in the lowest bits (ONNX layout).
HWY_INLINE void StoreCrumbs4(VI a, VI b, VI c, VI d, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
#if HWY_TARGET == HWY_AVX2
  const __m256i ordered = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw)),
                                                      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  const __m256i bytes = _mm256_and_si256(ordered, _mm256_set1_epi8(3));
  // Each 32-bit lane holds four codes, one per byte: fold them into its low byte.
  const __m256i pairs = _mm256_or_si256(bytes, _mm256_srli_epi16(bytes, 6));  // bytes 0 and 2: c0 | c1 << 2, c2 | c3 << 2
  const __m256i quads = _mm256_or_si256(pairs, _mm256_srli_epi32(pairs, 12));  // byte 0: c0 | c1 << 2 | c2 << 4 | c3 << 6
  const __m256i low_bytes = _mm256_shuffle_epi8(quads, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                                                         -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m256i packed = _mm256_permutevar8x32_epi32(low_bytes, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
#else
  const __m128i bytes = _mm_and_si128(_mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw)), _mm_set1_epi8(3));
  const __m128i pairs = _mm_or_si128(bytes, _mm_srli_epi16(bytes, 6));
  const __m128i quads = _mm_or_si128(pairs, _mm_srli_epi32(pairs, 12));
  const int packed = _mm_cvtsi128_si32(_mm_shuffle_epi8(quads, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
  std::memcpy(out, &packed, 4);
#endif
#else
  StorePackedCodes4<2>(a, b, c, d, out);
#endif
}

// No quantized output depends on a NaN's payload (integers take the minimum, float8 its NaN code,
// FLOAT4E2M1 +6), only on its being a NaN: the quotient path below keeps NaNs NaN and no more.

/// Lanes [0, n) of x from `index` as float32, to be divided. bfloat16 NaNs stay signalling (LoadFloat
/// would quiet them): the division quiets them anyway.
template <T X>
HWY_INLINE VF LoadDividend(const void* x, int64_t index, size_t n) {
  if constexpr (X == T::kBFloat16) {
    const hn::Rebind<uint16_t, DF> d16;
    return hn::BitCast(DF(), hn::ShiftLeft<16>(hn::PromoteTo(DU(), LoadPartial(d16, static_cast<const uint16_t*>(x) + index, n))));
  }
  return LoadFloat<X>(x, index, n);
}

/// A quotient rounded to the division type P. For bfloat16 the plain bit rounding is exact: every
/// NaN quotient has zero low bits (its operands are bfloat16 values — x, and scales rounded by
/// LoadScale — or it is the default NaN).
template <T P>
HWY_INLINE VF RoundQuotient(VF q) {
  if constexpr (P == T::kBFloat16) return hn::BitCast(DF(), hn::And(RoundBitsToBF16(q), hn::Set(DU(), 0xFFFF0000u)));
  return RoundToP<P>(q);
}

/// The quotient of x element `index` in P: x / divisor, or x · divisor when kReciprocal (see
/// ExactReciprocal).
template <T X, T P, bool kReciprocal>
HWY_INLINE VF QuotientAt(const void* x, int64_t index, VF divisor) {
  const VF v = LoadDividend<X>(x, index, hn::Lanes(DF()));
  return RoundQuotient<P>(kReciprocal ? hn::Mul(v, divisor) : hn::Div(v, divisor));
}

/// Where the output of element `at` starts in y (for 2/4-bit y, `at` starts a whole byte).
template <T Y>
HWY_INLINE uint8_t* OutputAt(void* y, int64_t at) {
  constexpr int kBits = OutBits(Y);
  return static_cast<uint8_t*>(y) + (kBits < 8 ? at * kBits / 8 : at * (kBits / 8));
}

/// Quantizes the 4·Lanes elements from `at` with one divisor and zero point into y's layout at
/// `dst` (OutputAt): four whole vectors, no branches, the int32 codes of 8/16-bit types saturated by
/// the packing instructions themselves, 2/4-bit codes packed in registers.
template <T X, T P, T Y, bool kReciprocal>
HWY_INLINE void QuantizeGroup(const QuantizeCall& c, int64_t at, VF divisor, VI zp, VF zpf, uint8_t* dst) {
  constexpr int kBits = OutBits(Y);
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const VF q0 = QuotientAt<X, P, kReciprocal>(c.x, at, divisor);
  const VF q1 = QuotientAt<X, P, kReciprocal>(c.x, at + lanes, divisor);
  const VF q2 = QuotientAt<X, P, kReciprocal>(c.x, at + 2 * lanes, divisor);
  const VF q3 = QuotientAt<X, P, kReciprocal>(c.x, at + 3 * lanes, divisor);
  if constexpr (kBits == 16) {
    StoreWords2<IsSignedOut(Y)>(UnsaturatedCodes(q0, zp), UnsaturatedCodes(q1, zp), dst);
    StoreWords2<IsSignedOut(Y)>(UnsaturatedCodes(q2, zp), UnsaturatedCodes(q3, zp), dst + 4 * lanes);
  } else if constexpr (kBits == 8 && IsIntegerOut(Y)) {
    StoreBytes4<IsSignedOut(Y)>(UnsaturatedCodes(q0, zp), UnsaturatedCodes(q1, zp), UnsaturatedCodes(q2, zp), UnsaturatedCodes(q3, zp), dst);
  } else if constexpr (kBits == 4 && IsIntegerOut(Y)) {
    StoreNibbles4(IntegerCodes<Y>(q0, zp), IntegerCodes<Y>(q1, zp), IntegerCodes<Y>(q2, zp), IntegerCodes<Y>(q3, zp), dst);
  } else if constexpr (kBits == 2) {
    StoreCrumbs4(IntegerCodes<Y>(q0, zp), IntegerCodes<Y>(q1, zp), IntegerCodes<Y>(q2, zp), IntegerCodes<Y>(q3, zp), dst);
  } else if constexpr (Y == T::kFloat4E2M1) {
    // The zero point is added in float32 to the quotient; the codes (0..15) pack like 4-bit integers.
    const bool has_zp = c.zero_point != nullptr;
    const auto code = [&](VF q) { return hn::BitCast(di, FloatCodes<Y>(has_zp ? hn::Add(q, zpf) : q, true)); };
    StoreNibbles4(code(q0), code(q1), code(q2), code(q3), dst);
  } else {
    const auto code = [&](VF q) { return hn::BitCast(di, FloatCodes<Y>(q, c.saturate)); };
    StoreBytes4<false>(code(q0), code(q1), code(q2), code(q3), dst);
  }
}

/// Elements [first, first + count) of a run with one scale and zero point, count a multiple of
/// 4·Lanes; output element first + i goes to out[out_index + i] (a code buffer, one code per byte,
/// for 2/4-bit y).
template <T X, T P, T Y, bool kReciprocal>
HWY_NOINLINE void QuantizeRunFast(const QuantizeCall& c, int64_t first, int64_t count, VF divisor, VI zp, VF zpf, void* out,
                                  int64_t out_index) {
  constexpr int kBits = OutBits(Y);
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  uint8_t* o = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < count; i += 4 * lanes) {
    if constexpr (kBits >= 8) {
      QuantizeGroup<X, P, Y, kReciprocal>(c, first + i, divisor, zp, zpf, o + (out_index + i) * (kBits / 8));
    } else {
      const int64_t at = first + i;
      const VF q0 = QuotientAt<X, P, kReciprocal>(c.x, at, divisor);
      const VF q1 = QuotientAt<X, P, kReciprocal>(c.x, at + lanes, divisor);
      const VF q2 = QuotientAt<X, P, kReciprocal>(c.x, at + 2 * lanes, divisor);
      const VF q3 = QuotientAt<X, P, kReciprocal>(c.x, at + 3 * lanes, divisor);
      VI c0, c1, c2, c3;
      if constexpr (IsIntegerOut(Y)) {
        const VI mask = hn::Set(di, (1 << kBits) - 1);
        c0 = hn::And(IntegerCodes<Y>(q0, zp), mask);
        c1 = hn::And(IntegerCodes<Y>(q1, zp), mask);
        c2 = hn::And(IntegerCodes<Y>(q2, zp), mask);
        c3 = hn::And(IntegerCodes<Y>(q3, zp), mask);
      } else {
        const bool has_zp = c.zero_point != nullptr;
        const auto code = [&](VF q) { return hn::BitCast(di, FloatCodes<Y>(has_zp ? hn::Add(q, zpf) : q, true)); };
        c0 = code(q0);
        c1 = code(q1);
        c2 = code(q2);
        c3 = code(q3);
      }
      StoreBytes4<false>(c0, c1, c2, c3, o + out_index + i);
    }
  }
}

/// Per-tensor 2/4-bit output: elements [first, first + count), count a multiple of 4·Lanes and
/// first a multiple of 4, packed straight into y (no code buffer).
template <T X, T P, T Y, bool kReciprocal>
HWY_NOINLINE void QuantizePackedFast(const QuantizeCall& c, int64_t first, int64_t count, VF divisor, VI zp, VF zpf, void* y) {
  const int64_t group = 4 * static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t i = 0; i < count; i += group) QuantizeGroup<X, P, Y, kReciprocal>(c, first + i, divisor, zp, zpf, OutputAt<Y>(y, first + i));
}

/// Elements [first, first + count) of a run with one scale and zero point (parameter `param`);
/// output element first + i goes to out[out_index + i].
template <T X, T P, T Y>
HWY_INLINE void QuantizeRun(const QuantizeCall& c, int64_t first, int64_t count, int64_t param, void* out, int64_t out_index) {
  const DF df;
  const DI di;
  const size_t lanes = hn::Lanes(df);
  const bool has_zp = c.zero_point != nullptr;
  const VF scale = hn::Set(df, ScalarScale<P>(c, param));
  VI zp = hn::Zero(di);
  VF zpf = hn::Zero(df);
  if (has_zp) {
    if constexpr (IsIntegerOut(Y)) zp = hn::Set(di, static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, param)));
    if constexpr (Y == T::kFloat4E2M1) zpf = hn::Set(df, static_cast<float>(load_real(c.zero_point, T::kFloat4E2M1, param)));
  }
  int64_t i = 0;
  if (count >= 4 * static_cast<int64_t>(lanes)) {
    const int64_t whole = count / (4 * static_cast<int64_t>(lanes)) * (4 * static_cast<int64_t>(lanes));
    float reciprocal;
    if (ExactReciprocal(hn::GetLane(scale), &reciprocal)) {
      QuantizeRunFast<X, P, Y, true>(c, first, whole, hn::Set(df, reciprocal), zp, zpf, out, out_index);
    } else {
      QuantizeRunFast<X, P, Y, false>(c, first, whole, scale, zp, zpf, out, out_index);
    }
    i = whole;
  }
  for (; i < count; i += static_cast<int64_t>(lanes)) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(lanes), count - i));
    const VF q = RoundQuotient<P>(hn::Div(LoadDividend<X>(c.x, first + i, n), scale));
    if constexpr (IsIntegerOut(Y)) {
      StoreOut<Y>(IntegerCodes<Y>(q, zp), out, out_index + i, n);
    } else if constexpr (Y == T::kFloat4E2M1) {
      // The zero point is added in float32 to the quotient (already a float32 value).
      StoreOut<Y>(hn::BitCast(di, FloatCodes<Y>(has_zp ? hn::Add(q, zpf) : q, true)), out, out_index + i, n);
    } else {
      StoreOut<Y>(hn::BitCast(di, FloatCodes<Y>(q, c.saturate)), out, out_index + i, n);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Chunks cut into many segments (blocks along the last axis, per-axis along the last axis, blocked
// along other axes): the parameters are first expanded to one divisor and one zero point per
// element of the chunk, then one flat loop runs over the chunk. A run of 32 elements with its own
// loop would leave the divider idle between runs; the flat loop keeps four divisions in flight.

/// The divisors (in P) and zero points of parameters [first, first + count), a vector at a time
/// (whole vectors: the arrays have a vector of room past the count).
template <T P, T Y>
HWY_INLINE void LoadQuantizeParams(const QuantizeCall& c, int64_t first, int64_t count, float* divisor, int32_t* zero_point,
                                   float* float_zero_point) {
  const DF df;
  const DI di;
  const bool has_zp = c.zero_point != nullptr;
  constexpr bool kPackedZeroPoint = OutBits(Y) < 8;
  HWY_ALIGN uint8_t zp_codes[kPackedZeroPoint ? ExpandedParams::kSize : 1];
  if (kPackedZeroPoint && has_zp) UnpackCodes(static_cast<const uint8_t*>(c.zero_point), OutBits(Y), first, count, zp_codes);
  WithScaleType(c.scale_type, [&](auto scale_type) {
    ForEachVector(count, [&](int64_t k, size_t n) { hn::StoreU(LoadScale<decltype(scale_type)::value, P>(c.scale, first + k, n), df, divisor + k); });
  });
  if constexpr (IsIntegerOut(Y)) {
    if (!has_zp) {
      ForEachVector(count, [&](int64_t k, size_t) { hn::StoreU(hn::Zero(di), di, zero_point + k); });
    } else if constexpr (kPackedZeroPoint) {
      ForEachVector(count, [&](int64_t k, size_t n) { hn::StoreU(LoadInt<OutBits(Y), IsSignedOut(Y)>(zp_codes, k, n), di, zero_point + k); });
    } else {
      ForEachVector(count, [&](int64_t k, size_t n) {
        hn::StoreU(LoadInt<OutBits(Y), IsSignedOut(Y)>(c.zero_point, first + k, n), di, zero_point + k);
      });
    }
  }
  if constexpr (Y == T::kFloat4E2M1) {
    ForEachVector(count, [&](int64_t k, size_t n) {
      hn::StoreU(has_zp ? DecodeF<Float4E2M1Format>(LoadCodes(zp_codes + k, n)) : hn::Zero(df), df, float_zero_point + k);
    });
  }
}

/// Quantizes elements [chunk, chunk + count); element chunk + i goes to out[out_index + i] (a code
/// buffer for 2/4-bit y). divisor(i, n), zero_point(i, n) and float_zero_point(i, n) give the
/// parameters of the n-lane vector at i: loads of expanded parameters, or of parameters in place.
template <T X, T P, T Y, class Divisor, class ZeroPoint, class FloatZeroPoint>
HWY_INLINE void QuantizeLoop(const QuantizeCall& c, int64_t chunk, int64_t count, Divisor&& divisor, ZeroPoint&& zero_point,
                             FloatZeroPoint&& float_zero_point, void* out, int64_t out_index) {
  constexpr int kBits = OutBits(Y);
  const DF df;
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const bool has_zp = c.zero_point != nullptr;
  const auto quotient = [&](int64_t i, size_t n) { return RoundQuotient<P>(hn::Div(LoadDividend<X>(c.x, chunk + i, n), divisor(i, n))); };
  const auto float_code = [&](VF q, int64_t i, size_t n) -> VI {
    if constexpr (Y == T::kFloat4E2M1) {
      return hn::BitCast(di, FloatCodes<Y>(has_zp ? hn::Add(q, float_zero_point(i, n)) : q, true));
    } else {
      return hn::BitCast(di, FloatCodes<Y>(q, c.saturate));
    }
  };
  uint8_t* o = static_cast<uint8_t*>(out) + out_index * (kBits == 16 ? 2 : 1);
  const size_t full = static_cast<size_t>(lanes);
  int64_t i = 0;
  for (; i + 4 * lanes <= count; i += 4 * lanes) {
    const VF q0 = quotient(i, full);
    const VF q1 = quotient(i + lanes, full);
    const VF q2 = quotient(i + 2 * lanes, full);
    const VF q3 = quotient(i + 3 * lanes, full);
    if constexpr (kBits == 16) {
      StoreWords2<IsSignedOut(Y)>(UnsaturatedCodes(q0, zero_point(i, full)), UnsaturatedCodes(q1, zero_point(i + lanes, full)),
                                  o + 2 * i);
      StoreWords2<IsSignedOut(Y)>(UnsaturatedCodes(q2, zero_point(i + 2 * lanes, full)),
                                  UnsaturatedCodes(q3, zero_point(i + 3 * lanes, full)), o + 2 * i + 4 * lanes);
    } else if constexpr (kBits == 8 && IsIntegerOut(Y)) {
      StoreBytes4<IsSignedOut(Y)>(UnsaturatedCodes(q0, zero_point(i, full)), UnsaturatedCodes(q1, zero_point(i + lanes, full)),
                                  UnsaturatedCodes(q2, zero_point(i + 2 * lanes, full)),
                                  UnsaturatedCodes(q3, zero_point(i + 3 * lanes, full)), o + i);
    } else if constexpr (IsIntegerOut(Y)) {
      const VI mask = hn::Set(di, (1 << kBits) - 1);
      const auto code = [&](VF q, int64_t k) { return hn::And(IntegerCodes<Y>(q, zero_point(k, full)), mask); };
      StoreBytes4<false>(code(q0, i), code(q1, i + lanes), code(q2, i + 2 * lanes), code(q3, i + 3 * lanes), o + i);
    } else {
      StoreBytes4<false>(float_code(q0, i, full), float_code(q1, i + lanes, full), float_code(q2, i + 2 * lanes, full),
                         float_code(q3, i + 3 * lanes, full), o + i);
    }
  }
  for (; i < count; i += lanes) {
    const size_t n = static_cast<size_t>(std::min(lanes, count - i));
    const VF q = quotient(i, n);
    if constexpr (IsIntegerOut(Y)) {
      StoreOut<Y>(IntegerCodes<Y>(q, zero_point(i, n)), out, out_index + i, n);
    } else {
      StoreOut<Y>(float_code(q, i, n), out, out_index + i, n);
    }
  }
}

/// QuantizeLoop with expanded parameters.
template <T X, T P, T Y>
HWY_INLINE void QuantizeExpanded(const QuantizeCall& c, int64_t chunk, int64_t count, const ExpandedParams& e, void* out,
                                 int64_t out_index) {
  const DF df;
  const DI di;
  QuantizeLoop<X, P, Y>(
      c, chunk, count, [&](int64_t k, size_t) { return hn::Load(df, e.scale + k); }, [&](int64_t k, size_t) { return hn::Load(di, e.zero_point + k); },
      [&](int64_t k, size_t) { return hn::Load(df, e.float_zero_point + k); }, out, out_index);
}

/// QuantizeLoop over one segment whose parameters step by one through a float32 scale tensor from
/// `param` on (blocked along an axis other than the last, per-axis along the last), dividing in
/// float32: the parameters are read in place instead of being expanded.
template <T X, T Y>
HWY_INLINE void QuantizeInPlace(const QuantizeCall& c, int64_t first, int64_t count, int64_t param, void* out, int64_t out_index) {
  const bool zp_used = IsIntegerOut(Y) || Y == T::kFloat4E2M1;
  const InPlaceParams<OutBits(Y), IsSignedOut(Y) && IsIntegerOut(Y)> p(c.scale, zp_used ? c.zero_point : nullptr, param, count);
  QuantizeLoop<X, T::kFloat, Y>(
      c, first, count, [&](int64_t k, size_t n) { return p.Scale(k, n); }, [&](int64_t k, size_t n) { return p.ZeroPoint(k, n); },
      [&](int64_t k, size_t n) { return p.Float4ZeroPoint(k, n); }, out, out_index);
}

/// Elements [begin, end) (begin a multiple of 4) of any plan, chunk by chunk.
template <T X, T P, T Y>
HWY_INLINE void QuantizeGeneral(const QuantizeCall& c, void* y, int64_t begin, int64_t end) {
  constexpr int kBits = OutBits(Y);
  if constexpr (kBits < 8) {
    // Per-tensor: whole groups of 4 vectors packed in registers; the rest (a multiple-of-4 start)
    // goes through the general path below.
    const int64_t group = 4 * static_cast<int64_t>(hn::Lanes(DF()));
    if (c.plan.granularity == Granularity::kPerTensor && end - begin >= group) {
      const int64_t whole = (end - begin) / group * group;
      const float scale = ScalarScale<P>(c, 0);
      VI zp = hn::Zero(DI());
      VF zpf = hn::Zero(DF());
      if (c.zero_point != nullptr) {
        if constexpr (IsIntegerOut(Y)) zp = hn::Set(DI(), static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, 0)));
        if constexpr (Y == T::kFloat4E2M1) zpf = hn::Set(DF(), static_cast<float>(load_real(c.zero_point, T::kFloat4E2M1, 0)));
      }
      float reciprocal;
      if (ExactReciprocal(scale, &reciprocal)) {
        QuantizePackedFast<X, P, Y, true>(c, begin, whole, hn::Set(DF(), reciprocal), zp, zpf, y);
      } else {
        QuantizePackedFast<X, P, Y, false>(c, begin, whole, hn::Set(DF(), scale), zp, zpf, y);
      }
      begin += whole;
    }
  }
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  SegmentCursor cursor(c.plan, begin);
  // Per-axis runs along a long inner dimension keep their scale in a register; everything else that
  // is not per-tensor goes through expanded parameters.
  const bool expand = c.plan.granularity == Granularity::kBlocked || (c.plan.granularity == Granularity::kPerAxis && c.plan.inner < 256);
  HWY_ALIGN ExpandedParams storage;  // 12 KiB of stack
  ExpandedParams* params = expand ? &storage : nullptr;
  for (int64_t chunk = begin; chunk < end; chunk += kChunk) {
    const int64_t chunk_end = std::min(end, chunk + kChunk);
    if (params != nullptr) {
      // Long segments whose float32 scales step by one (dividing in float32) read their parameters
      // in place; whatever is left of the chunk is expanded.
      int64_t position = chunk;
      if constexpr (P == T::kFloat) {
        position = InPlaceSegments(cursor, c.scale_type == T::kFloat, chunk, chunk_end, [&](int64_t at, const Segment& s) {
          if constexpr (kBits < 8) {
            QuantizeInPlace<X, Y>(c, at, s.count, s.param_index, codes, at - chunk);
          } else {
            QuantizeInPlace<X, Y>(c, at, s.count, s.param_index, y, at);
          }
        });
      }
      if (position < chunk_end) {
        ExpandParams<IsIntegerOut(Y), Y == T::kFloat4E2M1>(
            cursor, position, chunk_end, *params, [&](int64_t first, int64_t count, float* divisor, int32_t* zp, float* zpf) {
              LoadQuantizeParams<P, Y>(c, first, count, divisor, zp, zpf);
            });
        if constexpr (kBits < 8) {
          QuantizeExpanded<X, P, Y>(c, position, chunk_end - position, *params, codes, position - chunk);
        } else {
          QuantizeExpanded<X, P, Y>(c, position, chunk_end - position, *params, y, position);
        }
      }
    }
    for (int64_t position = params != nullptr ? chunk_end : chunk; position < chunk_end;) {
      const Segment s = cursor.next(position, chunk_end);
      if constexpr (kBits < 8) {
        QuantizeRun<X, P, Y>(c, position, s.count, s.param_index, codes, position - chunk);
      } else {
        QuantizeRun<X, P, Y>(c, position, s.count, s.param_index, y, position);
      }
      position += s.count;
    }
    if constexpr (kBits < 8) {
      // `chunk` is a multiple of 4, so the chunk starts on a byte boundary.
      const int per_byte = 8 / kBits;
      const int64_t count = chunk_end - chunk;
      const int64_t whole = count / per_byte;
      uint8_t* packed = static_cast<uint8_t*>(y);
      PackWholeBytes(codes, kBits, whole, packed + chunk / per_byte);
      if (whole * per_byte < count) {
        pack_codes(codes + whole * per_byte, kBits, chunk + whole * per_byte, count - whole * per_byte, packed,
                   chunk_end == c.plan.elements);
      }
    }
  }
}

/// Elements [begin, end) of a UniformBlocks plan, begin and end multiples of the block size: block
/// k (elements [k·B, (k + 1)·B)) uses parameter k. The parameters are loaded a vector at a time,
/// then each block is whole groups of QuantizeGroup with its divisor and zero point in registers.
template <T X, T P, T Y>
HWY_INLINE void QuantizeUniformBlocks(const QuantizeCall& c, void* y, int64_t begin, int64_t end) {
  const DF df;
  const DI di;
  const int64_t group = 4 * static_cast<int64_t>(hn::Lanes(df));
  const int64_t block = c.plan.block;
  HWY_ALIGN ExpandedParams params;
  for (int64_t first_block = begin / block; first_block < end / block; first_block += kChunk) {
    const int64_t blocks = std::min<int64_t>(kChunk, end / block - first_block);
    LoadQuantizeParams<P, Y>(c, first_block, blocks, params.scale, params.zero_point, params.float_zero_point);
    for (int64_t k = 0; k < blocks; ++k) {
      const VF divisor = hn::Set(df, params.scale[k]);
      VI zp = hn::Zero(di);
      VF zpf = hn::Zero(df);
      if constexpr (IsIntegerOut(Y)) zp = hn::Set(di, params.zero_point[k]);
      if constexpr (Y == T::kFloat4E2M1) zpf = hn::Set(df, params.float_zero_point[k]);
      const int64_t first = (first_block + k) * block;
      for (int64_t at = first; at < first + block; at += group) {
        QuantizeGroup<X, P, Y, false>(c, at, divisor, zp, zpf, OutputAt<Y>(y, at));
      }
    }
  }
}

template <T X, T P, T Y>
void QuantizeKernelT(const QuantizeCall& c, void* y, int64_t begin, int64_t end) {
  {
    if (UniformBlocks(c.plan, 4 * static_cast<int64_t>(hn::Lanes(DF())))) {
      // Whole blocks in the middle; a partial block at either end of the task goes the general way.
      const int64_t block = c.plan.block;
      const int64_t lo = std::min(end, (begin + block - 1) / block * block);
      const int64_t hi = std::max(lo, end / block * block);
      QuantizeGeneral<X, P, Y>(c, y, begin, lo);
      QuantizeUniformBlocks<X, P, Y>(c, y, lo, hi);
      QuantizeGeneral<X, P, Y>(c, y, hi, end);
      return;
    }
  }
  QuantizeGeneral<X, P, Y>(c, y, begin, end);
}

template <T X, T P>
QuantizeKernel ChooseForY(T y) {
  switch (y) {
    case T::kUint8: return &QuantizeKernelT<X, P, T::kUint8>;
    case T::kInt8: return &QuantizeKernelT<X, P, T::kInt8>;
    case T::kUint16: return &QuantizeKernelT<X, P, T::kUint16>;
    case T::kInt16: return &QuantizeKernelT<X, P, T::kInt16>;
    case T::kUint4: return &QuantizeKernelT<X, P, T::kUint4>;
    case T::kInt4: return &QuantizeKernelT<X, P, T::kInt4>;
    case T::kUint2: return &QuantizeKernelT<X, P, T::kUint2>;
    case T::kInt2: return &QuantizeKernelT<X, P, T::kInt2>;
    case T::kFloat8E4M3FN: return &QuantizeKernelT<X, P, T::kFloat8E4M3FN>;
    case T::kFloat8E4M3FNUZ: return &QuantizeKernelT<X, P, T::kFloat8E4M3FNUZ>;
    case T::kFloat8E5M2: return &QuantizeKernelT<X, P, T::kFloat8E5M2>;
    case T::kFloat8E5M2FNUZ: return &QuantizeKernelT<X, P, T::kFloat8E5M2FNUZ>;
    case T::kFloat4E2M1: return &QuantizeKernelT<X, P, T::kFloat4E2M1>;
    default: return nullptr;
  }
}

}  // namespace

QuantizeKernel ChooseQuantize(const QuantizeCall& c) {
  // FLOAT8E8M0 (MX) scales are powers of two (or NaN): runs sharing one take the exact-reciprocal
  // route where the scale and its inverse are normal floats (codes 1..253), the division otherwise.
  if (c.scale_type != T::kFloat && c.scale_type != T::kFloat16 && c.scale_type != T::kBFloat16 &&
      c.scale_type != T::kFloat8E8M0) {
    return nullptr;
  }
  // A zero point must be of the output type (float8 zero points only select the type).
  if (c.zero_point != nullptr && IsIntegerOut(c.y_type) && c.zero_point_type != c.y_type) return nullptr;
  if (c.zero_point != nullptr && c.y_type == T::kFloat4E2M1 && c.zero_point_type != T::kFloat4E2M1) return nullptr;
  switch (c.x_type) {
    case T::kFloat:
      if (c.division_type == T::kFloat) return ChooseForY<T::kFloat, T::kFloat>(c.y_type);
      return nullptr;
    case T::kFloat16:
      if (c.division_type == T::kFloat) return ChooseForY<T::kFloat16, T::kFloat>(c.y_type);
      if (c.division_type == T::kFloat16) return ChooseForY<T::kFloat16, T::kFloat16>(c.y_type);
      return nullptr;
    case T::kBFloat16:
      if (c.division_type == T::kFloat) return ChooseForY<T::kBFloat16, T::kFloat>(c.y_type);
      if (c.division_type == T::kBFloat16) return ChooseForY<T::kBFloat16, T::kBFloat16>(c.y_type);
      return nullptr;
    default: return nullptr;
  }
}

#else
QuantizeKernel ChooseQuantize(const QuantizeCall&) { return nullptr; }
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

QuantizeKernel quantize_kernel_for_target(int64_t target, const QuantizeCall& call) {
  QuantizeKernel (*const choose)(const QuantizeCall&) = QDQ_SIMD_CHOOSE(target, ChooseQuantize);
  return choose == nullptr ? nullptr : choose(call);
}

}  // namespace qdq::detail::simd
#endif
