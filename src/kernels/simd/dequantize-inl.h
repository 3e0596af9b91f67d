// Vectorised DequantizeLinear kernels, compiled once per Highway target by each dequantize_<family>.cc
// (one small unit per input type, from family_unit.cc.in; the kernels: dequantize_kernels.inc). Each equals
// dequantize_scalar bit for bit: x − zero point exactly (int32; |difference| < 2^17 so its float32
// conversion is exact) or in float32 (FLOAT4E2M1), one float32 product with the scale, one rounding
// to the output type with the same encoder as the scalar kernel.
//
// Granularity → path. Every path ends in the one loop, DequantizeLoop, which takes its parameters from
// BroadcastParams, ExpandedView or InPlaceParams (params-inl.h):
//   per-tensor; per-axis with    chunks of kChunk; one BroadcastParams run per segment (DequantizeRun)
//   inner >= 256
//   blocked along the last axis, pieces of whole blocks, parameters loaded a vector at a time, one
//   blocks tiling rows of whole  BroadcastParams run per block (DequantizeUniformBlocks)
//   groups (UniformBlocks)
//   blocked along the last axis, pieces of whole blocks: one flat loop, each vector with its block's
//   blocks tiling rows, a power  broadcast parameters (VectorBlockParams; DequantizeVectorBlocks)
//   of two of 1-8 vectors
//   (VectorBlockShift)
//   other blocked; per-axis      chunks of kChunk: long float32 segments stepping by one read their
//   with inner < 256             parameters in place (InPlaceParams), the rest of the chunk is
//                                expanded per element first (ExpandedView)
// AVX3, 8-bit x into bfloat16 (float8 x also into float16), per tensor or per axis with runs of
// 4096 or more: each output read from a table of the run's 256 outputs (DequantizeByByteTable).
// AVX2, FLOAT4E2M1 per tensor or in blocks of whole vectors along the last axis, where the scales are
// finite and the zero points absent or +0: no unpacking; each vector's packed bytes index a register
// table of the 8 magnitudes' products, the code's sign bit XORed in (DequantizeFloat4BySignedTable,
// DequantizeFloat4Blocks).
// 2/4-bit x is unpacked a chunk (or piece) at a time into a buffer first, one value per byte (int8 for
// int4/int2, so that the loop widens it with one instruction: pack-inl.h). float8 and
// float4 codes decode with LoadDecoded (convert-inl.h): through float16 or a register table.
//
// Stores (StoreMode): every path above takes `stream` at run time, DequantizeLoop does not. Normal
// stores write y directly; streaming writes each chunk (or piece) to a stage on the stack and copies
// it to y with non-temporal stores (PieceOutput, StreamBytes), and the kernel fences once at the end
// of the task. The loops index their output by `first`, so the paths pass y (or the stage) from a
// chunk's or piece's first element `base` on, with first − base. One copy of the loops serves both
// modes, so the units do not grow.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_DEQUANTIZE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_DEQUANTIZE_INL_H_
#undef QDQ_SIMD_DEQUANTIZE_INL_H_
#else
#define QDQ_SIMD_DEQUANTIZE_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "hwy/highway.h"
#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "kernels/simd/convert-inl.h"
#include "kernels/simd/families.hpp"
#include "kernels/simd/load_store-inl.h"
#include "kernels/simd/pack-inl.h"
#include "kernels/simd/params-inl.h"
#include "kernels/simd/staged_stores.hpp"
#include "kernels/simd/vectors-inl.h"
#include "types/integer_types.hpp"
#include "types/type_traits.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
namespace {

using T = DataType;

constexpr int InBits(T x) { return quantized_bits(x); }
constexpr bool IsIntegerIn(T x) { return is_quantized_integer(x); }
constexpr bool IsSignedIn(T x) { return is_signed_quantized_integer(x); }

/// Codes of a narrow float x (a MiniFloat of at most 8 bits) as float32, exactly.
template <T X>
HWY_INLINE VF DecodeX(VU codes) {
  static_assert(TypeTraits<X>::kKind == TypeKind::kMiniFloat && TypeTraits<X>::kBits <= 8);
  return DecodeF<typename TypeTraits<X>::Format>(codes);
}

/// A scale as the kernels multiply by it. For bfloat16 outputs a NaN scale gets its quiet bit and
/// loses its low 16 bits, so that every NaN product has zero low bits (RoundBitsToBF16's condition:
/// decoded float8 NaNs and the default NaN have them already) and still the bfloat16 code that
/// EncodeHalf gives the product of the original scale (its top payload bits, quiet).
template <T Y>
HWY_INLINE VF ScaleForOutput(VF s) {
  if constexpr (Y == T::kBFloat16) {
    const DU du;
    const VU cleaned = hn::And(hn::Or(hn::BitCast(du, s), hn::Set(du, 0x00400000u)), hn::Set(du, 0xFFFF0000u));
    return hn::IfThenElse(hn::IsNaN(s), hn::BitCast(DF(), cleaned), s);
  }
  return s;
}

/// The bfloat16 codes of products of ScaleForOutput scales, in the low 16 bits of i32 lanes.
HWY_INLINE VI BFloat16Codes(VF product) { return hn::BitCast(DI(), hn::ShiftRight<16>(RoundBitsToBF16(product))); }

/// Stores the bfloat16 codes of two vectors of ScaleForOutput products, a's then b's, at out.
HWY_INLINE void StoreBFloat16Pair(VF a, VF b, uint8_t* out) {
#if HWY_TARGET == HWY_AVX3
  // One word permute takes the rounded high halves of both, in order: the shifts and the pack with
  // its qword permute (four operations) become one.
  const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                                             25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  _mm512_storeu_si512(out, _mm512_permutex2var_epi16(RoundBitsToBF16(a).raw, odd_words, RoundBitsToBF16(b).raw));
#else
  StoreWords2<false>(BFloat16Codes(a), BFloat16Codes(b), out);
#endif
}

#if HWY_TARGET == HWY_AVX2
/// Stores the bfloat16 codes of ScaleForOutput products of 2·Lanes consecutive elements given as the
/// even-indexed ones and the odd-indexed ones: each even code shifted into the low half of its lane,
/// the odd one's high half beside it, is the pair in memory order. Two operations where the pack of
/// StoreBFloat16Pair takes four, two of them lane-crossing (Zen 3, 64 Ki: int8 x 1.16x, int4 1.11x).
HWY_INLINE void StoreBFloat16EvenOdd(VF even, VF odd, uint8_t* out) {
  _mm256_storeu_si256(
      reinterpret_cast<__m256i*>(out),
      _mm256_blend_epi16(_mm256_srli_epi32(RoundBitsToBF16(even).raw, 16), RoundBitsToBF16(odd).raw, 0xAA));
}

/// The 2·Lanes 8-bit integers (or unpacked 2/4-bit values) of X at base + index less the zero point
/// `zp` (one value in every lane), as float32: the even-indexed ones and the odd-indexed ones. The
/// difference is taken on 16-bit lanes (|x − zp| <= 255) and each half widened by a multiply-add with
/// (1, 0) or (0, 1), which runs beside the shuffles and shifts of the rest of the loop.
template <T X>
HWY_INLINE void LoadIntEvenOdd(const void* base, int64_t index, VI zp, VF& even, VF& odd) {
  static_assert(IsIntegerIn(X) && InBits(X) <= 8);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint8_t*>(base) + index));
  const __m256i words = IsSignedIn(X) ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
  const __m256i differences = _mm256_sub_epi16(words, _mm256_packs_epi32(zp.raw, zp.raw));
  even = VF{_mm256_cvtepi32_ps(_mm256_madd_epi16(differences, _mm256_set1_epi32(1)))};
  odd = VF{_mm256_cvtepi32_ps(_mm256_madd_epi16(differences, _mm256_set1_epi32(0x10000)))};
}
#endif

/// Whether DequantizeLoop writes bfloat16 y from even- and odd-indexed elements (AVX2): for integer
/// x of at most 8 bits, where each pair of vectors shares its parameters (one scale for the run, or
/// groups of two or four vectors). Not for float8 x: the byte shuffle that puts their codes in that
/// order before the decode cost more than the pack saved (0.97x on Zen 3).
template <T X, T Y, int kVectorsPerBlock, bool kParamsInRegisters>
constexpr bool kBFloat16EvenOdd = (HWY_TARGET == HWY_AVX2) && Y == T::kBFloat16 &&
                                  (kParamsInRegisters || kVectorsPerBlock >= 2) && IsIntegerIn(X) && InBits(X) <= 8;

template <T Y>
HWY_INLINE void StoreY(VF v, void* y, int64_t index, size_t n) {
  const DF df;
  if constexpr (Y == T::kFloat16) {
    StoreHalf<Float16Format>(v, static_cast<uint16_t*>(y) + index, n);
  } else if constexpr (Y == T::kBFloat16) {
    StoreNarrow<16, false>(BFloat16Codes(v), y, index, n);
  } else {
    StorePartial(df, v, static_cast<float*>(y) + index, n);
  }
}

/// Elements [first, first + count); x element first + i is read from src at src_index + i (src is
/// x itself, or a buffer of unpacked codes for 2/4-bit x). scale(i, n), zero_point(i, n) and
/// float_zero_point(i, n) give the parameters of the n-lane vector at i: a register for a run with
/// one scale, loads for expanded parameters or parameters read in place. kFactorInScale: the scales
/// are multiplied by the decode's factor already (kDecodeFactor; float8 x only), so the decode
/// leaves it out. kVectorsPerBlock (1, 2 or 4): the parameters are a block's, broadcast, and each
/// step's four vectors (from element 0) share them in aligned groups of that many (blocks of one or
/// two vectors, or of four or more), so each group loads them once; 0: the parameters of a vector
/// at any element are its own, so vectors may start anywhere (see the tail below). kAlignStores:
/// the parameters are registers (one scale for the run), so a float32 y's stores may be put on whole
/// vectors by moving the run on (see the head below). `y_is_output`: y is the call's output, not a
/// stage on the stack. kOffsetProduct (integer x): the zero point is not subtracted; each product is
/// instead fma(x, scale, float_zero_point), where the caller has made float_zero_point −zp·scale and
/// checked that this is (x − zp)·scale rounded once (ZeroPointInProduct).
template <T X, T Y, class Scale, class ZeroPoint, class FloatZeroPoint, bool kFactorInScale = false,
          int kVectorsPerBlock = 0, bool kAlignStores = false, bool kOffsetProduct = false>
