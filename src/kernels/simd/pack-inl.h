// The vector forms of sub-byte packing: every 2/4-bit pack and unpack of the SIMD kernels lives here
// (packing.hpp defines the layout and packs the partial bytes at the edges; the unit tests compare
// every form on every target with it). Widths other than 2 and 4 bits do not compile.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_PACK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_PACK_INL_H_
#undef QDQ_SIMD_PACK_INL_H_
#else
#define QDQ_SIMD_PACK_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/simd/load_store-inl.h"
#include "kernels/simd/vectors-inl.h"
#include "types/packing.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

// ---------------------------------------------------------------------------------------------
// Whole-byte packing of 2/4-bit codes (ONNX layout, see types/packing.hpp). These handle complete
// bytes only; partial bytes at the edges go through pack_codes/unpack_codes.

/// The widths that pack: 2 and 4 bits (8-bit codes are stored as they are).
template <int kBits>
constexpr void CheckPackedWidth() {
  static_assert(kBits == 2 || kBits == 4, "only 2- and 4-bit codes are packed");
}

/// Packs `bytes` whole bytes of kBits-bit codes (one code per byte in `codes`, high bits ignored).
template <int kBits>
HWY_INLINE void PackWholeBytes(const uint8_t* codes, int64_t bytes, uint8_t* out) {
  CheckPackedWidth<kBits>();
  const hn::Full128<uint8_t> d8;
  int64_t b = 0;
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
  // pmaddubsw sums each pair of masked codes with weights 1 and 2^kBits into one 16-bit lane (at
  // most 255, no saturation); for 2-bit codes pmaddwd then sums pairs of pairs with weights 1 and 16.
  // The unsigned packs narrow the sums, already bytes, to bytes.
#if HWY_TARGET == HWY_AVX2
  const __m256i mask = _mm256_set1_epi8(static_cast<char>((1 << kBits) - 1));
  const __m256i pair_weights = _mm256_set1_epi16(static_cast<int16_t>(0x0001 | (1 << kBits) << 8));
  constexpr int64_t kCodesPerStep = 32;
  for (; b + kCodesPerStep * kBits / 8 <= bytes; b += kCodesPerStep * kBits / 8) {
    const __m256i v =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + b * 8 / kBits)), mask);
    const __m256i pairs = _mm256_maddubs_epi16(v, pair_weights);
    if constexpr (kBits == 4) {
      // Each 128-bit half narrows to 8 bytes; the two halves' bytes are qwords 0 and 2.
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(pairs, pairs), 0x08);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b), _mm256_castsi256_si128(packed));
    } else {
      const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00100001));
      const __m256i words = _mm256_packus_epi32(quads, quads);
      // Each 128-bit half narrows to 4 bytes; the two halves' bytes are dwords 0 and 4.
      const __m256i packed =
          _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words), _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + b), _mm256_castsi256_si128(packed));
    }
  }
#else
  const __m128i mask = _mm_set1_epi8(static_cast<char>((1 << kBits) - 1));
  const __m128i pair_weights = _mm_set1_epi16(static_cast<int16_t>(0x0001 | (1 << kBits) << 8));
  constexpr int64_t kCodesPerStep = 16;
  for (; b + kCodesPerStep * kBits / 8 <= bytes; b += kCodesPerStep * kBits / 8) {
    const __m128i v = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + b * 8 / kBits)), mask);
    const __m128i pairs = _mm_maddubs_epi16(v, pair_weights);
    if constexpr (kBits == 4) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + b), _mm_packus_epi16(pairs, pairs));
    } else {
      const __m128i quads = _mm_madd_epi16(pairs, _mm_set1_epi32(0x00100001));
      const __m128i words = _mm_packus_epi32(quads, quads);
      const int packed = _mm_cvtsi128_si32(_mm_packus_epi16(words, words));
      std::memcpy(out + b, &packed, 4);
    }
  }
#endif
#elif HWY_TARGET == HWY_AVX3
  // As on AVX2, with truncating narrowings in place of the packs and their permutes.
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << kBits) - 1));
  const __m512i pair_weights = _mm512_set1_epi16(static_cast<int16_t>(0x0001 | (1 << kBits) << 8));
  constexpr int64_t kCodesPerStep = 64;
  for (; b + kCodesPerStep * kBits / 8 <= bytes; b += kCodesPerStep * kBits / 8) {
    const __m512i v = _mm512_and_si512(_mm512_loadu_si512(codes + b * 8 / kBits), mask);
    const __m512i pairs = _mm512_maddubs_epi16(v, pair_weights);
    if constexpr (kBits == 4) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b), _mm512_cvtepi16_epi8(pairs));
    } else {
      const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00100001));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + b), _mm512_cvtepi32_epi8(quads));
    }
  }
