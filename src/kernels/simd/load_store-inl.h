// Loads of x, scales and zero points as float32/int32 lanes, and stores of int32 lanes as 8- and
// 16-bit outputs (saturating where the instruction set packs with saturation).
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_LOAD_STORE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_LOAD_STORE_INL_H_
#undef QDQ_SIMD_LOAD_STORE_INL_H_
#else
#define QDQ_SIMD_LOAD_STORE_INL_H_
#endif

#include <cstdint>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/simd/convert-inl.h"
#include "kernels/simd/vectors-inl.h"
#include "types/type_traits.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

/// Lanes [0, n) of a float32 or 16-bit MiniFloat (float16, bfloat16) array as exact float32.
template <DataType X>
HWY_INLINE VF LoadFloat(const void* base, int64_t index, size_t n) {
  using Traits = TypeTraits<X>;
  if constexpr (Traits::kKind == TypeKind::kFloat) {
    static_assert(Traits::kBits == 32);
    return LoadPartial(DF(), static_cast<const float*>(base) + index, n);
  } else {
    static_assert(Traits::kKind == TypeKind::kMiniFloat && Traits::kBits == 16);
    return LoadHalf<typename Traits::Format>(static_cast<const uint16_t*>(base) + index, n);
  }
}

/// Lanes [0, n) of a FLOAT8E8M0 array as float32.
HWY_INLINE VF LoadE8M0(const void* base, int64_t index, size_t n) {
  const hn::Rebind<uint8_t, DF> d8;
  return DecodeE8M0(hn::PromoteTo(DU(), LoadPartial(d8, static_cast<const uint8_t*>(base) + index, n)));
}

/// Whether the vector kernels read scales of this type: float32, the 16-bit MiniFloats, FLOAT8E8M0.
constexpr bool IsVectorScaleType(DataType t) {
  const TypeInfo& info = type_info(t);
  return (info.kind == TypeKind::kFloat && info.bits == 32) || (info.kind == TypeKind::kMiniFloat && info.bits == 16) ||
         info.kind == TypeKind::kExponent;
}

/// Scales [index, index + n) of type S (IsVectorScaleType) as float32, exactly.
template <DataType S>
HWY_INLINE VF LoadScaleAsFloat(const void* scale, int64_t index, size_t n) {
  static_assert(IsVectorScaleType(S));
  if constexpr (TypeTraits<S>::kKind == TypeKind::kExponent) {
    return LoadE8M0(scale, index, n);
  } else {
    return LoadFloat<S>(scale, index, n);
  }
}

/// Lanes [0, n) of an 8/16-bit integer array, or of unpacked 2/4-bit values (one per byte, as
/// UnpackCodes<Bits, Signed> writes them: int8 when Signed), as int32.
template <int Bits, bool Signed>
HWY_INLINE VI LoadInt(const void* base, int64_t index, size_t n) {
  const DI di;
  if constexpr (Bits == 16) {
    using T = std::conditional_t<Signed, int16_t, uint16_t>;
    const hn::Rebind<T, DF> d;
    return hn::PromoteTo(di, LoadPartial(d, static_cast<const T*>(base) + index, n));
  } else {
    static_assert(Bits == 8 || Bits == 4 || Bits == 2);
    using T = std::conditional_t<Signed, int8_t, uint8_t>;
    const hn::Rebind<T, DF> d;
    return hn::PromoteTo(di, LoadPartial(d, static_cast<const T*>(base) + index, n));
  }
}

/// Lanes [0, n) of an unpacked code array (one code per byte) as u32.
HWY_INLINE VU LoadCodes(const uint8_t* codes, size_t n) {
  const hn::Rebind<uint8_t, DF> d8;
  return hn::PromoteTo(DU(), LoadPartial(d8, codes, n));
}

/// Stores the low kBits (8 or 16) bits of each i32 lane as int8/int16 (Signed) or uint8/uint16 (values
/// already in that type's range; for 16-bit codes, 0..0xFFFF as unsigned).
template <int kBits, bool Signed>
HWY_INLINE void StoreNarrow(VI v, void* base, int64_t index, size_t n) {
  static_assert(kBits == 8 || kBits == 16, "StoreNarrow stores 8- or 16-bit lanes");
  using Lane = std::conditional_t<Signed, hwy::SignedFromSize<kBits / 8>, hwy::UnsignedFromSize<kBits / 8>>;
  const hn::Rebind<Lane, DF> d;
  StorePartial(d, hn::DemoteTo(d, v), static_cast<Lane*>(base) + index, n);
}