HWY_INLINE void DequantizeLoop(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first,
                               int64_t count, void* y, Scale&& scale, ZeroPoint&& zero_point,
                               FloatZeroPoint&& float_zero_point, bool y_is_output = true) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  constexpr int kBits = InBits(X);
  const bool has_zp = c.zero_point != nullptr;
  const auto value_with = [&](int64_t k, size_t n, int64_t param_k) QDQ_INLINE_LAMBDA -> VF {
    if constexpr (IsIntegerIn(X) && kOffsetProduct) {
      return hn::ConvertTo(df, LoadInt<kBits, IsSignedIn(X)>(src, src_index + k, n));
    } else if constexpr (IsIntegerIn(X)) {
      return hn::ConvertTo(df, hn::Sub(LoadInt<kBits, IsSignedIn(X)>(src, src_index + k, n), zero_point(param_k, n)));
    } else {
      const VF d = LoadDecoded<typename TypeTraits<X>::Format, !kFactorInScale>(
          static_cast<const uint8_t*>(src) + src_index + k, n);
      if constexpr (has_float_zero_point(X)) return has_zp ? hn::Sub(d, float_zero_point(param_k, n)) : d;
      return d;
    }
  };
  const auto value = [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA -> VF { return value_with(k, n, k); };
  // y's value before it is stored: value · scale (with the offset where kOffsetProduct).
  const auto product = [&](VF v, VF s, int64_t param_k, size_t n) QDQ_INLINE_LAMBDA -> VF {
    if constexpr (kOffsetProduct) return hn::MulAdd(v, s, float_zero_point(param_k, n));
    (void)param_k;
    (void)n;
    return hn::Mul(v, s);
  };
  static_assert(!kOffsetProduct ||
                (IsIntegerIn(X) && kVectorsPerBlock == 0 && !kBFloat16EvenOdd<X, Y, kVectorsPerBlock, kAlignStores>));
  // Four whole vectors per iteration, no partial vectors and no per-iteration branches.
  const size_t full = static_cast<size_t>(lanes);
  // The element whose parameters vector v of the step at i uses.
  static_assert(kVectorsPerBlock == 0 || kVectorsPerBlock == 1 || kVectorsPerBlock == 2 || kVectorsPerBlock == 4);
  constexpr int64_t kGroup = kVectorsPerBlock == 0 ? 1 : kVectorsPerBlock;
  const auto param_at = [&](int64_t i, int64_t v) QDQ_INLINE_LAMBDA { return i + v / kGroup * kGroup * lanes; };
  if constexpr (Y == T::kFloat && kVectorsPerBlock == 0 && kAlignStores) {
    // A float32 y that does not start on a vector (NumPy's arrays start 16 bytes into a line as
    // often as not) has every store cross a cache line: 1.36x the time of the same call in cache on
    // the Intel Xeon. One whole vector at element 0, then the run from the first element on a
    // vector boundary, which rewrites the overlap with the same values. The run is moved on rather
    // than the loop started at another element (which took float8 x 5 % slower with y aligned). A
    // partial vector there, through a buffer, cost more than it saved on runs of 1024; where the
    // parameters are loaded per vector, their loads would cross lines instead (0.93x with runs of
    // 256 along an outer axis), hence registers only.
    const auto at = reinterpret_cast<uintptr_t>(static_cast<float*>(y) + first);
    const auto vector_bytes = static_cast<uintptr_t>(lanes) * sizeof(float);
    const auto head = static_cast<int64_t>((vector_bytes - at % vector_bytes) % vector_bytes / sizeof(float));
    if (at % sizeof(float) == 0 && head != 0 && head + 4 * lanes <= count) {
      StoreY<Y>(product(value(0, full), scale(0, full), 0, full), y, first, full);
      src_index += head;
      first += head;
      count -= head;
    }
  }
  // Out of cache x's lines are asked for ahead (PrefetchAhead), as in the quantize loop: without,
  // 16-bit outputs stream at 0.6 of the machine's rate on the Intel Xeon (their stores are half of
  // float32's, so the loads' latency shows). Only for an x of 1 MiB or more read from x itself: an x
  // in cache, or the int8 form of 2/4-bit codes this loop is given from a buffer in cache, gains
  // nothing from them (Zen 3, 64 Ki elements: int4 blocked along axis 0 0.85x with them, 8-bit x up
  // to 0.96x).
  constexpr uintptr_t kInBytes = kBits >= 8 ? static_cast<uintptr_t>(kBits / 8) : 0;
  constexpr uintptr_t kGroupBytes = 4 * hn::MaxLanes(DF()) * kInBytes;
  const uintptr_t x_at = reinterpret_cast<uintptr_t>(src) + static_cast<uintptr_t>(src_index) * kInBytes;
  const LineAhead x_ahead =
      src == c.x ? LineAheadFor(c.x_requests, static_cast<uint64_t>(c.plan.elements) * kInBytes, {}) : LineAhead{};
  // On 512-bit targets a float32 y's lines too, where y is past L1 but written with ordinary stores
  // (OutputInL2): a whole-line store that misses L1 holds back the stores behind it while its line
  // comes from L2 (64 Ki elements on the Intel Xeon: 1.02-1.20x). Not for 16-bit outputs (half the
  // lines per element: up to 6 % slower), nor for the loops that load their parameters per vector
  // (blocks along an outer axis: 0.95-1.02x), nor on AVX2 (0.94-1.05x), nor into a stage.
  constexpr bool kYAhead =
      Y == T::kFloat && hn::MaxLanes(DF()) * sizeof(float) >= kCacheLine && (kAlignStores || kVectorsPerBlock != 0);
  constexpr uintptr_t kOutBytes = TypeTraits<Y>::kBits / 8;
  const bool y_ahead = kYAhead && y_is_output && OutputInL2(c.y_bytes);
  const uintptr_t y_at = reinterpret_cast<uintptr_t>(y) + static_cast<uintptr_t>(first) * kOutBytes;
  int64_t i = 0;
  // The loop comes in two copies, with and without the requests, so that calls that make none (x in
  // cache, read from a buffer) do not test for them at every step.
  const auto steps = [&](auto requests) QDQ_INLINE_LAMBDA {
    for (; i + 4 * lanes <= count; i += 4 * lanes) {
      if constexpr (decltype(requests)::value) {
        if constexpr (kGroupBytes > 0) {
          PrefetchAhead(x_at + static_cast<uintptr_t>(i) * kInBytes, kGroupBytes, x_ahead);
        }
        if constexpr (kYAhead) {
          if (y_ahead)
            PrefetchAhead(y_at + static_cast<uintptr_t>(i) * kOutBytes, 4 * hn::MaxLanes(DF()) * kOutBytes,
                          {true, false});
        }
      }
#if HWY_TARGET == HWY_AVX2
      if constexpr (kBFloat16EvenOdd<X, Y, kVectorsPerBlock, kAlignStores>) {
        uint8_t* out = static_cast<uint8_t*>(y) + 2 * (first + i);
        VF even[2], odd[2];
        for (int pair = 0; pair < 2; ++pair) {
          LoadIntEvenOdd<X>(src, src_index + i + 2 * pair * lanes, zero_point(param_at(i, 2 * pair), full), even[pair],
                            odd[pair]);
        }
        const VF s0 = scale(i, full);
        StoreBFloat16EvenOdd(hn::Mul(even[0], s0), hn::Mul(odd[0], s0), out);
        const VF s2 = kGroup == 4 ? s0 : scale(i + 2 * lanes, full);
        StoreBFloat16EvenOdd(hn::Mul(even[1], s2), hn::Mul(odd[1], s2), out + 4 * lanes);
        continue;
      }
#endif
      VF d0, d1, d2, d3;
      if constexpr (!IsIntegerIn(X) && kDecodesInPairs<typename TypeTraits<X>::Format>) {
        const uint8_t* const codes = static_cast<const uint8_t*>(src) + src_index + i;
        LoadDecoded4<typename TypeTraits<X>::Format, !kFactorInScale>(codes, d0, d1, d2, d3);
      } else {
        d0 = value_with(i, full, param_at(i, 0));
        d1 = value_with(i + lanes, full, param_at(i, 1));
        d2 = value_with(i + 2 * lanes, full, param_at(i, 2));
        d3 = value_with(i + 3 * lanes, full, param_at(i, 3));
      }
      // Vector v's scale: loaded where it is used (as the loop did before groups shared them) when v
      // starts a group, else the group's.
      const auto scale_of = [&](int64_t v, VF group)
                                QDQ_INLINE_LAMBDA { return v % kGroup == 0 ? scale(i + v * lanes, full) : group; };
      const VF s0 = scale(i, full);
      if constexpr (Y == T::kBFloat16) {
        // Two vectors of codes per store.
        uint8_t* out = static_cast<uint8_t*>(y) + 2 * (first + i);
        StoreBFloat16Pair(product(d0, s0, i, full), product(d1, scale_of(1, s0), i + lanes, full), out);
        const VF s2 = scale_of(2, s0);
        StoreBFloat16Pair(product(d2, s2, i + 2 * lanes, full), product(d3, scale_of(3, s2), i + 3 * lanes, full),
                          out + 4 * lanes);
      } else {
        StoreY<Y>(product(d0, s0, i, full), y, first + i, full);
        StoreY<Y>(product(d1, scale_of(1, s0), i + lanes, full), y, first + i + lanes, full);
        const VF s2 = scale_of(2, s0);
        StoreY<Y>(product(d2, s2, i + 2 * lanes, full), y, first + i + 2 * lanes, full);
        StoreY<Y>(product(d3, scale_of(3, s2), i + 3 * lanes, full), y, first + i + 3 * lanes, full);
      }
    }
  };
  if constexpr (kGroupBytes > 0 || kYAhead) {
    if (x_ahead.into_l1 || x_ahead.into_l2 || y_ahead) {
      steps(std::true_type());
    } else {
      steps(std::false_type());
    }
  } else {
    steps(std::false_type());
  }
  for (; i + lanes <= count; i += lanes)
    StoreY<Y>(product(value(i, full), scale(i, full), i, full), y, first + i, full);
  if (i == count) return;
  if (kVectorsPerBlock == 0 && count >= lanes) {
    // The last whole vector, overlapping the one before: a partial vector goes through a buffer.
    StoreY<Y>(product(value(count - lanes, full), scale(count - lanes, full), count - lanes, full), y,
              first + count - lanes, full);
    return;
  }
  const size_t n = static_cast<size_t>(count - i);
  StoreY<Y>(product(value(i, n), scale(i, n), i, n), y, first + i, n);
}