#endif
  if constexpr (kBits == 4) {
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
    constexpr int kPerByte = 8 / kBits;
    pack_codes(codes + b * kPerByte, kBits, 0, (bytes - b) * kPerByte, out + b, false);
  }
}

/// unpack_codes, then (kSigned) each code's two's-complement value as an int8 byte, less `offset`
/// (modulo 2^8).
template <int kBits, bool kSigned>
HWY_INLINE void UnpackCodesScalar(const uint8_t* packed, int64_t first, int64_t count, uint8_t* codes,
                                  uint8_t offset = 0, const uint8_t* less = nullptr) {
  unpack_codes(packed, kBits, first, count, codes);
  constexpr int kHalf = 1 << (kBits - 1);
  for (int64_t i = 0; i < count; ++i) {
    const int value = kSigned ? (codes[i] ^ kHalf) - kHalf : codes[i];
    codes[i] = static_cast<uint8_t>(value - offset - (less != nullptr ? less[i] : 0));
  }
}

/// The values of 2/4-bit codes 0..15 less `offset` as bytes (modulo 2^8), as a byte-shuffle table:
/// int8 sign-extended when kSigned, the codes themselves otherwise.
template <int kBits, bool kSigned>
HWY_INLINE hn::Vec<hn::Full128<uint8_t>> CodeValueTable(uint8_t offset) {
  const hn::Full128<uint8_t> d8;
  auto values = hn::Iota(d8, 0);
  if constexpr (kSigned) {
    const auto half = hn::Set(d8, static_cast<uint8_t>(1u << (kBits - 1)));
    values = hn::Sub(hn::Xor(values, half), half);  // modulo 256: the int8 bytes of the values
  }
  return hn::Sub(values, hn::Set(d8, offset));
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
/// The fewest packed bytes that UnpackWholeBytes unpacks at full width: shorter runs (a row of
/// 256 codes blocked along axis 0, say) measured 0.95x with it on AVX2.
constexpr int64_t kWideUnpackBytes = 256;

#if HWY_TARGET == HWY_AVX3
using WideBytes = __m512i;
/// Quadwords of two vectors of 128-bit blocks a and b, block by block: a0 b0 a1 b1 (front), a2 b2 a3 b3 (back).
HWY_INLINE __m512i InterleaveBlocksFront(__m512i a, __m512i b) {
  return _mm512_permutex2var_epi64(a, _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), b);
}
HWY_INLINE __m512i InterleaveBlocksBack(__m512i a, __m512i b) {
  return _mm512_permutex2var_epi64(a, _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), b);
}
#else
using WideBytes = __m256i;
#endif

/// The kBits-bit codes of one WideBytes vector of packed bytes: c[k] holds bits [k·kBits, (k+1)·kBits)
/// of each byte, through `table` where kLookup (UnpackWholeBytes' value_of).
template <int kBits, bool kLookup>
HWY_INLINE void WideCodes(const uint8_t* packed, __m128i table, WideBytes* c) {
#if HWY_TARGET == HWY_AVX3
  const __m512i v = _mm512_loadu_si512(packed);
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << kBits) - 1));
  for (int k = 0; k < 8 / kBits; ++k) {
    c[k] = _mm512_and_si512(_mm512_srli_epi16(v, k * kBits), mask);
    if constexpr (kLookup) c[k] = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(table), c[k]);
  }
#else
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed));
  const __m256i mask = _mm256_set1_epi8(static_cast<char>((1 << kBits) - 1));
  for (int k = 0; k < 8 / kBits; ++k) {
    c[k] = _mm256_and_si256(_mm256_srli_epi16(v, k * kBits), mask);
    if constexpr (kLookup) c[k] = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), c[k]);
  }
#endif
}

/// Stores the wide vector v of unpacked codes at codes + at, less (kLessRow) the bytes at less + at.
template <bool kLessRow>
HWY_INLINE void StoreWideCodes(WideBytes v, uint8_t* codes, const uint8_t* less, int64_t at) {
#if HWY_TARGET == HWY_AVX3
  if constexpr (kLessRow) v = _mm512_sub_epi8(v, _mm512_loadu_si512(less + at));
  _mm512_storeu_si512(codes + at, v);
#else
  if constexpr (kLessRow) v = _mm256_sub_epi8(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(less + at)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(codes + at), v);
#endif
}

