// The one place where qdq converts between float32/float64 and its narrow float formats: float16,
// bfloat16, the four float8 formats, float4e2m1 and float8e8m0. Everything is trait-driven: a format
// is (exponent bits, mantissa bits, bias, how it spells NaN/inf), and one encoder and one decoder
// serve all of them.
//
// Encoding rounds the exact source value once (round to nearest, ties to even, gradual underflow)
// and follows qdq's cast tables (README "Policy"): saturate=1 clamps finite overflow to ±max; ±inf
// becomes ±max (E4M3FN, E5M2) or NaN 0x80 (the FNUZ formats); FLOAT4E2M1 always saturates and maps
// NaN to +6; float16/bfloat16 overflow to ±inf.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace qdq::detail {

/// How a format spells its special values.
enum class SpecialValues {
  kIeee,  // all-ones exponent: inf (mantissa 0) or NaN; −0 exists (float16, bfloat16, E5M2)
  kFn,    // no inf; only S.1111.111 is NaN; −0 exists (E4M3FN)
  kFnuz,  // no inf, no −0; 0x80 is the single NaN (E4M3FNUZ, E5M2FNUZ)
  kNone,  // no inf, no NaN; −0 exists (FLOAT4E2M1)
};

template <int ExpBits, int ManBits, int Bias, SpecialValues Specials>
struct MiniFloat {
  static constexpr int kExpBits = ExpBits;
  static constexpr int kManBits = ManBits;
  static constexpr int kBias = Bias;
  static constexpr SpecialValues kSpecials = Specials;
  static constexpr int kBits = 1 + ExpBits + ManBits;
  static constexpr uint32_t kSignBit = 1u << (ExpBits + ManBits);
  static constexpr uint32_t kMagnitudeMask = kSignBit - 1;
  static constexpr uint32_t kExpFieldMax = (1u << ExpBits) - 1;
  static constexpr uint32_t kManMask = (1u << ManBits) - 1;
  // Largest finite magnitude code.
  static constexpr uint32_t kMaxCode = Specials == SpecialValues::kIeee ? ((kExpFieldMax - 1) << ManBits) | kManMask
                                       : Specials == SpecialValues::kFn ? kMagnitudeMask - 1
                                                                        : kMagnitudeMask;
  static constexpr bool kHasNegativeZero = Specials != SpecialValues::kFnuz;
};

using Float16Format = MiniFloat<5, 10, 15, SpecialValues::kIeee>;
using BFloat16Format = MiniFloat<8, 7, 127, SpecialValues::kIeee>;
using Float8E4M3FNFormat = MiniFloat<4, 3, 7, SpecialValues::kFn>;
using Float8E4M3FNUZFormat = MiniFloat<4, 3, 8, SpecialValues::kFnuz>;
using Float8E5M2Format = MiniFloat<5, 2, 15, SpecialValues::kIeee>;
using Float8E5M2FNUZFormat = MiniFloat<5, 2, 16, SpecialValues::kFnuz>;
using Float4E2M1Format = MiniFloat<2, 1, 1, SpecialValues::kNone>;

// Bit-level view of the two source formats the encoder accepts.
template <class Source>
struct SourceBits;
template <>
struct SourceBits<float> {
  using Uint = uint32_t;
  static constexpr int kManBits = 23;
  static constexpr int kBias = 127;
  static constexpr int kExpBits = 8;
};
template <>
struct SourceBits<double> {
  using Uint = uint64_t;
  static constexpr int kManBits = 52;
  static constexpr int kBias = 1023;
  static constexpr int kExpBits = 11;
};

/// The NaN code a format produces for a NaN of the given sign.
template <class F>
constexpr uint32_t nan_code(bool negative) {
  if constexpr (F::kSpecials == SpecialValues::kIeee) {
    // A quiet NaN: all-ones exponent, top mantissa bit set.
    return (negative ? F::kSignBit : 0u) | (F::kExpFieldMax << F::kManBits) | (1u << (F::kManBits - 1));
  } else if constexpr (F::kSpecials == SpecialValues::kFn) {
    return (negative ? F::kSignBit : 0u) | F::kMagnitudeMask;
  } else if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    return F::kSignBit;
  } else {
    return F::kMaxCode;  // FLOAT4E2M1 has no NaN: the technical note maps NaN to +6.
  }
}