/// Whether a run of integer x into float16 or bfloat16 y may take its zero point into the product
/// (DequantizeLoop's kOffsetProduct, where ZeroPointInProduct allows it): x of at most 8 bits. That
/// drops the subtraction from each vector (five operations instead of six for float16 y), where these
/// loops are bound by their operations rather than by memory. Only with a fused multiply-add: a
/// multiply then an add rounds x·s, which may overflow where (x − zp)·s does not. Not where AVX2 writes
/// bfloat16 from even and odd elements: that path subtracts in 16-bit lanes, two vectors at a time.
template <T X, T Y>
constexpr bool kZeroPointInProduct = (HWY_NATIVE_FMA != 0) && IsIntegerIn(X) && InBits(X) <= 8 &&
                                     (Y == T::kFloat16 || Y == T::kBFloat16) && !kBFloat16EvenOdd<X, Y, 0, true>;

/// Whether fma(x, s, offset), offset = −zp·s (written to *offset), is RN((x − zp)·s), the float32
/// product the loop otherwise forms, for every x of at most 8 bits (|zp| < 2^8). Both round the same
/// exact value once where the offset is exact: s normal with at most 16 significant bits (every
/// float16 and bfloat16 scale; the low 8 bits of a float32 one zero), so zp·s fits float32's 24, and
/// the offset finite. And s positive: x = zp then gives +0 as (x − zp)·s does (an fma's exact zero
/// sum is +0). Infinite, NaN, zero, subnormal and negative scales keep the subtraction.
HWY_INLINE bool ZeroPointInProduct(float s, int32_t zp, float* offset) {
  if (!(s >= std::numeric_limits<float>::min() && s <= std::numeric_limits<float>::max())) return false;
  if ((std::bit_cast<uint32_t>(s) & 0xFFu) != 0) return false;
  *offset = -static_cast<float>(zp) * s;
  return std::isfinite(*offset);
}

/// DequantizeLoop with one scale and zero point in registers.
template <T X, T Y>
HWY_INLINE void DequantizeRunWith(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first,
                                  int64_t count, VF scale, VI zp, VF zpf, void* y) {
  const auto same_zp = [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return zp; };
  const auto same_zpf = [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return zpf; };
  if constexpr (!IsIntegerIn(X)) {
    constexpr float kFactor = kDecodeFactor<typename TypeTraits<X>::Format>;
    if constexpr (kFactor != 1.0f) {
      // The product d · (2^k·s) is the product (d·2^k) · s, rounded once, wherever 2^k·s is finite
      // as s is: one multiplication per vector fewer. (NaN payloads: the decoded NaN is the first
      // operand either way, and 2^k·s keeps s's.)
      const VF folded = hn::Mul(scale, hn::Set(DF(), kFactor));
      const float s = hn::GetLane(scale);
      if (!std::isfinite(s) || std::isfinite(s * kFactor)) {
        const auto same_scale = [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return folded; };
        DequantizeLoop<X, Y, decltype(same_scale)&, decltype(same_zp)&, decltype(same_zpf)&, true, 0, true>(
            c, src, src_index, first, count, y, same_scale, same_zp, same_zpf);
        return;
      }
    }
  }
  const auto same_scale = [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return scale; };
  if constexpr (IsIntegerIn(X)) {
    // A zero point of 0 (or none: symmetric weights and activations) as a compile-time zero, whose
    // subtraction the compiler drops: one operation of five per vector of 8-bit x.
    const auto zero_zp = [](int64_t, size_t) QDQ_INLINE_LAMBDA { return hn::Zero(DI()); };
    if (hn::AllTrue(DI(), hn::Eq(zp, hn::Zero(DI())))) {
      DequantizeLoop<X, Y, decltype(same_scale)&, decltype(zero_zp)&, decltype(same_zpf)&, false, 0, true>(
          c, src, src_index, first, count, y, same_scale, zero_zp, same_zpf);
      return;
    }
    if constexpr (kZeroPointInProduct<X, Y>) {
      float offset;
      if (ZeroPointInProduct(hn::GetLane(scale), hn::GetLane(zp), &offset)) {
        const VF offset_vector = hn::Set(DF(), offset);
        const auto same_offset = [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return offset_vector; };
        DequantizeLoop<X, Y, decltype(same_scale)&, decltype(zero_zp)&, decltype(same_offset)&, false, 0, true, true>(
            c, src, src_index, first, count, y, same_scale, zero_zp, same_offset);
        return;
      }
    }
  }
  DequantizeLoop<X, Y, decltype(same_scale)&, decltype(same_zp)&, decltype(same_zpf)&, false, 0, true>(
      c, src, src_index, first, count, y, same_scale, same_zp, same_zpf);
}

/// DequantizeRunWith for a run whose scale and zero point are parameter `param`.
template <T X, T Y>
HWY_INLINE void DequantizeRun(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first, int64_t count,
                              int64_t param, void* y) {
  const DF df;
  const DI di;
  const bool has_zp = c.zero_point != nullptr;
  VI zp = hn::Zero(di);
  VF zpf = hn::Zero(df);
  if (has_zp) {
    if constexpr (IsIntegerIn(X) && InBits(X) >= 8) {
      // The zero point has x's type (ChooseFamilyKernel): read as such, without a switch over types.
      zp = hn::Set(di, static_cast<int32_t>(load_integer_of<TypeTraits<X>>(c.zero_point, param)));
    } else if constexpr (IsIntegerIn(X)) {
      zp = hn::Set(di, static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, param)));
    }
    if constexpr (has_float_zero_point(X)) zpf = hn::Set(df, static_cast<float>(load_real(c.zero_point, X, param)));
  }
  // Runs along a long inner axis take one scale each: float32 scales, the common case, are read
  // without the switch over types (a few percent of a per-axis call with 1024-element runs).
  const float scale = c.scale_type == T::kFloat ? load_le<float>(c.scale, param)
                                                : static_cast<float>(load_real(c.scale, c.scale_type, param));
  DequantizeRunWith<X, Y>(c, src, src_index, first, count, ScaleForOutput<Y>(hn::Set(df, scale)), zp, zpf, y);
}

/// The scales (ScaleForOutput) and zero points of parameters [first, first + count), a vector at a
/// time (whole vectors: the arrays have a vector of room past the count).
template <T X, T Y>
HWY_INLINE void LoadDequantizeParams(const DequantizeCall& c, int64_t first, int64_t count, float* scale,
                                     int32_t* zero_point, float* float_zero_point) {
  const DF df;
  const DI di;
  constexpr int kBits = InBits(X);
  const bool has_zp = c.zero_point != nullptr;
  HWY_ALIGN uint8_t zp_codes[kBits < 8 ? ExpandedParams::kSize : 1];
  if constexpr (kBits < 8) {
    if (has_zp) UnpackCodes<kBits, IsSignedIn(X)>(static_cast<const uint8_t*>(c.zero_point), first, count, zp_codes);
  }
  WithScaleType(c.scale_type, [&](auto scale_type) {
    ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
      hn::StoreU(ScaleForOutput<Y>(LoadScaleAsFloat<decltype(scale_type)::value>(c.scale, first + k, n)), df,
                 scale + k);
    });
  });
  if constexpr (IsIntegerIn(X)) {
    if (!has_zp) {
      ForEachVector(count, [&](int64_t k, size_t) QDQ_INLINE_LAMBDA { hn::StoreU(hn::Zero(di), di, zero_point + k); });
    } else if constexpr (kBits < 8) {
      ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
        hn::StoreU(LoadInt<kBits, IsSignedIn(X)>(zp_codes, k, n), di, zero_point + k);
      });
    } else {
      ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
        hn::StoreU(LoadInt<kBits, IsSignedIn(X)>(c.zero_point, first + k, n), di, zero_point + k);
      });
    }
  }
  if constexpr (has_float_zero_point(X)) {
    ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
      hn::StoreU(has_zp ? DecodeX<X>(LoadCodes(zp_codes + k, n)) : hn::Zero(df), df, float_zero_point + k);
    });
  }
}

/// Dequantizes elements [first, first + count) with expanded parameters (index 0 = element first);
/// x element first + i is read from src at src_index + i.
template <T X, T Y>
HWY_INLINE void DequantizeExpanded(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first,
                                   int64_t count, const ExpandedParams& e, void* y) {
  const DF df;
  const DI di;
  // Unaligned loads: the loop's last vector may start anywhere (DequantizeLoop's tail).
  DequantizeLoop<X, Y>(
      c, src, src_index, first, count, y,
      [&](int64_t k, size_t) QDQ_INLINE_LAMBDA { return hn::LoadU(df, e.scale + k); },
      [&](int64_t k, size_t) QDQ_INLINE_LAMBDA { return hn::LoadU(di, e.zero_point + k); },
      [&](int64_t k, size_t) QDQ_INLINE_LAMBDA { return hn::LoadU(df, e.float_zero_point + k); });
}

/// Dequantizes elements [first, first + count) of one segment whose parameters step by one through
/// a float32 scale tensor from `param` on (blocked along an axis other than the last, per-axis along
/// the last): the scales and 8/16-bit zero points are read where they are instead of being expanded
/// (2/4-bit zero points are unpacked, like x). x element first + i is read from src at src_index + i.
template <T X, T Y>
HWY_INLINE void DequantizeInPlace(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first,
                                  int64_t count, int64_t param, void* y) {
  const bool zp_used = IsIntegerIn(X) || has_float_zero_point(X);
  const InPlaceParams<InBits(X), IsSignedIn(X)> p(c.scale, zp_used ? c.zero_point : nullptr, param, count);
  DequantizeLoop<X, Y>(
      c, src, src_index, first, count, y,
      [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return ScaleForOutput<Y>(p.Scale(k, n)); },
      [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return p.ZeroPoint(k, n); },
      [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return p.FloatZeroPoint(k, n); });
}