/// UnpackWholeBytes' loop at the target's full width, over the whole vectors of `bytes` (kLookup:
/// each code through `table`, as there): per 128-bit block the codes of each byte interleaved as
/// there, then the blocks' parts put back in order: for 4-bit codes each block's two halves, one
/// permute per vector of codes; for 2-bit codes a 4 x 4 transpose of the blocks' quarters (AVX2:
/// 2 x 2, twice); kLessRow: less `less`, as UnpackWholeBytes. Returns the bytes done. (The 128-bit
/// loop alone took about a third of a blocked int4 -> float16 dequantize in cache on the Intel Xeon.)
template <int kBits, bool kLookup, bool kLessRow = false>
HWY_INLINE int64_t UnpackWholeBytesWide(const uint8_t* packed, int64_t bytes, uint8_t* codes, __m128i table,
                                        const uint8_t* less = nullptr) {
  constexpr int64_t kStep = sizeof(WideBytes);
  int64_t b = 0;
  for (; b + kStep <= bytes; b += kStep) {
    WideBytes c[8 / kBits];
    WideCodes<kBits, kLookup>(packed + b, table, c);
    if constexpr (kBits == 4) {
#if HWY_TARGET == HWY_AVX3
      const __m512i l = _mm512_unpacklo_epi8(c[0], c[1]);
      const __m512i u = _mm512_unpackhi_epi8(c[0], c[1]);
      StoreWideCodes<kLessRow>(InterleaveBlocksFront(l, u), codes, less, 2 * b);
      StoreWideCodes<kLessRow>(InterleaveBlocksBack(l, u), codes, less, 2 * b + 64);
#else
      const __m256i l = _mm256_unpacklo_epi8(c[0], c[1]);
      const __m256i u = _mm256_unpackhi_epi8(c[0], c[1]);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(l, u, 0x20), codes, less, 2 * b);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(l, u, 0x31), codes, less, 2 * b + 32);
#endif
    } else {
      const int64_t o = 4 * b;
#if HWY_TARGET == HWY_AVX3
      const __m512i c01l = _mm512_unpacklo_epi8(c[0], c[1]), c01u = _mm512_unpackhi_epi8(c[0], c[1]);
      const __m512i c23l = _mm512_unpacklo_epi8(c[2], c[3]), c23u = _mm512_unpackhi_epi8(c[2], c[3]);
      // q[k], block j: quarter k of block j's 64 codes.
      const __m512i q0 = _mm512_unpacklo_epi16(c01l, c23l), q1 = _mm512_unpackhi_epi16(c01l, c23l);
      const __m512i q2 = _mm512_unpacklo_epi16(c01u, c23u), q3 = _mm512_unpackhi_epi16(c01u, c23u);
      const __m512i a = InterleaveBlocksFront(q0, q1);                                  // q0.0 q1.0 q0.1 q1.1
      const __m512i e = InterleaveBlocksFront(q2, q3);                                  // q2.0 q3.0 q2.1 q3.1
      const __m512i f = InterleaveBlocksBack(q0, q1);                                   // q0.2 q1.2 q0.3 q1.3
      const __m512i g = InterleaveBlocksBack(q2, q3);                                   // q2.2 q3.2 q2.3 q3.3
      StoreWideCodes<kLessRow>(_mm512_shuffle_i64x2(a, e, 0x44), codes, less, o);       // a.0 a.1 e.0 e.1
      StoreWideCodes<kLessRow>(_mm512_shuffle_i64x2(a, e, 0xEE), codes, less, o + 64);  // a.2 a.3 e.2 e.3
      StoreWideCodes<kLessRow>(_mm512_shuffle_i64x2(f, g, 0x44), codes, less, o + 128);
      StoreWideCodes<kLessRow>(_mm512_shuffle_i64x2(f, g, 0xEE), codes, less, o + 192);
#else
      const __m256i c01l = _mm256_unpacklo_epi8(c[0], c[1]), c01u = _mm256_unpackhi_epi8(c[0], c[1]);
      const __m256i c23l = _mm256_unpacklo_epi8(c[2], c[3]), c23u = _mm256_unpackhi_epi8(c[2], c[3]);
      const __m256i q0 = _mm256_unpacklo_epi16(c01l, c23l), q1 = _mm256_unpackhi_epi16(c01l, c23l);
      const __m256i q2 = _mm256_unpacklo_epi16(c01u, c23u), q3 = _mm256_unpackhi_epi16(c01u, c23u);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(q0, q1, 0x20), codes, less, o);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(q2, q3, 0x20), codes, less, o + 32);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(q0, q1, 0x31), codes, less, o + 64);
      StoreWideCodes<kLessRow>(_mm256_permute2x128_si256(q2, q3, 0x31), codes, less, o + 96);