/// Encodes `value` (float or double) into format F, rounding the exact value once to nearest-even.
/// `saturate` only matters for float8: finite overflow gives ±max instead of inf/NaN.
template <class F, class Source>
constexpr uint32_t encode(Source value, bool saturate) {
  using S = SourceBits<Source>;
  using U = typename S::Uint;
  const U bits = std::bit_cast<U>(value);
  const bool negative = (bits >> (S::kExpBits + S::kManBits)) != 0;
  const uint32_t sign = negative ? F::kSignBit : 0u;
  const U magnitude = bits & ((U(1) << (S::kExpBits + S::kManBits)) - 1);
  const U exp_field = magnitude >> S::kManBits;
  const U exp_all_ones = (U(1) << S::kExpBits) - 1;

  if (exp_field == exp_all_ones) {
    const U payload = magnitude & ((U(1) << S::kManBits) - 1);
    if (payload != 0) {
      if constexpr (F::kBits == 16 && std::is_same_v<Source, float>) {
        // Keep the top payload bits as NumPy (float16) and ml_dtypes (bfloat16, forced quiet) do.
        uint32_t top = static_cast<uint32_t>(payload >> (S::kManBits - F::kManBits));
        if constexpr (F::kExpBits == 8) top |= 1u << (F::kManBits - 1);
        if (top == 0) top = 1;
        return sign | (F::kExpFieldMax << F::kManBits) | top;
      }
      return nan_code<F>(negative);
    }
    // ±inf.
    if constexpr (F::kSpecials == SpecialValues::kIeee) {
      return saturate ? sign | F::kMaxCode : sign | (F::kExpFieldMax << F::kManBits);
    } else if constexpr (F::kSpecials == SpecialValues::kFn) {
      return saturate ? sign | F::kMaxCode : nan_code<F>(negative);
    } else if constexpr (F::kSpecials == SpecialValues::kFnuz) {
      return nan_code<F>(negative);  // technical note: ±inf → NaN even with saturation
    } else {
      return sign | F::kMaxCode;
    }
  }
  if (magnitude == 0) return F::kHasNegativeZero ? sign : 0u;

  // value = significand · 2^exponent0, significand an integer.
  U significand;
  int exponent0;
  if (exp_field == 0) {
    significand = magnitude;
    exponent0 = 1 - S::kBias - S::kManBits;
  } else {
    significand = (magnitude & ((U(1) << S::kManBits) - 1)) | (U(1) << S::kManBits);
    exponent0 = static_cast<int>(exp_field) - S::kBias - S::kManBits;
  }
  const int top_bit = std::numeric_limits<U>::digits - 1 - std::countl_zero(significand);
  const int exponent = exponent0 + top_bit;  // floor(log2(|value|))
  // The exponent of one unit in the last place of the target at this magnitude.
  const int quantum = (exponent > 1 - F::kBias ? exponent : 1 - F::kBias) - F::kManBits;
  const int shift = quantum - exponent0;  // always > 0: the target is narrower than the source
  uint64_t n;
  if (shift >= std::numeric_limits<U>::digits) {
    n = 0;  // below half of the smallest subnormal
  } else {
    const U kept = significand >> shift;
    const U rest = significand & ((U(1) << shift) - 1);
    const U half = U(1) << (shift - 1);
    n = static_cast<uint64_t>(kept) + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
  }
  if (n == 0) return F::kHasNegativeZero ? sign : 0u;

  int64_t target_exp;
  uint64_t mantissa;
  int q = quantum;
  if (n == (uint64_t(1) << (F::kManBits + 1))) {  // rounding carried into the next binade
    n >>= 1;
    ++q;
  }
  if (n < (uint64_t(1) << F::kManBits)) {
    target_exp = 0;  // subnormal
    mantissa = n;
  } else {
    target_exp = int64_t(q) + F::kManBits + F::kBias;
    mantissa = n - (uint64_t(1) << F::kManBits);
  }
  const uint64_t max_exp = F::kMaxCode >> F::kManBits;
  const uint64_t max_man = F::kMaxCode & F::kManMask;
  if (target_exp > int64_t(max_exp) || (target_exp == int64_t(max_exp) && mantissa > max_man)) {
    if (saturate || F::kSpecials == SpecialValues::kNone) return sign | F::kMaxCode;
    if constexpr (F::kSpecials == SpecialValues::kIeee) return sign | (F::kExpFieldMax << F::kManBits);
    return nan_code<F>(negative);
  }
  return sign | static_cast<uint32_t>(target_exp << F::kManBits) | static_cast<uint32_t>(mantissa);
}