/// Whether X's decode has a factor to fold into the scales (FoldDecodeFactor can return true).
template <T X>
constexpr bool kFoldsDecodeFactor = [] {
  if constexpr (IsIntegerIn(X)) {
    return false;
  } else {
    return kDecodeFactor<typename TypeTraits<X>::Format> != 1.0f;
  }
}();

/// Multiplies scale[0, count) by X's decode factor (kDecodeFactor) where every product is finite as
/// its scale is, and says whether it did (never for x without a factor): DequantizeLoop's
/// kFactorInScale for scales in an array.
template <T X>
HWY_INLINE bool FoldDecodeFactor(float* scale, int64_t count) {
  if constexpr (IsIntegerIn(X)) {
    return false;
  } else {
    constexpr float kFactor = kDecodeFactor<typename TypeTraits<X>::Format>;
    if constexpr (kFactor == 1.0f) {
      return false;
    } else {
      // Whole vectors: the arrays have a vector of room past the count.
      const DF df;
      const VF factor = hn::Set(df, kFactor);
      auto overflow = hn::FirstN(df, 0);
      ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
        const VF s = hn::Load(df, scale + k);
        const auto lost = hn::AndNot(hn::IsFinite(hn::Mul(s, factor)), hn::IsFinite(s));
        overflow = hn::Or(overflow, hn::And(lost, hn::FirstN(df, n)));
      });
      if (!hn::AllFalse(df, overflow)) return false;
      ForEachVector(count, [&](int64_t k, size_t) QDQ_INLINE_LAMBDA {
        hn::Store(hn::Mul(hn::Load(df, scale + k), factor), df, scale + k);
      });
      return true;
    }
  }
}

/// Bytes of y per element.
template <T Y>
constexpr int64_t kOutputBytesPer = TypeTraits<Y>::kBits / 8;

/// x's 2/4-bit codes [first, first + count) as one value per byte (kOffset: less `offset`), as
/// UnpackCodes gives them: from packed codes, or from codes given one per byte (c.x_one_per_byte).
template <T X, bool kOffset = false>
HWY_INLINE void XCodes(const DequantizeCall& c, int64_t first, int64_t count, uint8_t* codes, uint8_t offset = 0) {
  constexpr int kBits = InBits(X);
  const auto* const x = static_cast<const uint8_t*>(c.x);
  if (c.x_one_per_byte) {
    ExpandCodesOnePerByte<kBits, IsSignedIn(X), kOffset>(x + first, count, codes, offset);
  } else {
    UnpackCodes<kBits, IsSignedIn(X), kOffset>(x, first, count, codes, offset);
  }
}

/// Where output element `at` starts in y.
template <T Y>
HWY_INLINE uint8_t* OutputAt(void* y, int64_t at) {
  return static_cast<uint8_t*>(y) + at * kOutputBytesPer<Y>;
}

#if HWY_TARGET == HWY_AVX3
// 8-bit x into float16 or bfloat16 by a table of all 256 outputs (AVX3), per tensor and per axis
// with long runs. With one scale and zero point, y is a function of x's byte alone: the loop itself
// forms the 256 outputs once per task or run (so each is the one it would give, NaNs included), and
// each vector of 32 outputs is then four two-register word permutes of the table (vpermt2w: 64
// entries each) and three selects by the code's bits 6 and 7, in place of the widening, decode or
// subtraction, conversion, multiplication and rounding of two vectors of float32.

/// Whether DequantizeGeneral takes the byte table for x and y. Zen 4, 64 Ki per tensor:
/// float8e4m3fn into bfloat16 2.97x, into float16 2.62x, int8 into bfloat16 1.20x. Not for integer
/// x into float16, whose loop (two conversions, no rounding of its own) is as fast: uint8 1.00x.
template <T X, T Y>
constexpr bool kByteTable = InBits(X) == 8 && (Y == T::kBFloat16 || (Y == T::kFloat16 && !IsIntegerIn(X)));

/// Per-tensor tasks and per-axis runs shorter than this keep the loop: forming the table costs 256
/// of its elements.
constexpr int64_t kByteTableMinCount = 4096;

/// y of code 32k + j in word j of words[k].
struct ByteTable {
  __m512i words[8];
  // Codes c and c + 128 give outputs that differ in the sign bit alone (float8 codes with a scale
  // that is not NaN and no zero point, typically): half the table and half the permutes serve.
  bool symmetric;
};

/// The table of parameter `param`'s runs, formed by the loop from the 256 codes.
template <T X, T Y>
HWY_INLINE void FormByteTable(const DequantizeCall& c, int64_t param, ByteTable* table) {
  HWY_ALIGN uint8_t codes[256];
  for (int i = 0; i < 256; ++i) codes[i] = static_cast<uint8_t>(i);
  HWY_ALIGN uint16_t outputs[256];
  DequantizeRun<X, Y>(c, codes, 0, 0, 256, param, outputs);
  __mmask32 asymmetric = 0;
  for (int k = 0; k < 8; ++k) table->words[k] = _mm512_load_si512(outputs + 32 * k);
  for (int k = 0; k < 4; ++k) {
    const __m512i flipped = _mm512_xor_si512(table->words[k], _mm512_set1_epi16(static_cast<int16_t>(0x8000)));
    asymmetric |= _mm512_cmpneq_epi16_mask(flipped, table->words[k + 4]);
  }
  table->symmetric = asymmetric == 0;
}

/// The table's words at 32 indices (codes, one per word).
template <bool kSymmetric>
HWY_INLINE __m512i ByteTableLookup(__m512i index, const ByteTable& table) {
  const __mmask32 bit6 = _mm512_test_epi16_mask(index, _mm512_set1_epi16(64));
  const __m512i from0 = _mm512_permutex2var_epi16(table.words[0], index, table.words[1]);  // codes 0-63
  const __m512i from1 = _mm512_permutex2var_epi16(table.words[2], index, table.words[3]);
  const __m512i low = _mm512_mask_blend_epi16(bit6, from0, from1);
  if constexpr (kSymmetric) {
    // low ^ (index << 8 & 0x8000): code bit 7 into the output's sign.
    return _mm512_ternarylogic_epi32(low, _mm512_slli_epi16(index, 8), _mm512_set1_epi16(static_cast<int16_t>(0x8000)),
                                     0x78);
  } else {
    const __m512i from2 = _mm512_permutex2var_epi16(table.words[4], index, table.words[5]);
    const __m512i from3 = _mm512_permutex2var_epi16(table.words[6], index, table.words[7]);
    const __mmask32 bit7 = _mm512_test_epi16_mask(index, _mm512_set1_epi16(128));
    return _mm512_mask_blend_epi16(bit7, low, _mm512_mask_blend_epi16(bit6, from2, from3));
  }
}

/// y of x's bytes [0, count) at out, two bytes each.
template <bool kSymmetric>
HWY_INLINE void DequantizeByByteTable(const uint8_t* x, int64_t count, const ByteTable& table, uint8_t* out) {
  int64_t i = 0;
  for (; i + 32 <= count; i += 32) {
    const __m512i index = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_si512(out + 2 * i, ByteTableLookup<kSymmetric>(index, table));
  }
  if (i < count) {
    const __mmask32 rest = static_cast<__mmask32>((uint64_t{1} << (count - i)) - 1);
    const __m512i index = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(rest, x + i));
    _mm512_mask_storeu_epi16(out + 2 * i, rest, ByteTableLookup<kSymmetric>(index, table));
  }
}

HWY_INLINE void DequantizeByByteTable(const uint8_t* x, int64_t count, const ByteTable& table, uint8_t* out) {
  if (table.symmetric) {
    DequantizeByByteTable<true>(x, count, table, out);
  } else {
    DequantizeByByteTable<false>(x, count, table, out);
  }
}
#endif

#if HWY_TARGET == HWY_AVX2
// FLOAT4E2M1 by a table of signed products (AVX2). Where a run's scale is finite and its zero point
// absent or +0, the product of each code is the product of the code's magnitude with the scale, its
// sign flipped by the code's sign bit (round to nearest is symmetric; zeros and overflows to ±inf
// included). So a register of the 8 magnitudes' products (Float4Products) and one permute per
// vector, reading the packed bytes, replace the unpacking to a buffer, the decode and the
// multiplication.

/// Whether a run with this scale (after ScaleForOutput, which changes only NaNs) and float zero point
/// (0 without one) takes the table.
HWY_INLINE bool Float4TableApplies(float scale, float zero_point) {
  return std::isfinite(scale) && std::bit_cast<uint32_t>(zero_point) == 0;
}

/// Whether every block k in [0, count) of these arrays takes the table (Float4TableApplies); whole
/// vectors (the arrays have a vector of room past the count).
HWY_INLINE bool Float4TableAppliesToAll(const float* scale, const float* zero_point, int64_t count) {
  const DF df;
  const DU du;
  auto fails = hn::FirstN(df, 0);
  ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
    const auto bad = hn::Or(
        hn::Not(hn::IsFinite(hn::Load(df, scale + k))),
        hn::RebindMask(df, hn::Ne(hn::Load(du, reinterpret_cast<const uint32_t*>(zero_point) + k), hn::Zero(du))));
    fails = hn::Or(fails, hn::And(bad, hn::FirstN(df, n)));
  });
  return hn::AllFalse(df, fails);
}

/// The 8 FLOAT4E2M1 magnitudes, lane k for code k.
HWY_INLINE __m256 Float4Magnitudes() { return DecodeF<Float4E2M1Format>(hn::Iota(DU(), 0)).raw; }