#endif
    }
  }
  return b;
}
#endif

/// Unpacks `bytes` whole bytes of kBits-bit codes into one value per byte: the code (kSigned false)
/// or its two's-complement value as int8 (kSigned), which LoadInt<kBits, kSigned> widens. With
/// kOffset, each value less `offset` (a zero point: the difference of two 2/4-bit values is an int8,
/// which LoadInt<8, true> widens), at no cost to signed codes and one byte shuffle to unsigned ones.
///
/// With kLessRow, each value also less the byte at the same index of `less` (a row of unpacked zero
/// points, one per value: blocks along an outer axis), in the same pass.
template <int kBits, bool kSigned = false, bool kOffset = false, bool kLessRow = false>
HWY_INLINE void UnpackWholeBytes(const uint8_t* packed, int64_t bytes, uint8_t* codes, uint8_t offset = 0,
                                 const uint8_t* less = nullptr) {
  CheckPackedWidth<kBits>();
  const hn::Full128<uint8_t> d8;
  if constexpr (!kOffset) offset = 0;
  const auto store = [&](auto v, int64_t at) QDQ_INLINE_LAMBDA {
    if constexpr (kLessRow) v = hn::Sub(v, hn::LoadU(d8, less + at));
    hn::StoreU(v, d8, codes + at);
  };
  // Signed codes take one byte shuffle each (every index is below 16): their int8 values.
  const auto value_of = [table = CodeValueTable<kBits, kSigned>(offset)](auto code) QDQ_INLINE_LAMBDA {
    if constexpr (kSigned || kOffset) return hn::TableLookupBytes(table, code);
    return code;
  };
  int64_t b = 0;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  constexpr bool kLookup = kSigned || kOffset;  // value_of's lookup
  if (bytes >= kWideUnpackBytes) {
    b = UnpackWholeBytesWide<kBits, kLookup, kLessRow>(packed, bytes, codes, CodeValueTable<kBits, kSigned>(offset).raw,
                                                       less);
  }
#endif
  if constexpr (kBits == 4) {
    const auto mask = hn::Set(d8, 0x0F);
    for (; b + 16 <= bytes; b += 16) {
      const auto v = hn::LoadU(d8, packed + b);
      const auto lo = value_of(hn::And(v, mask));
      const auto hi = value_of(hn::And(hn::ShiftRight<4>(v), mask));
      store(hn::InterleaveLower(d8, lo, hi), 2 * b);
      store(hn::InterleaveUpper(d8, lo, hi), 2 * b + 16);
    }
  } else {
    const hn::Full128<uint16_t> d16;
    const auto mask = hn::Set(d8, 0x03);
    for (; b + 16 <= bytes; b += 16) {
      const auto v = hn::LoadU(d8, packed + b);
      const auto c0 = value_of(hn::And(v, mask));
      const auto c1 = value_of(hn::And(hn::ShiftRight<2>(v), mask));
      const auto c2 = value_of(hn::And(hn::ShiftRight<4>(v), mask));
      const auto c3 = value_of(hn::ShiftRight<6>(v));
      const auto c01l = hn::BitCast(d16, hn::InterleaveLower(d8, c0, c1));
      const auto c01u = hn::BitCast(d16, hn::InterleaveUpper(d8, c0, c1));
      const auto c23l = hn::BitCast(d16, hn::InterleaveLower(d8, c2, c3));
      const auto c23u = hn::BitCast(d16, hn::InterleaveUpper(d8, c2, c3));
      const int64_t o = 4 * b;
      store(hn::BitCast(d8, hn::InterleaveLower(d16, c01l, c23l)), o);
      store(hn::BitCast(d8, hn::InterleaveUpper(d16, c01l, c23l)), o + 16);
      store(hn::BitCast(d8, hn::InterleaveLower(d16, c01u, c23u)), o + 32);
      store(hn::BitCast(d8, hn::InterleaveUpper(d16, c01u, c23u)), o + 48);
    }
  }
  if (b < bytes) {
    constexpr int kPerByte = 8 / kBits;
    UnpackCodesScalar<kBits, kSigned>(packed + b, 0, (bytes - b) * kPerByte, codes + b * kPerByte, offset,
                                      kLessRow ? less + b * kPerByte : nullptr);
  }
}