/// Stores 2·Lanes int32 values as 16-bit integers, saturated to int16 (Signed) or uint16.
template <bool Signed>
HWY_INLINE void StoreWords2(VI a, VI b, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = Signed ? _mm256_packs_epi32(a.raw, b.raw) : _mm256_packus_epi32(a.raw, b.raw);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permute4x64_epi64(ab, 0xD8));
#elif HWY_TARGET == HWY_AVX3
  // Per 128-bit block k: a 4k..4k+3, b 4k..4k+3; one qword permute puts a's halves, then b's, in order.
  const __m512i ab = Signed ? _mm512_packs_epi32(a.raw, b.raw) : _mm512_packus_epi32(a.raw, b.raw);
  _mm512_storeu_si512(out, _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), ab));
#elif HWY_TARGET == HWY_SSE4
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   Signed ? _mm_packs_epi32(a.raw, b.raw) : _mm_packus_epi32(a.raw, b.raw));
#else
  const size_t lanes = hn::Lanes(DI());
  StoreNarrow<16, Signed>(a, out, 0, lanes);
  StoreNarrow<16, Signed>(b, out + 2 * lanes, 0, lanes);
#endif
}

#if HWY_TARGET == HWY_AVX3
/// The bytes of four vectors after two levels of packs, which leave a 4k..4k+3, b 4k.., c 4k.. and
/// d 4k.. in 128-bit block k, put in element order by one dword permute.
HWY_INLINE __m512i PackedBytesInOrder(__m512i bytes) {
  return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}
#endif

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
/// x86: stores bytes in the order two levels of packs leave them (a 4k..4k+3, b 4k.., c 4k.., d
/// 4k.. in 128-bit block k) in element order.
HWY_INLINE void StoreBytesInOrder(VI bytes, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(bytes.raw, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
#elif HWY_TARGET == HWY_AVX3
  _mm512_storeu_si512(out, PackedBytesInOrder(bytes.raw));
#else
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), bytes.raw);
#endif
}
#endif

/// Stores 4·Lanes int32 values as bytes, saturated to int8 (Signed) or uint8.
template <bool Signed>
HWY_INLINE void StoreBytes4(VI a, VI b, VI c, VI d, uint8_t* out) {
  // Two levels of saturating packs leave a 4k..4k+3, b 4k.., c 4k.., d 4k.. in 128-bit block k; one
  // dword permute orders them: a quarter of the shuffles of four demotions.
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_packs_epi32(a.raw, b.raw);
  const __m256i cd = _mm256_packs_epi32(c.raw, d.raw);
  StoreBytesInOrder(VI{Signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd)}, out);
#elif HWY_TARGET == HWY_AVX3
  const __m512i ab = _mm512_packs_epi32(a.raw, b.raw);
  const __m512i cd = _mm512_packs_epi32(c.raw, d.raw);
  StoreBytesInOrder(VI{Signed ? _mm512_packs_epi16(ab, cd) : _mm512_packus_epi16(ab, cd)}, out);
#elif HWY_TARGET == HWY_SSE4
  const __m128i ab = _mm_packs_epi32(a.raw, b.raw);
  const __m128i cd = _mm_packs_epi32(c.raw, d.raw);
  StoreBytesInOrder(VI{Signed ? _mm_packs_epi16(ab, cd) : _mm_packus_epi16(ab, cd)}, out);
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

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
/// x86: int32 codes a..d plus their zero points za..zd (each lane within ±255) as bytes saturated to
/// int8 (Signed) or uint8, in the order two levels of packs leave them (StoreBytesInOrder puts them
/// in element order). The zero points are added to the int16-saturated codes with int16 saturation,
/// which no int32 code can overflow: a code beyond int16 stays beyond the byte range after the
/// addition, so saturating twice changes nothing. The zero points take the same packs, so they meet
/// their codes' lanes (one zero point for all four: the compiler hoists its pack).
template <bool Signed>
HWY_INLINE VI PackedBytesPlusZeroPoints(VI a, VI b, VI c, VI d, VI za, VI zb, VI zc, VI zd) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_adds_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(za.raw, zb.raw));
  const __m256i cd = _mm256_adds_epi16(_mm256_packs_epi32(c.raw, d.raw), _mm256_packs_epi32(zc.raw, zd.raw));
  return VI{Signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd)};