/// The table Float4Lookup reads for a scale (broadcast): lane k holds the product of magnitude k with
/// the scale, its bits XORed with k << 28, which the lookup's own XOR takes out again.
HWY_INLINE __m256 Float4Products(__m256 magnitudes, __m256 scale) {
  const __m256i keys = _mm256_setr_epi32(0, 1 << 28, 2 << 28, 3 << 28, 4 << 28, 5 << 28, 6 << 28, 7 << 28);
  return _mm256_xor_ps(_mm256_mul_ps(magnitudes, scale), _mm256_castsi256_ps(keys));
}

/// 8 packed FLOAT4E2M1 codes at p as the signed products of a Float4Products table.
HWY_INLINE VF Float4Lookup(const uint8_t* p, __m256 products) {
  // Lane k of the 4 bytes broadcast to every lane, shifted right by 4k: code k in the low 4 bits.
  // The permute indexes by its low 3 bits, the magnitude; the code shifted to the top (sign at bit
  // 31, magnitude at 28..30) is XORed in, which flips the sign and cancels the table's key.
  const __m256i right = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i code = _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(bits)), right);
  const __m256 keyed = _mm256_permutevar8x32_ps(products, code);
  return VF{_mm256_xor_ps(keyed, _mm256_castsi256_ps(_mm256_slli_epi32(code, 28)))};
}

/// 32 packed FLOAT4E2M1 codes at `packed` (16 bytes) as the signed products of a Float4Products table, stored at
/// `out` as Y.
template <T Y>
HWY_INLINE void Float4ByTable32(const uint8_t* packed, __m256 products, uint8_t* out) {
  constexpr int64_t kBytesPer8 = 8 * kOutputBytesPer<Y>;  // bytes of y per vector
  const VF v0 = Float4Lookup(packed, products);
  const VF v1 = Float4Lookup(packed + 4, products);
  const VF v2 = Float4Lookup(packed + 8, products);
  const VF v3 = Float4Lookup(packed + 12, products);
  StoreY<Y>(v0, out, 0, 8);
  StoreY<Y>(v1, out + kBytesPer8, 0, 8);
  StoreY<Y>(v2, out + 2 * kBytesPer8, 0, 8);
  StoreY<Y>(v3, out + 3 * kBytesPer8, 0, 8);
}

/// `count` packed FLOAT4E2M1 codes from `packed` (count a multiple of 8) as the signed products of
/// a Float4Products table, stored at `out` as Y.
template <T Y>
HWY_INLINE void Float4ByTable(const uint8_t* packed, int64_t count, __m256 products, uint8_t* out) {
  constexpr int64_t kBytesPer8 = 8 * kOutputBytesPer<Y>;
  const uint8_t* const end = packed + count / 2;
  for (; packed + 16 <= end; packed += 16, out += 4 * kBytesPer8) Float4ByTable32<Y>(packed, products, out);
  for (; packed < end; packed += 4, out += kBytesPer8) StoreY<Y>(Float4Lookup(packed, products), out, 0, 8);
}

/// The whole vectors of per-tensor FLOAT4E2M1 elements [begin, end) (begin a multiple of 4) by the
/// table, where it applies. Returns where it stopped: the elements left (fewer than 8, or all of
/// them) are the caller's. `stream`: y's whole lines with non-temporal stores, a chunk at a time
/// through the stage.
template <T X, T Y>
HWY_NOINLINE int64_t DequantizeFloat4BySignedTable(const DequantizeCall& c, void* y, int64_t begin, int64_t end,
                                                   bool stream) {
  static_assert(X == T::kFloat4E2M1 && HWY_LANES(float) == 8);
  const float s = static_cast<float>(load_real(c.scale, c.scale_type, 0));
  const float zp = c.zero_point != nullptr ? static_cast<float>(load_real(c.zero_point, X, 0)) : 0.0f;
  if (!Float4TableApplies(s, zp)) return begin;
  const __m256 products = Float4Products(Float4Magnitudes(), _mm256_set1_ps(s));
  HWY_ALIGN uint8_t stage[kChunk * kOutputBytesPer<Y>];  // streaming: a chunk's bytes of y
  const int64_t whole_end = begin + (end - begin) / 8 * 8;
  for (int64_t chunk = begin; chunk < whole_end; chunk += kChunk) {
    const int64_t count = std::min(kChunk, whole_end - chunk);
    const PieceOutput piece(stage, stream, OutputAt<Y>(y, chunk));
    Float4ByTable<Y>(static_cast<const uint8_t*>(c.x) + chunk / 2, count, products, piece.Out());
    piece.Finish(static_cast<size_t>(count * kOutputBytesPer<Y>));
  }
  return whole_end;
}

/// Elements [begin, end) of a UniformBlocks plan of FLOAT4E2M1 whose blocks are whole vectors, begin
/// and end multiples of the block (the MXFP4 layout: blocks of 32 along the last axis, FLOAT8E8M0
/// scales): pieces of whole blocks (up to kChunk of them) load their blocks' parameters once, then each block (or
/// its part in the piece) takes the table or, where it does not apply, the unpacked loop with its
/// scale in a register; blocks of 32 that all take it run one straight loop. `stream`: as
/// DequantizeUniformBlocks.
template <T X, T Y>
HWY_NOINLINE void DequantizeFloat4Blocks(const DequantizeCall& c, void* y, int64_t begin, int64_t end, bool stream) {
  static_assert(X == T::kFloat4E2M1 && HWY_LANES(float) == 8);
  const int64_t block = c.plan.block;
  const int64_t span = BlockPieceSpan(block, stream);
  HWY_ALIGN uint8_t codes[kChunk];
  HWY_ALIGN ExpandedParams params;
  HWY_ALIGN uint8_t stage[kChunk * kOutputBytesPer<Y>];  // streaming: a piece's bytes of y
  const uint8_t* const x = static_cast<const uint8_t*>(c.x);
  const __m256 magnitudes = Float4Magnitudes();
  for (int64_t piece = begin; piece < end; piece += span) {
    const int64_t piece_end = std::min(end, piece + span);
    const PieceOutput staged(stage, stream, OutputAt<Y>(y, piece));
    uint8_t* const out = staged.Out();  // output element e at out[e - piece]
    const int64_t first_block = piece / block;
    const int64_t blocks = (piece_end - 1) / block - first_block + 1;
    LoadDequantizeParams<X, Y>(c, first_block, blocks, params.scale, params.zero_point, params.float_zero_point);
    if (block == 32 && Float4TableAppliesToAll(params.scale, params.float_zero_point, blocks)) {
      // The MX block, every one taking the table: one step of four vectors per block, no inner loop.
      const uint8_t* packed = x + piece / 2;
      uint8_t* o = out;
      for (int64_t k = 0; k < blocks; ++k, packed += 16, o += 32 * kOutputBytesPer<Y>) {
        Float4ByTable32<Y>(packed, Float4Products(magnitudes, _mm256_broadcast_ss(params.scale + k)), o);
      }
    } else {
      for (int64_t k = 0; k < blocks; ++k) {
        const int64_t from = std::max(piece, (first_block + k) * block);
        const int64_t to = std::min(piece_end, (first_block + k + 1) * block);
        const float scale = params.scale[k];
        const float zero_point = params.float_zero_point[k];
        if (Float4TableApplies(scale, zero_point)) {
          Float4ByTable<Y>(x + from / 2, to - from, Float4Products(magnitudes, _mm256_set1_ps(scale)),
                           OutputAt<Y>(out, from - piece));
        } else {
          UnpackWholeBytes<4, false>(x + from / 2, (to - from) / 2, codes);
          DequantizeRunWith<X, Y>(c, codes, 0, from - piece, to - from, hn::Set(DF(), scale), hn::Zero(DI()),
                                  hn::Set(DF(), zero_point), out);
        }
      }
    }
    staged.Finish(static_cast<size_t>((piece_end - piece) * kOutputBytesPer<Y>));
  }
}
#endif