/// The values of `count` 2/4-bit codes given one per byte (in its low bits; the high bits are not
/// read), as UnpackCodes gives them from packed codes (kOffset: less `offset`): a mask, and for
/// signed codes an exclusive or and a subtraction, per vector at the target's full width.
template <int kBits, bool kSigned = false, bool kOffset = false>
HWY_INLINE void ExpandCodesOnePerByte(const uint8_t* items, int64_t count, uint8_t* codes, uint8_t offset = 0) {
  CheckPackedWidth<kBits>();
  const hn::ScalableTag<uint8_t> d8;
  if constexpr (!kOffset) offset = 0;
  constexpr uint8_t kMask = static_cast<uint8_t>((1u << kBits) - 1);
  constexpr uint8_t kHalf = static_cast<uint8_t>(1u << (kBits - 1));
  // Signed: ((code ^ half) - half) is the int8 value; the offset then comes off the same bytes.
  const auto mask = hn::Set(d8, kMask);
  const auto half = hn::Set(d8, kHalf);
  const auto less = hn::Set(d8, static_cast<uint8_t>((kSigned ? kHalf : 0) + offset));
  const auto value_of = [&](auto item) QDQ_INLINE_LAMBDA {
    auto code = hn::And(item, mask);
    if constexpr (kSigned) code = hn::Xor(code, half);
    if constexpr (kSigned || kOffset) code = hn::Sub(code, less);
    return code;
  };
  const auto lanes = static_cast<int64_t>(hn::Lanes(d8));
  int64_t i = 0;
  for (; i + 2 * lanes <= count; i += 2 * lanes) {
    const auto a = hn::LoadU(d8, items + i);
    const auto b = hn::LoadU(d8, items + i + lanes);
    hn::StoreU(value_of(a), d8, codes + i);
    hn::StoreU(value_of(b), d8, codes + i + lanes);
  }
  for (; i < count; ++i) {
    const uint8_t code = items[i] & kMask;
    const uint8_t value = kSigned ? static_cast<uint8_t>((code ^ kHalf) - kHalf) : code;
    codes[i] = static_cast<uint8_t>(value - offset);
  }
}

/// Unpacks codes [first, first + count) of a packed 2/4-bit array into one value per byte, as
/// UnpackWholeBytes does (kOffset: less `offset`; kLessRow: less less[i], x's codes less a row of
/// unpacked zero points, in the same pass): the whole bytes vectorised, a partial byte at either end
/// through unpack_codes.
template <int kBits, bool kSigned = false, bool kOffset = false, bool kLessRow = false>
HWY_INLINE void UnpackCodes(const uint8_t* packed, int64_t first, int64_t count, uint8_t* codes, uint8_t offset = 0,
                            const uint8_t* less = nullptr) {
  CheckPackedWidth<kBits>();
  constexpr int kPerByte = 8 / kBits;
  if constexpr (!kOffset) offset = 0;
  if constexpr (!kLessRow) less = nullptr;
  const auto less_from = [&](int64_t i) QDQ_INLINE_LAMBDA { return kLessRow ? less + i : nullptr; };
  const int64_t lead = std::min<int64_t>(count, (kPerByte - first % kPerByte) % kPerByte);
  if (lead > 0) UnpackCodesScalar<kBits, kSigned>(packed, first, lead, codes, offset, less);
  const int64_t bytes = (count - lead) / kPerByte;
  UnpackWholeBytes<kBits, kSigned, kOffset, kLessRow>(packed + (first + lead) / kPerByte, bytes, codes + lead, offset,
                                                      less_from(lead));
  const int64_t done = lead + bytes * kPerByte;
  if (done < count)
    UnpackCodesScalar<kBits, kSigned>(packed, first + done, count - done, codes + done, offset, less_from(done));
}