#elif HWY_TARGET == HWY_AVX3
  const __m512i ab = _mm512_adds_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(za.raw, zb.raw));
  const __m512i cd = _mm512_adds_epi16(_mm512_packs_epi32(c.raw, d.raw), _mm512_packs_epi32(zc.raw, zd.raw));
  return VI{Signed ? _mm512_packs_epi16(ab, cd) : _mm512_packus_epi16(ab, cd)};
#else
  const __m128i ab = _mm_adds_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(za.raw, zb.raw));
  const __m128i cd = _mm_adds_epi16(_mm_packs_epi32(c.raw, d.raw), _mm_packs_epi32(zc.raw, zd.raw));
  return VI{Signed ? _mm_packs_epi16(ab, cd) : _mm_packus_epi16(ab, cd)};
#endif
}

#endif

/// Stores 4·Lanes int32 codes a..d plus their zero points za..zd (each lane within ±255) as bytes,
/// saturated to int8 (Signed) or uint8: the bytes of StoreBytes4(a + za, ...), on x86 without the
/// int32 additions (PackedBytesPlusZeroPoints).
template <bool Signed>
HWY_INLINE void StoreBytes4PlusZeroPoints(VI a, VI b, VI c, VI d, VI za, VI zb, VI zc, VI zd, uint8_t* out) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
  StoreBytesInOrder(PackedBytesPlusZeroPoints<Signed>(a, b, c, d, za, zb, zc, zd), out);
#else
  StoreBytes4<Signed>(hn::Add(a, za), hn::Add(b, zb), hn::Add(c, zc), hn::Add(d, zd), out);
#endif
}

/// Stores 4·Lanes sign-magnitude byte codes: magnitudes a..d (int32 lanes, at most 0xFF) with the
/// sign bits of sa..sd as bit 7, which where kZeroUnsigned a zero magnitude does not take. The signs
/// go through the same saturating packs as the magnitudes (a negative int32 stays negative), so that
/// one AND puts all of them in place: fewer operations than a shift per vector. kCap: a..d are the
/// magnitudes less `base` (from -base, base in [1, 127], to below 2^15), and the magnitudes stored are
/// min(a + base, cap) (cap at most 127 + base), both taken once on the packed bytes: the signed packs
/// keep every value above 127 above cap once the base is added.
#if HWY_TARGET == HWY_AVX2
/// Bit 7 of byte i is the sign bit of float i of sa..sd, in the byte order two packs_epi16 of
/// packs_epi32 pairs give (the stores' order before their permute); the other bits are zero.
HWY_INLINE __m256i PackedSignBits4(VF sa, VF sb, VF sc, VF sd) {
  const __m256i signed_bytes =
      _mm256_packs_epi16(_mm256_packs_epi32(_mm256_castps_si256(sa.raw), _mm256_castps_si256(sb.raw)),
                         _mm256_packs_epi32(_mm256_castps_si256(sc.raw), _mm256_castps_si256(sd.raw)));
  return _mm256_and_si256(signed_bytes, _mm256_set1_epi8(static_cast<char>(0x80)));
}
#elif HWY_TARGET == HWY_AVX3
/// Bit 7 of byte i is the sign bit of float i of sa..sd, in the byte order two packs_epi16 of
/// packs_epi32 pairs give (the stores' order before their permute); the other bits are zero.
HWY_INLINE __m512i PackedSignBits4(VF sa, VF sb, VF sc, VF sd) {
  const __m512i signed_bytes =
      _mm512_packs_epi16(_mm512_packs_epi32(_mm512_castps_si512(sa.raw), _mm512_castps_si512(sb.raw)),
                         _mm512_packs_epi32(_mm512_castps_si512(sc.raw), _mm512_castps_si512(sd.raw)));
  return _mm512_and_si512(signed_bytes, _mm512_set1_epi8(static_cast<char>(0x80)));
}
#elif HWY_TARGET == HWY_SSE4
/// Bit 7 of byte i is the sign bit of float i of sa..sd; the other bits are zero.
HWY_INLINE __m128i PackedSignBits4(VF sa, VF sb, VF sc, VF sd) {
  const __m128i signed_bytes = _mm_packs_epi16(_mm_packs_epi32(_mm_castps_si128(sa.raw), _mm_castps_si128(sb.raw)),
                                               _mm_packs_epi32(_mm_castps_si128(sc.raw), _mm_castps_si128(sd.raw)));
  return _mm_and_si128(signed_bytes, _mm_set1_epi8(static_cast<char>(0x80)));
}
#endif