/// Elements [begin, end) (begin a multiple of 4) of any plan, chunk by chunk; `stream`: y's whole
/// lines with non-temporal stores. Out of line: the kernel calls it for up to three ranges, and each
/// inlined copy would be the whole general path again.
template <T X, T Y>
HWY_NOINLINE void DequantizeGeneral(const DequantizeCall& c, void* y, int64_t begin, int64_t end, bool stream) {
  constexpr int kBits = InBits(X);
#if HWY_TARGET == HWY_AVX2
  if constexpr (X == T::kFloat4E2M1) {
    if (c.plan.granularity == Granularity::kPerTensor && !c.x_one_per_byte) {  // the table reads packed bytes
      begin = DequantizeFloat4BySignedTable<X, Y>(c, y, begin, end, stream);
    }
  }
#endif
#if HWY_TARGET == HWY_AVX3
  HWY_ALIGN ByteTable byte_table;
  int64_t byte_table_param = -1;  // whose table byte_table holds
  bool by_byte_table = false;
  if constexpr (kByteTable<X, Y>) {
    const bool per_tensor = c.plan.granularity == Granularity::kPerTensor;
    by_byte_table = (per_tensor && end - begin >= kByteTableMinCount) ||
                    (c.plan.granularity == Granularity::kPerAxis && c.plan.inner >= kByteTableMinCount);
    if (by_byte_table && per_tensor && !stream) {
      FormByteTable<X, Y>(c, 0, &byte_table);
      DequantizeByByteTable(static_cast<const uint8_t*>(c.x) + begin, end - begin, byte_table, OutputAt<Y>(y, begin));
      return;
    }
  }
#endif
  if (kBits >= 8 && !stream && c.plan.granularity == Granularity::kPerTensor && end > begin) {
    // One run over the whole range: chunks serve only the unpacking and the stage, and each would
    // load the parameters again.
    DequantizeRun<X, Y>(c, c.x, begin, begin, end - begin, 0, y);
    return;
  }
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  HWY_ALIGN uint8_t stage[kChunk * kOutputBytesPer<Y>];  // streaming: a chunk's bytes of y
  // A per-tensor 2/4-bit zero point (or none: 0) is subtracted as the codes are unpacked
  // (UnpackCodes' offset): the loop then widens int8 differences, one subtraction per vector fewer.
  const bool zero_point_in_codes = kBits < 8 && IsIntegerIn(X) && c.plan.granularity == Granularity::kPerTensor;
  uint8_t zero_point_byte = 0;
  VF per_tensor_scale = hn::Zero(DF());
  if (zero_point_in_codes) {
    if (c.zero_point != nullptr)
      zero_point_byte = static_cast<uint8_t>(load_integer(c.zero_point, c.zero_point_type, 0));
    per_tensor_scale = ScaleForOutput<Y>(hn::Set(DF(), static_cast<float>(load_real(c.scale, c.scale_type, 0))));
  }
  // The 2/4-bit zero points of the last segment read in place, unpacked (its first parameter, count).
  HWY_ALIGN uint8_t zero_point_codes[kBits < 8 && IsIntegerIn(X) ? kChunk : 1];
  int64_t zero_point_first = -1;
  int64_t zero_point_count = 0;
  SegmentCursor cursor(c.plan, begin);
  // Per-axis runs along a long inner dimension keep their scale in a register; everything else that
  // is not per-tensor goes through expanded parameters.
  const bool expand = c.plan.granularity == Granularity::kBlocked ||
                      (c.plan.granularity == Granularity::kPerAxis && c.plan.inner < 256);
  HWY_ALIGN ExpandedParams storage;  // 12 KiB of stack
  // Packed 2/4-bit x with a row of zero points read in place (blocks along an outer axis), where a
  // chunk is one segment (rows of kChunk or more): x is unpacked less its zero points in one pass
  // (UnpackCodes' kLessRow) instead of the chunk unpacked, then the zero points subtracted in a second
  // pass over the bytes. Chunks of shorter rows keep the two passes: unpacked row by row, rows of
  // 256 took 1.16-1.35x the time (the short loops' exits and set-up per row).
  const bool fuse_zero_point_row =
      kBits < 8 && IsIntegerIn(X) && expand && c.zero_point != nullptr && !c.x_one_per_byte;
  // A row-tile task (c.columns, from RowTileTasks: blocks along an outer axis) goes tile by tile
  // across its rows, so that a tile's scales (and unpacked zero points) are read from L1 for each.
  const bool tiles = c.columns.set();
  const int x_bits = c.x_one_per_byte ? 8 : kBits;  // bits of x per element, as it lies
  const bool next_row_into_l2 =
      tiles && PrefetchesIntoL2(static_cast<uint64_t>(c.plan.elements) * static_cast<uint64_t>(x_bits) / 8);
  ChunkOrder order(c.plan, begin, end, kChunk, c.columns);
  for (int64_t chunk, chunk_end; order.next(chunk, chunk_end);) {
    if (tiles) cursor.seek(chunk);
    if (next_row_into_l2) {
      // Each piece's x lies in another page, where the hardware prefetchers start again: the next
      // row's piece of the tile is asked for into L2 now.
      PrefetchIntoL2(reinterpret_cast<uintptr_t>(c.x) + static_cast<uintptr_t>((chunk + c.plan.inner) * x_bits / 8),
                     static_cast<uintptr_t>((chunk_end - chunk) * x_bits / 8));
    }
    const bool fuse_chunk = fuse_zero_point_row && cursor.peek(chunk, chunk_end).count == chunk_end - chunk;
    const PieceOutput piece(stage, stream, OutputAt<Y>(y, chunk));
    const auto finish = [&] { piece.Finish(static_cast<size_t>((chunk_end - chunk) * kOutputBytesPer<Y>)); };
    void* const out = piece.Out();  // output element e at out[e - out_base]
    const int64_t out_base = chunk;
    if constexpr (kBits < 8) {
      // `chunk` is a multiple of 4: whole bytes vectorised, a partial last byte by the scalar rest.
      if constexpr (IsIntegerIn(X)) {
        if (zero_point_in_codes) {
          XCodes<X, true>(c, chunk, chunk_end - chunk, codes, zero_point_byte);
          DequantizeRunWith<T::kInt8, Y>(c, codes, 0, chunk - out_base, chunk_end - chunk, per_tensor_scale,
                                         hn::Zero(DI()), hn::Zero(DF()), out);
          finish();
          continue;
        }
      }
      if (!fuse_chunk) XCodes<X>(c, chunk, chunk_end - chunk, codes);
    }
    if (expand) {
      // Long segments whose float32 scales step by one read their parameters in place; whatever
      // is left of the chunk is expanded.
      const int64_t position = InPlaceSegments(
          cursor, c.scale_type == T::kFloat, chunk, chunk_end, [&](int64_t at, const Segment& s) QDQ_INLINE_LAMBDA {
            if constexpr (kBits < 8 && IsIntegerIn(X)) {
              if (c.zero_point != nullptr) {
                // Blocks along an outer axis use the same row of zero points for a block of rows:
                // unpacked once for all of them, then subtracted from the codes in bytes (two 2/4-bit
                // values differ by an int8), so the loop widens differences, no zero point per vector.
                if (s.param_index != zero_point_first || s.count > zero_point_count) {
                  UnpackCodes<kBits, IsSignedIn(X)>(static_cast<const uint8_t*>(c.zero_point), s.param_index, s.count,
                                                    zero_point_codes);
                  zero_point_first = s.param_index;
                  zero_point_count = s.count;
                }
                if (fuse_chunk) {
                  UnpackCodes<kBits, IsSignedIn(X), false, true>(static_cast<const uint8_t*>(c.x), at, s.count,
                                                                 codes + (at - chunk), 0, zero_point_codes);
                } else {
                  SubtractBytesInPlace(codes + (at - chunk), zero_point_codes, s.count);
                }
                const InPlaceParams<8, true> p(c.scale, nullptr, s.param_index, s.count);
                DequantizeLoop<T::kInt8, Y>(
                    c, codes, at - chunk, at - out_base, s.count, out,
                    [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return ScaleForOutput<Y>(p.Scale(k, n)); },
                    [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return hn::Zero(DI()); },
                    [&](int64_t, size_t) QDQ_INLINE_LAMBDA { return hn::Zero(DF()); });
                return;
              }
            }
            if constexpr (kBits < 8) {
              DequantizeInPlace<X, Y>(c, codes, at - chunk, at - out_base, s.count, s.param_index, out);
            } else {
              DequantizeInPlace<X, Y>(c, c.x, at, at - out_base, s.count, s.param_index, out);
            }
          });
      if (position == chunk_end) {
        finish();
        continue;
      }
      if constexpr (kBits < 8) {
        if (fuse_chunk) XCodes<X>(c, position, chunk_end - position, codes + (position - chunk));
      }
      ExpandParams<IsIntegerIn(X), has_float_zero_point(X)>(
          cursor, position, chunk_end, storage,
          [&](int64_t first, int64_t count, float* scale, int32_t* zp, float* zpf) {
            LoadDequantizeParams<X, Y>(c, first, count, scale, zp, zpf);
          });
      if constexpr (kBits < 8) {
        DequantizeExpanded<X, Y>(c, codes, position - chunk, position - out_base, chunk_end - position, storage, out);
      } else {
        DequantizeExpanded<X, Y>(c, c.x, position, position - out_base, chunk_end - position, storage, out);
      }
      finish();
      continue;
    }
    for (int64_t position = chunk; position < chunk_end;) {
      const Segment s = cursor.next(position, chunk_end);
#if HWY_TARGET == HWY_AVX3
      if (by_byte_table) {
        if (s.param_index != byte_table_param) {
          FormByteTable<X, Y>(c, s.param_index, &byte_table);
          byte_table_param = s.param_index;
        }
        DequantizeByByteTable(static_cast<const uint8_t*>(c.x) + position, s.count, byte_table,
                              static_cast<uint8_t*>(out) + (position - out_base) * kOutputBytesPer<Y>);
        position += s.count;
        continue;
      }
#endif
      if constexpr (kBits < 8) {
        DequantizeRun<X, Y>(c, codes, position - chunk, position - out_base, s.count, s.param_index, out);
      } else {
        DequantizeRun<X, Y>(c, c.x, position, position - out_base, s.count, s.param_index, out);
      }
      position += s.count;
    }
    finish();
  }
}

/// Elements [begin, end) of a UniformBlocks plan, begin and end multiples of the block size: block
/// k uses parameter k. Pieces of whole blocks (up to kChunk of them; kChunk elements when streaming or unpacking; a
/// part of one block, for blocks longer than a chunk) load their parameters a vector at a time, then each block runs
/// with its scale in a register. `stream`: y's whole lines with non-temporal stores. Out of line, as DequantizeGeneral
/// is, so that the kernel's frame holds neither path's buffers while the other runs.
template <T X, T Y>
HWY_NOINLINE void DequantizeUniformBlocks(const DequantizeCall& c, void* y, int64_t begin, int64_t end, bool stream) {
  constexpr int kBits = InBits(X);
  const DF df;
  const DI di;
  const int64_t block = c.plan.block;
  const int64_t span = BlockPieceSpan(block, stream || kBits < 8);
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  HWY_ALIGN ExpandedParams params;
  HWY_ALIGN uint8_t stage[kChunk * kOutputBytesPer<Y>];  // streaming: a piece's bytes of y (then span <= kChunk)
  for (int64_t piece = begin; piece < end; piece += span) {
    const int64_t piece_end = std::min(end, piece + span);
    const PieceOutput staged(stage, stream, OutputAt<Y>(y, piece));
    void* const out = staged.Out();  // output element e at out[e - out_base]
    const int64_t out_base = piece;
    const int64_t first_block = piece / block;
    const int64_t blocks = (piece_end - 1) / block - first_block + 1;
    LoadDequantizeParams<X, Y>(c, first_block, blocks, params.scale, params.zero_point, params.float_zero_point);
    const void* src = c.x;
    int64_t src_base = 0;  // x element e is src[e - src_base]
    if constexpr (kBits < 8) {
      // Pieces start and end on multiples of 4 elements: whole bytes.
      XCodes<X>(c, piece, piece_end - piece, codes);
      src = codes;
      src_base = piece;
    }
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t from = std::max(piece, (first_block + k) * block);
      const int64_t to = std::min(piece_end, (first_block + k + 1) * block);
      VI zp = hn::Zero(di);
      VF zpf = hn::Zero(df);
      if constexpr (IsIntegerIn(X)) zp = hn::Set(di, params.zero_point[k]);
      if constexpr (has_float_zero_point(X)) zpf = hn::Set(df, params.float_zero_point[k]);
      DequantizeRunWith<X, Y>(c, src, from - src_base, from - out_base, to - from, hn::Set(df, params.scale[k]), zp,
                              zpf, out);
    }
    staged.Finish(static_cast<size_t>((piece_end - piece) * kOutputBytesPer<Y>));
  }
}

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
/// The products (v − zp)·scale of the code values v whose low kBits bits are first, first + 1, ...
/// (one per lane; sign-extended for signed x), formed as DequantizeLoop forms each element's: the
/// difference exact in int32, converted, rounded once by the multiplication. The code tables'
/// entries, so that each is the output the loop would give.
/// FLOAT4E2M1 (AVX3's table only): the decoded codes less the float zero point (+0 without one,
/// which leaves every value as the loop's missing subtraction does), times the scale.
template <T X>
HWY_INLINE VF CodeProducts(int32_t first, float scale, int32_t zero_point, float float_zero_point = 0.0f) {
  constexpr int kBits = InBits(X);
  if constexpr (!IsIntegerIn(X)) {
    (void)zero_point;
    const DU du;
    const VF values = DecodeX<X>(hn::And(hn::Iota(du, static_cast<uint32_t>(first)), hn::Set(du, (1u << kBits) - 1)));
    return hn::Mul(hn::Sub(values, hn::Set(DF(), float_zero_point)), hn::Set(DF(), scale));
  }
  (void)float_zero_point;
  const DI di;
  VI values = hn::Iota(di, first);
  if constexpr (IsSignedIn(X)) values = hn::ShiftRight<32 - kBits>(hn::ShiftLeft<32 - kBits>(values));
  return hn::Mul(hn::ConvertTo(DF(), hn::Sub(values, hn::Set(di, zero_point))), hn::Set(DF(), scale));
}
#endif