/// Packs 4·Lanes codes of kBits (2 or 4) bits, int32 lanes already in the output's range, in ONNX
/// layout: the portable form of StoreNibbles4/StoreCrumbs4 (one code per byte, then whole bytes).
template <int kBits>
HWY_INLINE void StorePackedCodes4(VI a, VI b, VI c, VI d, uint8_t* out) {
  CheckPackedWidth<kBits>();
  const DI di;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(di));
  HWY_ALIGN uint8_t codes[4 * HWY_MAX_BYTES / 4];
  const VI mask = hn::Set(di, (1 << kBits) - 1);
  StoreBytes4<false>(hn::And(a, mask), hn::And(b, mask), hn::And(c, mask), hn::And(d, mask), codes);
  PackWholeBytes<kBits>(codes, 4 * lanes * kBits / 8, out);
}

#if HWY_TARGET == HWY_AVX2
/// Stores the 4-bit codes of `bytes` (one per byte, below 16, as two packs_epi16 of packs_epi32
/// pairs leave them) as 16 bytes of ONNX layout: the codes put in element order, then each 16-bit
/// lane, codes 2k (low byte) and 2k + 1 (high byte), becomes the byte c[2k] + 16·c[2k + 1] with one
/// multiply-add, and the lanes are packed.
HWY_INLINE void StoreNibbleBytes(__m256i bytes, uint8_t* out) {
  const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  const __m256i pairs = _mm256_maddubs_epi16(ordered, _mm256_set1_epi16(0x1001));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi16(pairs, pairs), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}
#elif HWY_TARGET == HWY_AVX3
/// Stores the 4-bit codes of `bytes` (one per byte, below 16, as two packs_epi16 of packs_epi32
/// pairs leave them) as 32 bytes of ONNX layout: as on AVX2, with one truncating narrowing of the
/// 16-bit lanes in place of the pack and its permute.
HWY_INLINE void StoreNibbleBytes(__m512i bytes, uint8_t* out) {
  const __m512i ordered = PackedBytesInOrder(bytes);
  const __m512i pairs = _mm512_maddubs_epi16(ordered, _mm512_set1_epi16(0x1001));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm512_cvtepi16_epi8(pairs));
}
#elif HWY_TARGET == HWY_SSE4
/// Stores the 4-bit codes of `bytes` (one per byte, below 16) as 8 bytes of ONNX layout.
HWY_INLINE void StoreNibbleBytes(__m128i bytes, uint8_t* out) {
  const __m128i pairs = _mm_maddubs_epi16(bytes, _mm_set1_epi16(0x1001));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(pairs, pairs));
}
#endif

/// Packs 4·Lanes 4-bit codes (int32 lanes already in the output's range) into 2·Lanes bytes, the
/// first code of each pair in the low nibble (ONNX layout).
HWY_INLINE void StoreNibbles4(VI a, VI b, VI c, VI d, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  const __m256i ab = _mm256_packs_epi32(a.raw, b.raw);
  const __m256i cd = _mm256_packs_epi32(c.raw, d.raw);
  const __m256i bytes = _mm256_and_si256(_mm256_packs_epi16(ab, cd), _mm256_set1_epi8(0x0F));
  StoreNibbleBytes(bytes, out);
#elif HWY_TARGET == HWY_AVX3
  const __m512i bytes = _mm512_packs_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(c.raw, d.raw));
  StoreNibbleBytes(_mm512_and_si512(bytes, _mm512_set1_epi8(0x0F)), out);
#elif HWY_TARGET == HWY_SSE4
  const __m128i bytes = _mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw));
  StoreNibbleBytes(_mm_and_si128(bytes, _mm_set1_epi8(0x0F)), out);
#else
  StorePackedCodes4<4>(a, b, c, d, out);
#endif
}

/// StoreNibbles4 for FLOAT4E2M1: a, b, c, d the magnitudes' codes (0..7), sa, sb, sc, sd the values
/// whose sign bits complete them. The signs go through the same packs as the magnitudes (a negative
/// float's bits stay a negative integer) and one shift puts all of them at bit 3, as
/// StoreSignedBytes4 does for float8. kUncapped: a..d are EncodeFloat4Magnitude<true>'s codes less 2
/// (-2..256), completed on the packed bytes by one addition and one minimum (the signed byte pack
/// keeps every code above 7 above it).
template <bool kUncapped = false>
HWY_INLINE void StoreSignedNibbles4(VI a, VI b, VI c, VI d, VF sa, VF sb, VF sc, VF sd, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  __m256i codes = _mm256_packs_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw));
  if constexpr (kUncapped) codes = _mm256_min_epu8(_mm256_add_epi8(codes, _mm256_set1_epi8(2)), _mm256_set1_epi8(7));
  // Bit 7 of each byte to bit 3 of the same byte: a 16-bit shift moves nothing else into place.
  const __m256i signs = _mm256_srli_epi16(PackedSignBits4(sa, sb, sc, sd), 4);
  StoreNibbleBytes(_mm256_or_si256(codes, signs), out);