/// Decodes a code of format F to float32, exactly. NaN codes give a quiet NaN of the code's sign
/// (FNUZ's 0x80 gives the negative NaN, as ml_dtypes does).
template <class F>
constexpr float decode(uint32_t code) {
  code &= (F::kSignBit << 1) - 1;
  const bool negative = (code & F::kSignBit) != 0;
  const uint32_t sign = negative ? 0x80000000u : 0u;
  const uint32_t exp_field = (code & F::kMagnitudeMask) >> F::kManBits;
  const uint32_t man = code & F::kManMask;
  if constexpr (F::kSpecials == SpecialValues::kFnuz) {
    if (code == F::kSignBit) return std::bit_cast<float>(0xFFC00000u);
  } else if constexpr (F::kSpecials == SpecialValues::kFn) {
    if ((code & F::kMagnitudeMask) == F::kMagnitudeMask) return std::bit_cast<float>(sign | 0x7FC00000u);
  } else if constexpr (F::kSpecials == SpecialValues::kIeee) {
    if (exp_field == F::kExpFieldMax) {
      if (man != 0) {
        // float16/bfloat16 NaNs keep their payload; float8 NaNs decode to the default quiet NaN.
        if constexpr (F::kBits == 16) return std::bit_cast<float>(sign | 0x7FC00000u | (man << (23 - F::kManBits)));
        return std::bit_cast<float>(sign | 0x7FC00000u);
      }
      return std::bit_cast<float>(sign | 0x7F800000u);
    }
  }
  if constexpr (F::kExpBits == 8) {
    // Same exponent range as float32 (bfloat16): the code is the top of a float32.
    return std::bit_cast<float>(code << (32 - F::kBits));
  } else {
    if (exp_field == 0) {
      if (man == 0) return std::bit_cast<float>(sign);
      // Subnormal: normalise so that float32 holds it as a normal number.
      const int top = 31 - std::countl_zero(man);
      const uint32_t exp32 = static_cast<uint32_t>(1 - F::kBias - F::kManBits + top + 127);
      const uint32_t man32 = (man - (1u << top)) << (23 - top);
      return std::bit_cast<float>(sign | (exp32 << 23) | man32);
    }
    const uint32_t exp32 = exp_field - F::kBias + 127;
    return std::bit_cast<float>(sign | (exp32 << 23) | (man << (23 - F::kManBits)));
  }
}

/// FLOAT8E8M0: code e means 2^(e − 127); 0xFF is NaN; no sign, no zero. Exact in float32.
constexpr float decode_e8m0(uint32_t code) {
  code &= 0xFF;
  if (code == 0xFF) return std::bit_cast<float>(0x7FC00000u);
  if (code == 0) return std::bit_cast<float>(0x00400000u);  // 2^-127, a float32 subnormal
  return std::bit_cast<float>(code << 23);
}

/// float32 → FLOAT8E8M0 as ml_dtypes' astype does it (nearest, ties up; zero, negatives, inf and NaN
/// → 0xFF; tiny positives → 0x00). Used by tools that create e8m0 scales, never by the operators.
constexpr uint32_t encode_e8m0(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits >> 31) != 0 || (bits & 0x7FFFFFFFu) == 0 || (bits & 0x7F800000u) == 0x7F800000u) return 0xFF;
  const uint32_t exp_field = bits >> 23;
  if (exp_field == 0) return bits >= 0x00600000u ? 0x01 : 0x00;  // subnormals: nearest of 2^-127, 2^-126
  const uint32_t rounded = exp_field + ((bits & 0x00400000u) ? 1 : 0);
  return rounded >= 0xFF ? 0xFF : rounded;
}

// Convenience wrappers for the two 16-bit formats every kernel needs.
constexpr uint16_t float_to_half(float v) { return static_cast<uint16_t>(encode<Float16Format>(v, false)); }
constexpr uint16_t float_to_bfloat16(float v) { return static_cast<uint16_t>(encode<BFloat16Format>(v, false)); }
constexpr float half_to_float(uint16_t h) { return decode<Float16Format>(h); }
constexpr float bfloat16_to_float(uint16_t b) { return decode<BFloat16Format>(b); }

/// Rounds a value to the nearest value of format F (RNE), returned exactly as a float.
template <class F, class Source>
constexpr float round_to(Source v) {
  return decode<F>(encode<F>(v, false));
}

}  // namespace qdq::detail