#if HWY_TARGET == HWY_AVX3
// 2/4-bit integer and FLOAT4E2M1 codes into float16 or bfloat16 by a table of their block's outputs
// (AVX3). A block has at most 16 distinct outputs: the products (v − zp)·s of the 2^kBits code
// values v (FLOAT4E2M1: decoded), formed and rounded to y once per block by the loop's own
// operations, so each output is the one the loop would give. Each vector of 32 outputs is then one
// vpermw of the block's table, indexed by the codes themselves (read in place from the packed
// bytes), in place of the widening, subtraction, conversion, multiplication and rounding of two
// vectors of float32. Zen 4, 64 Ki, int4 blocks of 32 along the last axis (best of 9 alternating
// rounds): 1.40x into float16, 1.58x into bfloat16. Not for float32 y, where the loop has no
// rounding to save: int4 1.05x with zero points, 0.95x without. FLOAT4E2M1 (MXFP4, blocks of 32,
// e8m0 scales) into bfloat16: 1.59x.

/// Whether DequantizeVectorBlocks takes the code table for x and y (blocks of 32 or more elements).
template <T X, T Y>
constexpr bool kCodeTable = (IsIntegerIn(X) || X == T::kFloat4E2M1) && InBits(X) < 8 &&
                            (Y == T::kFloat16 || Y == T::kBFloat16);

/// The block's table: word w holds y for the code value whose low kBits bits are those of w. So any
/// index whose low kBits bits are a code picks its output, whatever the bits above them (vpermw reads
/// the low 5).
template <T X, T Y>
HWY_INLINE __m512i CodeTable(float scale, int32_t zero_point, float float_zero_point) {
  static_assert(kCodeTable<X, Y>);
  constexpr int kBits = InBits(X);
  const VF products = CodeProducts<X>(0, scale, zero_point, float_zero_point);
  const hn::ScalableTag<uint16_t> d16;
  const auto code_of_word = hn::And(hn::Iota(d16, 0), hn::Set(d16, static_cast<uint16_t>((1 << kBits) - 1)));
  if constexpr (Y == T::kFloat16) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return _mm512_permutexvar_epi16(code_of_word.raw, _mm512_castsi256_si512(hn::DemoteTo(dh, products).raw));
  } else {
    // Code j's bfloat16 is the high word of lane j's rounded bits: word 2j + 1.
    const auto high_word = hn::Add(hn::ShiftLeft<1>(code_of_word), hn::Set(d16, uint16_t{1}));
    return _mm512_permutexvar_epi16(high_word.raw, RoundBitsToBF16(products).raw);
  }
}

/// Elements [0, count) (count a multiple of the block) of blocks of 2^shift >= 32 elements, block k
/// with the parameters in params at k, as y at out; x's codes packed (`packed`: element 0's byte) or,
/// with packed null, one per byte in `codes` (XCodes).
template <T X, T Y>
HWY_INLINE void DequantizeByCodeTable(const uint8_t* packed, const uint8_t* codes, int64_t count, int shift,
                                      const VectorBlockParams& params, uint8_t* out) {
  constexpr int kBits = InBits(X);
  constexpr int64_t kLanes = 32;                                            // words of y per vector
  constexpr size_t kPackedBytes = static_cast<size_t>(kLanes * kBits / 8);  // 8 or 16
  // Packed codes: word w of a vector takes the 16-bit unit of the packed bytes that holds its code,
  // shifted right by the code's place in it.
  constexpr int kPerWord = 16 / kBits;
  constexpr int kPerWordShift = kPerWord == 4 ? 2 : 3;
  const hn::ScalableTag<uint16_t> d16;
  const auto word = hn::Iota(d16, 0);
  const __m512i spread = hn::ShiftRight<kPerWordShift>(word).raw;
  const __m512i shifts =
      hn::Mul(hn::And(word, hn::Set(d16, uint16_t{kPerWord - 1})), hn::Set(d16, uint16_t{kBits})).raw;
  const int64_t block = int64_t{1} << shift;
  for (int64_t from = 0, k = 0; from < count; from += block, ++k) {
    // Each type's own zero point; the other array is not filled for it.
    const __m512i table = CodeTable<X, Y>(params.scale[k], IsIntegerIn(X) ? params.zero_point[k] : 0,
                                          IsIntegerIn(X) ? 0.0f : params.float_zero_point[k]);
    for (int64_t i = from; i < from + block; i += kLanes) {
      __m512i index;
      if (packed != nullptr) {
        __m128i in = _mm_setzero_si128();
        std::memcpy(&in, packed + i * kBits / 8, kPackedBytes);
        index = _mm512_srlv_epi16(_mm512_permutexvar_epi16(spread, _mm512_castsi128_si512(in)), shifts);
      } else {
        index = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i)));
      }
      _mm512_storeu_si512(out + 2 * i, _mm512_permutexvar_epi16(index, table));
    }
  }
}
#endif

#if HWY_TARGET == HWY_AVX2
// The same code table on AVX2, as two byte tables for PSHUFB: the low and the high bytes of the 16
// outputs, each in both 128-bit lanes, read from codes one per byte (XCodes). Building it costs
// about twice what AVX3's does, per block. AVX2 on Zen 4, int4 blocked-last-32 at 64 Ki, 11
// alternating rounds: into bfloat16 1.13x (best round) and 1.09x (against the same run's cvt + fma
// loop); into float16 1.01x and 1.06x, within noise, so float16 keeps the loop. Not measured on Zen 3.

template <T X, T Y>
constexpr bool kCodeTable = IsIntegerIn(X) && InBits(X) < 8 && Y == T::kBFloat16;

/// The block's table: byte j of each lane of *low (*high) is the low (high) byte of y for the code
/// value whose low kBits bits are j's.
template <T X, T Y>
HWY_INLINE void CodeTable(float scale, int32_t zero_point, __m256i* low, __m256i* high) {
  const VF p0 = CodeProducts<X>(0, scale, zero_point);
  const VF p1 = CodeProducts<X>(8, scale, zero_point);
  static_assert(Y == T::kBFloat16);
  // The 16 bfloat16 codes in order (the pack interleaves the two vectors' 128-bit halves).
  const __m256i words = _mm256_permute4x64_epi64(
      _mm256_packus_epi32(hn::ShiftRight<16>(RoundBitsToBF16(p0)).raw, hn::ShiftRight<16>(RoundBitsToBF16(p1)).raw),
      0xD8);
  // Per lane: the low bytes of its 8 words, then their high bytes; then the low halves of both lanes
  // in each lane, and the high halves.
  const __m256i split =
      _mm256_shuffle_epi8(words, _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15, 0, 2, 4, 6, 8,
                                                  10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  *low = _mm256_permute4x64_epi64(split, 0x88);
  *high = _mm256_permute4x64_epi64(split, 0xDD);
}

/// As the AVX3 DequantizeByCodeTable, from codes one per byte (XCodes).
template <T X, T Y>
HWY_INLINE void DequantizeByCodeTable(const uint8_t* codes, int64_t count, int shift, const VectorBlockParams& params,
                                      uint8_t* out) {
  const int64_t block = int64_t{1} << shift;
  const __m256i low_bits = _mm256_set1_epi8(static_cast<char>((1 << InBits(X)) - 1));
  for (int64_t from = 0, k = 0; from < count; from += block, ++k) {
    __m256i low, high;
    CodeTable<X, Y>(params.scale[k], params.zero_point[k], &low, &high);
    for (int64_t i = from; i < from + block; i += 32) {
      __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + i));
      // Signed codes are sign-extended bytes, whose set top bit would make PSHUFB write 0.
      if constexpr (IsSignedIn(X)) index = _mm256_and_si256(index, low_bits);
      const __m256i lo = _mm256_shuffle_epi8(low, index);
      const __m256i hi = _mm256_shuffle_epi8(high, index);
      const __m256i w0 = _mm256_unpacklo_epi8(lo, hi);  // elements 0-7 and 16-23
      const __m256i w1 = _mm256_unpackhi_epi8(lo, hi);  // elements 8-15 and 24-31
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), _mm256_permute2x128_si256(w0, w1, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i + 32), _mm256_permute2x128_si256(w0, w1, 0x31));
    }
  }
}
#endif