#elif HWY_TARGET == HWY_AVX3
  __m512i codes = _mm512_packs_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(c.raw, d.raw));
  if constexpr (kUncapped) codes = _mm512_min_epu8(_mm512_add_epi8(codes, _mm512_set1_epi8(2)), _mm512_set1_epi8(7));
  const __m512i signs = _mm512_srli_epi16(PackedSignBits4(sa, sb, sc, sd), 4);
  StoreNibbleBytes(_mm512_or_si512(codes, signs), out);
#elif HWY_TARGET == HWY_SSE4
  __m128i codes = _mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw));
  if constexpr (kUncapped) codes = _mm_min_epu8(_mm_add_epi8(codes, _mm_set1_epi8(2)), _mm_set1_epi8(7));
  const __m128i signs = _mm_srli_epi16(PackedSignBits4(sa, sb, sc, sd), 4);
  StoreNibbleBytes(_mm_or_si128(codes, signs), out);
#else
  const DI di;
  const auto with_sign = [&](VI m, VF s) {
    if constexpr (kUncapped) m = hn::Min(hn::Add(m, hn::Set(di, 2)), hn::Set(di, 7));
    return hn::Or(m, hn::And(hn::ShiftRight<28>(hn::BitCast(di, s)), hn::Set(di, 8)));
  };
  StoreNibbles4(with_sign(a, sa), with_sign(b, sb), with_sign(c, sc), with_sign(d, sd), out);
#endif
}

#if HWY_TARGET == HWY_AVX2
/// Stores the 2-bit codes of `bytes` (one per byte, below 4, as two packs_epi16 of packs_epi32 pairs
/// leave them) as 8 bytes of ONNX layout, the first code of each four in the lowest bits.
HWY_INLINE void StoreCrumbBytes(__m256i bytes, uint8_t* out) {
  const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  // Each 32-bit lane holds four codes, one per byte: fold them into its low byte.
  const __m256i pairs =
      _mm256_or_si256(ordered, _mm256_srli_epi16(ordered, 6));  // bytes 0 and 2: c0 | c1 << 2, c2 | c3 << 2
  const __m256i quads =
      _mm256_or_si256(pairs, _mm256_srli_epi32(pairs, 12));  // byte 0: c0 | c1 << 2 | c2 << 4 | c3 << 6
  const __m256i low_bytes =
      _mm256_shuffle_epi8(quads, _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8,
                                                  12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1));
  const __m256i packed = _mm256_permutevar8x32_epi32(low_bytes, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}
#elif HWY_TARGET == HWY_AVX3
/// As on AVX2, 16 bytes: in element order, each dword's four codes become its low byte by two
/// multiply-adds (weights 1 and 4 on byte pairs, then 1 and 16 on word pairs; at most 255), and the
/// dwords are narrowed.
HWY_INLINE void StoreCrumbBytes(__m512i bytes, uint8_t* out) {
  const __m512i ordered = PackedBytesInOrder(bytes);
  const __m512i pairs = _mm512_maddubs_epi16(ordered, _mm512_set1_epi16(0x0401));
  const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00100001));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(quads));
}
#elif HWY_TARGET == HWY_SSE4
/// As on AVX2, 4 bytes.
HWY_INLINE void StoreCrumbBytes(__m128i bytes, uint8_t* out) {
  const __m128i pairs = _mm_or_si128(bytes, _mm_srli_epi16(bytes, 6));
  const __m128i quads = _mm_or_si128(pairs, _mm_srli_epi32(pairs, 12));
  const int packed = _mm_cvtsi128_si32(
      _mm_shuffle_epi8(quads, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)));
  std::memcpy(out, &packed, 4);
}
#endif