template <bool kZeroUnsigned, bool kCap = false>
HWY_INLINE void StoreSignedBytes4(VI a, VI b, VI c, VI d, VF sa, VF sb, VF sc, VF sd, uint8_t* out, uint8_t cap = 0xFF,
                                  uint8_t base = 0) {
#if HWY_TARGET == HWY_AVX2
  __m256i codes;
  if constexpr (kCap) {
    codes = _mm256_packs_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw));
    codes = _mm256_min_epu8(_mm256_add_epi8(codes, _mm256_set1_epi8(static_cast<char>(base))),
                            _mm256_set1_epi8(static_cast<char>(cap)));
  } else {
    codes = _mm256_packus_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw));  // as StoreBytes4
  }
  __m256i signs = PackedSignBits4(sa, sb, sc, sd);
  if constexpr (kZeroUnsigned) signs = _mm256_andnot_si256(_mm256_cmpeq_epi8(codes, _mm256_setzero_si256()), signs);
  const __m256i bytes = _mm256_or_si256(codes, signs);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
#elif HWY_TARGET == HWY_AVX3
  __m512i codes;
  if constexpr (kCap) {
    codes = _mm512_packs_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(c.raw, d.raw));
    codes = _mm512_min_epu8(_mm512_add_epi8(codes, _mm512_set1_epi8(static_cast<char>(base))),
                            _mm512_set1_epi8(static_cast<char>(cap)));
  } else {
    codes = _mm512_packus_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(c.raw, d.raw));
  }
  __m512i signs = PackedSignBits4(sa, sb, sc, sd);
  if constexpr (kZeroUnsigned) signs = _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(codes, codes), signs);
  _mm512_storeu_si512(out, PackedBytesInOrder(_mm512_or_si512(codes, signs)));
#elif HWY_TARGET == HWY_SSE4
  __m128i codes;
  if constexpr (kCap) {
    codes = _mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw));
    codes = _mm_min_epu8(_mm_add_epi8(codes, _mm_set1_epi8(static_cast<char>(base))),
                         _mm_set1_epi8(static_cast<char>(cap)));
  } else {
    codes = _mm_packus_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw));
  }
  __m128i signs = PackedSignBits4(sa, sb, sc, sd);
  if constexpr (kZeroUnsigned) signs = _mm_andnot_si128(_mm_cmpeq_epi8(codes, _mm_setzero_si128()), signs);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_or_si128(codes, signs));
#else
  const DI di;
  const auto with_sign = [&](VI m, VF s) {
    if constexpr (kCap) m = hn::Min(hn::Add(m, hn::Set(di, base)), hn::Set(di, cap));
    VI sign = hn::ShiftRight<24>(hn::And(hn::BitCast(di, s), hn::Set(di, static_cast<int32_t>(0x80000000u))));
    sign = hn::And(sign, hn::Set(di, 0x80));
    if constexpr (kZeroUnsigned) sign = hn::IfThenZeroElse(hn::Eq(m, hn::Zero(di)), sign);
    return hn::Or(m, sign);
  };
  StoreBytes4<false>(with_sign(a, sa), with_sign(b, sb), with_sign(c, sc), with_sign(d, sd), out);
#endif
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_LOAD_STORE_INL_H_