/// Elements [begin, end) of a plan with VectorBlockShift `shift` (blocks of one to eight vectors),
/// begin and end multiples of the block size: pieces of whole blocks (up to VectorBlockParams::kBlocks of them; kChunk
/// elements when streaming or unpacking) load their blocks' parameters once, then one flat loop runs four vectors at a
/// time, each vector with its block's broadcast scale and zero point. `stream`: y's whole lines with non-temporal
/// stores, each piece through the stage. Out of line: its parameter arrays and stage stay off the general path's frame.
template <T X, T Y>
HWY_NOINLINE void DequantizeVectorBlocks(const DequantizeCall& c, void* y, int64_t begin, int64_t end, int shift,
                                         bool stream) {
  constexpr int kBits = InBits(X);
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  HWY_ALIGN VectorBlockParams params;
  HWY_ALIGN uint8_t stage[kChunk * kOutputBytesPer<Y>];  // streaming or staged: a piece's bytes of y
  params.shift = shift;
  int vector_shift = 0;  // log2 of the lanes of a vector
  while ((int64_t{1} << vector_shift) < static_cast<int64_t>(hn::Lanes(DF()))) ++vector_shift;
  // A float32 y off a line boundary has every 64-byte store cross a cache line (1.6x the time in
  // cache on the Intel Xeon): the pieces, which start on blocks of whole vectors and so on the same
  // offset, are written to the stage and copied (memcpy stores on whole vectors), as for streaming,
  // where the target measured that faster (staged_stores.hpp: on Zen 4 it ran 0.64-0.68x as fast).
  // (32-byte vectors cross a line at most every other store: staged, AVX2 read 0.72-0.85x.)
  const auto vector_bytes = static_cast<uintptr_t>(hn::Lanes(DF()) * sizeof(float));
  const bool staged = Y == T::kFloat && !stream && vector_bytes >= kCacheLine &&
                      reinterpret_cast<uintptr_t>(OutputAt<Y>(y, begin)) % vector_bytes != 0 &&
                      stages_misaligned_output(HWY_TARGET);
  const int64_t span = VectorBlockParams::PieceSpan(shift, stream || staged || kBits < 8);
  for (int64_t piece = begin; piece < end; piece += span) {
    const int64_t count = std::min(span, end - piece);
    LoadDequantizeParams<X, Y>(c, piece >> shift, count >> shift, params.scale, params.zero_point,
                               params.float_zero_point);
    const PieceOutput output(stage, stream, OutputAt<Y>(y, piece), staged);
#if HWY_TARGET == HWY_AVX3
    if constexpr (kCodeTable<X, Y>) {
      if (shift >= 5) {
        // Packed codes are read in place; codes given one per byte are expanded first.
        const uint8_t* packed = nullptr;
        if (c.x_one_per_byte) {
          XCodes<X>(c, piece, count, codes);
        } else {
          packed = static_cast<const uint8_t*>(c.x) + piece * kBits / 8;
        }
        DequantizeByCodeTable<X, Y>(packed, codes, count, shift, params, static_cast<uint8_t*>(output.Out()));
        output.Finish(static_cast<size_t>(count * kOutputBytesPer<Y>));
        continue;
      }
    }
#endif
    const void* src = c.x;
    int64_t src_index = piece;
    if constexpr (kBits < 8) {
      // Pieces start and end on whole blocks of at least 4 elements: whole bytes.
      XCodes<X>(c, piece, count, codes);
      src = codes;
      src_index = 0;
    }
#if HWY_TARGET == HWY_AVX2
    if constexpr (kCodeTable<X, Y>) {
      if (shift >= 5) {
        DequantizeByCodeTable<X, Y>(codes, count, shift, params, static_cast<uint8_t*>(output.Out()));
        output.Finish(static_cast<size_t>(count * kOutputBytesPer<Y>));
        continue;
      }
    }
#endif
    const auto scale = [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return params.Scale(k, n); };
    const auto zero_point = [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return params.ZeroPoint(k, n); };
    const auto float_zero_point = [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA { return params.FloatZeroPoint(k, n); };
    // Integer x without zero points (symmetric weights, the common int4 layout) subtract a constant
    // zero, which the compiler drops, rather than a broadcast of zeros loaded per block.
    const auto no_zero_point = [](int64_t, size_t) QDQ_INLINE_LAMBDA { return hn::Zero(DI()); };
    const auto loop = [&](auto factor_in_scale, auto vectors_per_block) QDQ_INLINE_LAMBDA {
      if constexpr (IsIntegerIn(X)) {
        if (c.zero_point == nullptr) {
          DequantizeLoop<X, Y, decltype(scale)&, decltype(no_zero_point)&, decltype(float_zero_point)&,
                         decltype(factor_in_scale)::value, decltype(vectors_per_block)::value>(
              c, src, src_index, 0, count, output.Out(), scale, no_zero_point, float_zero_point, !stream && !staged);
          return;
        }
      }
      DequantizeLoop<X, Y, decltype(scale)&, decltype(zero_point)&, decltype(float_zero_point)&,
                     decltype(factor_in_scale)::value, decltype(vectors_per_block)::value>(
          c, src, src_index, 0, count, output.Out(), scale, zero_point, float_zero_point, !stream && !staged);
    };
    // Pieces start on a block, so the loop's aligned groups of two vectors lie in one block of two
    // vectors or more, and its steps of four in one of four or more.
    const auto with_groups = [&](auto factor_in_scale) QDQ_INLINE_LAMBDA {
      const int vectors_shift = shift - vector_shift;
      if (vectors_shift >= 2) {
        loop(factor_in_scale, std::integral_constant<int, 4>());
      } else if (vectors_shift == 1) {
        loop(factor_in_scale, std::integral_constant<int, 2>());
      } else {
        loop(factor_in_scale, std::integral_constant<int, 1>());
      }
    };
    if constexpr (kFoldsDecodeFactor<X>) {
      if (FoldDecodeFactor<X>(params.scale, count >> shift)) {
        with_groups(std::true_type());
      } else {
        with_groups(std::false_type());
      }
    } else {
      with_groups(std::false_type());
    }
    output.Finish(static_cast<size_t>(count * kOutputBytesPer<Y>));
  }
}

/// One task, elements [begin, end): shared by both StoreModes (out of line, so that the kernels of
/// the two modes are one copy of the code).
template <T X, T Y>
HWY_NOINLINE void DequantizeTask(const DequantizeCall& c, void* y, int64_t begin, int64_t end, bool stream) {
  if (c.columns.set()) {  // a row-tile task: blocks along an outer axis, which only the general path reads
    DequantizeGeneral<X, Y>(c, y, begin, end, stream);
    return;
  }
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
#if HWY_TARGET == HWY_AVX2
  if constexpr (X == T::kFloat4E2M1) {
    if (UniformBlocks(c.plan, lanes) && !c.x_one_per_byte) {  // its table reads packed bytes
      // Whole blocks in the middle; a partial block at either end of the task goes the general way.
      const WholeBlocks whole = WholeBlocksOf(begin, end, c.plan.block, c.plan.block);
      DequantizeGeneral<X, Y>(c, y, begin, whole.lo, stream);
      DequantizeFloat4Blocks<X, Y>(c, y, whole.lo, whole.hi, stream);
      DequantizeGeneral<X, Y>(c, y, whole.hi, end, stream);
      return;
    }
  }
#endif
  const int shift = VectorBlockShift(c.plan, lanes, kMaxFlatBlockVectors * lanes);
  if (shift >= 0) {
    // Whole blocks in the middle; a partial block at either end of the task goes the general way.
    const WholeBlocks whole = WholeBlocksOf(begin, end, c.plan.block, c.plan.block);
    DequantizeGeneral<X, Y>(c, y, begin, whole.lo, stream);
    DequantizeVectorBlocks<X, Y>(c, y, whole.lo, whole.hi, shift, stream);
    DequantizeGeneral<X, Y>(c, y, whole.hi, end, stream);
    return;
  }
  if (UniformBlocks(c.plan, 4 * lanes)) {
    // Whole blocks in the middle; a partial block at either end of the task goes the general way.
    const WholeBlocks whole = WholeBlocksOf(begin, end, c.plan.block, c.plan.block);
    DequantizeGeneral<X, Y>(c, y, begin, whole.lo, stream);
    DequantizeUniformBlocks<X, Y>(c, y, whole.lo, whole.hi, stream);
    DequantizeGeneral<X, Y>(c, y, whole.hi, end, stream);
    return;
  }
  DequantizeGeneral<X, Y>(c, y, begin, end, stream);
}

template <T X, T Y, StoreMode kStores>
void DequantizeKernelT(const DequantizeCall& c, void* y, int64_t begin, int64_t end) {
  DequantizeTask<X, Y>(c, y, begin, end, kStores == StoreMode::kStream);
  // The task's last held-back bytes, then its non-temporal stores ordered before whatever reports it
  // done.
  if constexpr (kStores == StoreMode::kStream) {
    FlushStreamCarry();
    hwy::FlushStream();
  }
}

/// The kernel of family kFamily for the call and stores, or nullptr where dequantize_kernels.inc
/// lists none for its (x, y) in this family or the vector kernels do not read its parameters.
template <DequantizeFamily kFamily>
DequantizeKernel ChooseFamilyKernel(const DequantizeCall& c, StoreMode stores) {
  if (!IsVectorScaleType(c.scale_type)) return nullptr;
  const bool zero_point_used = IsIntegerIn(c.x_type) || has_float_zero_point(c.x_type);
  if (c.zero_point != nullptr && zero_point_used && c.zero_point_type != c.x_type) return nullptr;
#define QDQ_DEQUANTIZE_KERNEL(FAMILY, X, Y)                                                     \
  if constexpr (kFamily == DequantizeFamily::k##FAMILY) {                                       \
    if (c.x_type == T::X && c.y_type == T::Y) {                                                 \
      return stores == StoreMode::kStream ? &DequantizeKernelT<T::X, T::Y, StoreMode::kStream>  \
                                          : &DequantizeKernelT<T::X, T::Y, StoreMode::kNormal>; \
    }                                                                                           \
  }
#include "kernels/simd/dequantize_kernels.inc"
#undef QDQ_DEQUANTIZE_KERNEL
  return nullptr;
}

}  // namespace
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_DEQUANTIZE_INL_H_