/// Packs 4·Lanes 2-bit codes (int32 lanes already in the output's range) into Lanes bytes, the
/// first code of each four in the lowest bits (ONNX layout).
HWY_INLINE void StoreCrumbs4(VI a, VI b, VI c, VI d, uint8_t* out) {
#if HWY_TARGET == HWY_AVX2
  StoreCrumbBytes(
      _mm256_and_si256(_mm256_packs_epi16(_mm256_packs_epi32(a.raw, b.raw), _mm256_packs_epi32(c.raw, d.raw)),
                       _mm256_set1_epi8(3)),
      out);
#elif HWY_TARGET == HWY_AVX3
  StoreCrumbBytes(
      _mm512_and_si512(_mm512_packs_epi16(_mm512_packs_epi32(a.raw, b.raw), _mm512_packs_epi32(c.raw, d.raw)),
                       _mm512_set1_epi8(3)),
      out);
#elif HWY_TARGET == HWY_SSE4
  StoreCrumbBytes(
      _mm_and_si128(_mm_packs_epi16(_mm_packs_epi32(a.raw, b.raw), _mm_packs_epi32(c.raw, d.raw)), _mm_set1_epi8(3)),
      out);
#else
  StorePackedCodes4<2>(a, b, c, d, out);
#endif
}

/// Packs 4·Lanes kBits-bit codes (int32 lanes already in the output's range) into 4·Lanes·kBits/8
/// bytes of ONNX layout: the one entry point of the quantize kernels for packing in registers.
template <int kBits>
HWY_INLINE void StorePacked4(VI a, VI b, VI c, VI d, uint8_t* out) {
  CheckPackedWidth<kBits>();
  if constexpr (kBits == 4) {
    StoreNibbles4(a, b, c, d, out);
  } else {
    StoreCrumbs4(a, b, c, d, out);
  }
}

/// Stores the kBits-bit integer codes of int32 values a..d plus zero points za..zd (each lane within
/// ±255), saturated to the output's range: packed in ONNX layout where kPacked, else one code per
/// byte (a code buffer). x86 saturates to bytes with the zero points added as StoreBytes4PlusZeroPoints
/// does, then clamps the 4·Lanes bytes at once instead of each int32 vector (saturations and the
/// clamp are monotone, so the codes are those of the int32 clamp); elsewhere the int32 lanes are
/// clamped.
template <int kBits, bool Signed, bool kPacked>
HWY_INLINE void StoreNarrowCodes4PlusZeroPoints(VI a, VI b, VI c, VI d, VI za, VI zb, VI zc, VI zd, uint8_t* out) {
  CheckPackedWidth<kBits>();
  constexpr int kLo = Signed ? -(1 << (kBits - 1)) : 0;
  constexpr int kHi = Signed ? (1 << (kBits - 1)) - 1 : (1 << kBits) - 1;
  constexpr int kMask = (1 << kBits) - 1;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
  using Byte = std::conditional_t<Signed, int8_t, uint8_t>;
  const hn::Repartition<Byte, DI> d8;
  const auto bytes = hn::BitCast(d8, PackedBytesPlusZeroPoints<Signed>(a, b, c, d, za, zb, zc, zd));
  const auto clamped =
      Signed ? hn::Min(hn::Max(bytes, hn::Set(d8, static_cast<Byte>(kLo))), hn::Set(d8, static_cast<Byte>(kHi)))
             : hn::Min(bytes, hn::Set(d8, static_cast<Byte>(kHi)));
  // Signed codes keep their low kBits bits (two's complement), as the packers expect.
  const VI codes = hn::BitCast(DI(), Signed ? hn::And(clamped, hn::Set(d8, static_cast<Byte>(kMask))) : clamped);
  if constexpr (!kPacked) {
    StoreBytesInOrder(codes, out);
  } else if constexpr (kBits == 4) {
    StoreNibbleBytes(codes.raw, out);
  } else {
    StoreCrumbBytes(codes.raw, out);
  }
#else
  const DI di;
  const auto clamp = [&](VI v, VI z) { return hn::Min(hn::Max(hn::Add(v, z), hn::Set(di, kLo)), hn::Set(di, kHi)); };
  if constexpr (kPacked) {
    StorePacked4<kBits>(clamp(a, za), clamp(b, zb), clamp(c, zc), clamp(d, zd), out);
  } else {
    const VI mask = hn::Set(di, kMask);
    StoreBytes4<false>(hn::And(clamp(a, za), mask), hn::And(clamp(b, zb), mask), hn::And(clamp(c, zc), mask),
                       hn::And(clamp(d, zd), mask), out);
  }
#endif
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_PACK_INL_H_
