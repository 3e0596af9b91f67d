// The SIMD building blocks tested one by one on every compiled target this CPU runs, against their
// scalar definitions: every float encoder over a dense set of float32 inputs, every decoder over all
// codes, every 2/4-bit packer and unpacker over all code patterns, and the saturating stores. The
// end-to-end kernel tests (simd_kernels_test.cpp) catch a wrong result; these name the helper.
//
// Compiled once per Highway target (foreach_target.h); the tests are parametrised over the targets
// and named by them (SimdHelpersTest.EncodeEveryFormat/AVX2), as Highway's HWY_EXPORT_AND_TEST_P.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "unit/simd_helpers_test.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hwy/highway.h"
#include "kernels/simd/convert-inl.h"
#include "kernels/simd/load_store-inl.h"
#include "kernels/simd/pack-inl.h"
#include "kernels/simd/params-inl.h"
#include "kernels/simd/simd_kernels.hpp"
#include "kernels/simd/vectors-inl.h"
#include "types/float_formats.hpp"
#include "types/packing.hpp"

#ifndef QDQ_SIMD_HELPERS_TEST_ONCE_
#define QDQ_SIMD_HELPERS_TEST_ONCE_
namespace qdq::detail::simd::helpers_test {

/// float32 inputs for the encoders: every pattern of the high 16 bits (every sign, exponent and
/// top mantissa bits, so every rounding boundary of the 8-bit and smaller formats), each with low
/// bits that sit on, below and above the rounding ties of float16 (bit 12) and bfloat16 (bit 15).
inline std::vector<float> EncoderInputs() {
  static const uint32_t kLow[] = {0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x2000,
                                  0x3000, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  std::vector<float> inputs;
  inputs.reserve(65536 * std::size(kLow));
  for (uint32_t high = 0; high < 65536; ++high) {
    for (uint32_t low : kLow) {
      const uint32_t bits = high << 16 | low;
      float v;
      std::memcpy(&v, &bits, 4);
      inputs.push_back(v);
    }
  }
  return inputs;
}

inline uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

}  // namespace qdq::detail::simd::helpers_test
#endif  // QDQ_SIMD_HELPERS_TEST_ONCE_

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

/// EncodeF<F>(v, saturate) against encode<F>(float, saturate) on every input, both saturation modes.
template <class F>
void CheckEncode(const char* name, const std::vector<float>& inputs) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  HWY_ALIGN uint32_t got[HWY_MAX_BYTES / 4];
  for (bool saturate : {false, true}) {
    int failures = 0;
    for (size_t i = 0; i + lanes <= inputs.size(); i += lanes) {
      hn::Store(EncodeF<F>(hn::LoadU(df, inputs.data() + i), saturate), DU(), got);
      for (size_t j = 0; j < lanes; ++j) {
        const uint32_t expected = encode<F>(inputs[i + j], saturate);
        if (got[j] != expected && ++failures <= 5) {
          ADD_FAILURE() << name << " saturate=" << saturate << ": float32 bits 0x" << std::hex
                        << helpers_test::Bits(inputs[i + j]) << " encodes to 0x" << got[j] << ", scalar 0x" << expected;
        }
      }
    }
    EXPECT_EQ(failures, 0) << name << " saturate=" << saturate;
  }
}

void TestEncodeEveryFormat() {
  const std::vector<float> inputs = helpers_test::EncoderInputs();
  CheckEncode<Float16Format>("FLOAT16", inputs);
  CheckEncode<BFloat16Format>("BFLOAT16", inputs);
  CheckEncode<Float8E4M3FNFormat>("FLOAT8E4M3FN", inputs);
  CheckEncode<Float8E4M3FNUZFormat>("FLOAT8E4M3FNUZ", inputs);
  CheckEncode<Float8E5M2Format>("FLOAT8E5M2", inputs);
  CheckEncode<Float8E5M2FNUZFormat>("FLOAT8E5M2FNUZ", inputs);
  CheckEncode<Float4E2M1Format>("FLOAT4E2M1", inputs);
}

/// EncodeNarrowMagnitude's uncapped codes (kUncapped) lie in [-base, highest], the range that the
/// byte stores rely on, and completed as StoreSignedBytes4 and StoreSignedNibbles4 complete them (a
/// signed saturating narrowing to a byte, plus base, then the unsigned minimum with cap) are the
/// capped codes, with values of the same sign, on every input (kFinite: every finite input).
template <class F, bool kFinite>
void CheckUncapped(const char* name, const std::vector<float>& inputs, bool saturate, int32_t base, uint32_t cap,
                   int32_t highest) {
  const DF df;
  const DI di;
  const DU du;
  const size_t lanes = hn::Lanes(df);
  HWY_ALIGN int32_t uncapped[HWY_MAX_BYTES / 4];
  HWY_ALIGN uint32_t capped[HWY_MAX_BYTES / 4];
  HWY_ALIGN float replaced_uncapped[HWY_MAX_BYTES / 4];
  HWY_ALIGN float replaced_capped[HWY_MAX_BYTES / 4];
  int failures = 0;
  for (size_t i = 0; i + lanes <= inputs.size(); i += lanes) {
    VF a = hn::LoadU(df, inputs.data() + i);
    VF b = a;
    VF scaled;
    hn::Store(hn::BitCast(di, EncodeNarrowMagnitude<F, kFinite, true>(a, saturate, scaled)), di, uncapped);
    hn::Store(EncodeNarrowMagnitude<F>(b, saturate), du, capped);
    hn::Store(a, df, replaced_uncapped);
    hn::Store(b, df, replaced_capped);
    for (size_t j = 0; j < lanes; ++j) {
      const float v = inputs[i + j];
      if (kFinite && !std::isfinite(v)) continue;
      const int32_t u = uncapped[j];
      const uint32_t completed =
          std::min<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(std::clamp(u, -128, 127)) + base), cap);
      const bool ok = u >= -base && u <= highest && completed == capped[j] &&
                      std::signbit(replaced_uncapped[j]) == std::signbit(replaced_capped[j]);
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << name << " saturate=" << saturate << ": float32 bits 0x" << std::hex << helpers_test::Bits(v)
                      << std::dec << " uncapped " << u << " completes to " << completed << ", capped " << capped[j];
      }
    }
  }
  EXPECT_EQ(failures, 0) << name << " saturate=" << saturate;
}

/// CheckUncapped for float8 format F where its codes end in one minimum (Float8CodeCap).
template <class F>
void CheckUncappedFloat8(const char* name, const std::vector<float>& inputs) {
  for (bool saturate : {false, true}) {
    if (const uint32_t cap = Float8CodeCap<F>(saturate); cap != 0)
      CheckUncapped<F, false>(name, inputs, saturate, Float8CodeBase<F>(), cap, 1 << 11);
    if (const uint32_t cap = Float8CodeCap<F, true>(saturate); cap != 0)
      CheckUncapped<F, true>(name, inputs, saturate, Float8CodeBase<F>(), cap, 1 << 11);
  }
}

void TestUncappedCodesCompleteOnBytes() {
  const std::vector<float> inputs = helpers_test::EncoderInputs();
  CheckUncappedFloat8<Float8E4M3FNFormat>("FLOAT8E4M3FN", inputs);
  CheckUncappedFloat8<Float8E4M3FNUZFormat>("FLOAT8E4M3FNUZ", inputs);
  CheckUncappedFloat8<Float8E5M2Format>("FLOAT8E5M2", inputs);
  CheckUncappedFloat8<Float8E5M2FNUZFormat>("FLOAT8E5M2FNUZ", inputs);
  CheckUncapped<Float4E2M1Format, false>("FLOAT4E2M1", inputs, true, 2, 7, 256);
}

/// The 16-bit fast forms (F16C or bit arithmetic): EncodeHalf and RoundToF against the scalar
/// encoder on every input that is not a signalling NaN (which they never receive: see convert-inl.h).
template <class F>
void CheckHalf(const char* name, const std::vector<float>& inputs) {
  const DF df;
  const size_t lanes = hn::Lanes(df);
  HWY_ALIGN uint32_t codes[HWY_MAX_BYTES / 4];
  HWY_ALIGN float rounded[HWY_MAX_BYTES / 4];
  int failures = 0;
  for (size_t i = 0; i + lanes <= inputs.size(); i += lanes) {
    const VF v = hn::LoadU(df, inputs.data() + i);
    hn::Store(EncodeHalf<F>(v), DU(), codes);
    hn::Store(RoundToF<F>(v), df, rounded);
    for (size_t j = 0; j < lanes; ++j) {
      const uint32_t bits = helpers_test::Bits(inputs[i + j]);
      const bool signalling_nan =
          (bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0 && (bits & 0x00400000u) == 0;
      if (signalling_nan) continue;
      const uint32_t expected = encode<F>(inputs[i + j], false);
      const uint32_t expected_rounded = helpers_test::Bits(decode<F>(expected));
      const bool nan = (expected & F::kMagnitudeMask) > (F::kExpFieldMax << F::kManBits);
      // RoundToF's NaNs need only stay NaN (the quotient path depends on nothing else).
      const bool rounded_ok = nan ? rounded[j] != rounded[j] : helpers_test::Bits(rounded[j]) == expected_rounded;
      if ((codes[j] != expected || !rounded_ok) && ++failures <= 5) {
        ADD_FAILURE() << name << ": float32 bits 0x" << std::hex << bits << " EncodeHalf 0x" << codes[j]
                      << " RoundToF 0x" << helpers_test::Bits(rounded[j]) << ", scalar 0x" << expected;
      }
    }
  }
  EXPECT_EQ(failures, 0) << name;
}

void TestEncodeHalfFastForms() {
  const std::vector<float> inputs = helpers_test::EncoderInputs();
  CheckHalf<Float16Format>("FLOAT16", inputs);
  CheckHalf<BFloat16Format>("BFLOAT16", inputs);
}

/// DecodeF<F> against decode<F> on every code, with junk above the code's bits (ignored), bit for
/// bit (NaN payloads included).
template <class F>
void CheckDecode(const char* name) {
  const DU du;
  const size_t lanes = hn::Lanes(du);
  constexpr uint32_t kCodes = 1u << F::kBits;
  std::vector<uint32_t> codes(std::max<size_t>(kCodes, lanes));
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint32_t>(i % kCodes) | (0xA5C30000u << (F::kBits - 1) << 1);
  HWY_ALIGN float got[HWY_MAX_BYTES / 4];
  int failures = 0;
  for (size_t i = 0; i + lanes <= codes.size(); i += lanes) {
    hn::Store(DecodeF<F>(hn::LoadU(du, codes.data() + i)), DF(), got);
    for (size_t j = 0; j < lanes; ++j) {
      const uint32_t code = codes[i + j] & (kCodes - 1);
      const uint32_t expected = helpers_test::Bits(decode<F>(code));
      if (helpers_test::Bits(got[j]) != expected && ++failures <= 5) {
        ADD_FAILURE() << name << ": code 0x" << std::hex << code << " decodes to 0x" << helpers_test::Bits(got[j])
                      << ", scalar 0x" << expected;
      }
    }
  }
  EXPECT_EQ(failures, 0) << name;
}

/// LoadDecoded<F> (the dequantize kernels' decode of one-byte codes) against decode<F> on every code,
/// in every lane position, whole vectors and partial ones, bit for bit (NaN sign and payload included).
template <class F>
void CheckLoadDecoded(const char* name) {
  const size_t lanes = hn::Lanes(DF());
  constexpr uint32_t kCodes = 1u << F::kBits;
  // Every code at every lane offset: kCodes + lanes codes read from each start 0 .. lanes - 1.
  std::vector<uint8_t> codes(kCodes + 2 * lanes);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i % kCodes);
  HWY_ALIGN float got[HWY_MAX_BYTES / 4];
  int failures = 0;
  for (size_t start = 0; start < lanes; ++start) {
    for (size_t i = start; i < start + kCodes; i += lanes) {
      const size_t n = std::min(lanes, 1 + (i * 7 + start) % lanes);  // partial vectors too
      hn::Store(LoadDecoded<F>(codes.data() + i, n), DF(), got);
      for (size_t j = 0; j < lanes; ++j) {
        const uint32_t code = j < n ? codes[i + j] : 0u;  // lanes past n read as code 0
        const uint32_t expected = helpers_test::Bits(decode<F>(code));
        if (helpers_test::Bits(got[j]) != expected && ++failures <= 5) {
          ADD_FAILURE() << name << ": code 0x" << std::hex << code << " loads as 0x" << helpers_test::Bits(got[j])
                        << ", scalar 0x" << expected << std::dec << " (lane " << j << " of " << n << ")";
        }
      }
    }
  }
  // LoadDecoded2 (two whole vectors at once) from every start.
  HWY_ALIGN float got_hi[HWY_MAX_BYTES / 4];
  for (size_t start = 0; start < kCodes; ++start) {
    VF lo, hi;
    LoadDecoded2<F>(codes.data() + start, lo, hi);
    hn::Store(lo, DF(), got);
    hn::Store(hi, DF(), got_hi);
    for (size_t j = 0; j < 2 * lanes; ++j) {
      const uint32_t code = codes[start + j];
      const uint32_t bits = helpers_test::Bits(j < lanes ? got[j] : got_hi[j - lanes]);
      if (bits != helpers_test::Bits(decode<F>(code)) && ++failures <= 5) {
        ADD_FAILURE() << name << ": code 0x" << std::hex << code << " loads in a pair as 0x" << bits;
      }
    }
  }
  EXPECT_EQ(failures, 0) << name;
}

void TestLoadDecodedEveryCode() {
  CheckLoadDecoded<Float8E4M3FNFormat>("FLOAT8E4M3FN");
  CheckLoadDecoded<Float8E4M3FNUZFormat>("FLOAT8E4M3FNUZ");
  CheckLoadDecoded<Float8E5M2Format>("FLOAT8E5M2");
  CheckLoadDecoded<Float8E5M2FNUZFormat>("FLOAT8E5M2FNUZ");
  CheckLoadDecoded<Float4E2M1Format>("FLOAT4E2M1");
}

void TestDecodeEveryCode() {
  CheckDecode<Float16Format>("FLOAT16");
  CheckDecode<BFloat16Format>("BFLOAT16");
  CheckDecode<Float8E4M3FNFormat>("FLOAT8E4M3FN");
  CheckDecode<Float8E4M3FNUZFormat>("FLOAT8E4M3FNUZ");
  CheckDecode<Float8E5M2Format>("FLOAT8E5M2");
  CheckDecode<Float8E5M2FNUZFormat>("FLOAT8E5M2FNUZ");
  CheckDecode<Float4E2M1Format>("FLOAT4E2M1");
  // FLOAT8E8M0 and the float16/bfloat16 loads.
  const DU du;
  const size_t lanes = hn::Lanes(du);
  HWY_ALIGN float got[HWY_MAX_BYTES / 4];
  for (uint32_t code = 0; code < 256; code += static_cast<uint32_t>(lanes)) {
    HWY_ALIGN uint32_t codes[HWY_MAX_BYTES / 4];
    for (size_t j = 0; j < lanes; ++j) codes[j] = (code + static_cast<uint32_t>(j)) % 256 | 0x1200u;
    hn::Store(DecodeE8M0(hn::Load(du, codes)), DF(), got);
    for (size_t j = 0; j < lanes; ++j) {
      EXPECT_EQ(helpers_test::Bits(got[j]), helpers_test::Bits(decode_e8m0(codes[j] & 0xFF)))
          << "FLOAT8E8M0 code " << (codes[j] & 0xFF);
    }
  }
  std::vector<uint16_t> halves(65536);
  for (uint32_t i = 0; i < 65536; ++i) halves[i] = static_cast<uint16_t>(i);
  int failures = 0;
  for (uint32_t i = 0; i < 65536; i += static_cast<uint32_t>(lanes)) {
    hn::Store(LoadHalf<Float16Format>(halves.data() + i, lanes), DF(), got);
    for (size_t j = 0; j < lanes; ++j) {
      if (helpers_test::Bits(got[j]) != helpers_test::Bits(decode<Float16Format>(halves[i + j])) && ++failures <= 5) {
        ADD_FAILURE() << "LoadHalf<FLOAT16> code 0x" << std::hex << halves[i + j];
      }
    }
    hn::Store(LoadHalf<BFloat16Format>(halves.data() + i, lanes), DF(), got);
    for (size_t j = 0; j < lanes; ++j) {
      if (helpers_test::Bits(got[j]) != helpers_test::Bits(decode<BFloat16Format>(halves[i + j])) && ++failures <= 5) {
        ADD_FAILURE() << "LoadHalf<BFLOAT16> code 0x" << std::hex << halves[i + j];
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

/// Codes of every byte pattern, one code per byte, with junk in the bits above the code (which the
/// packers ignore): byte b of the packed form is b.
template <int kBits>
std::vector<uint8_t> EveryPattern() {
  constexpr int kPerByte = 8 / kBits;
  std::vector<uint8_t> codes(256 * kPerByte);
  for (size_t i = 0; i < codes.size(); ++i) {
    const uint32_t byte = static_cast<uint32_t>(i / kPerByte);
    const uint32_t code = (byte >> (i % kPerByte * kBits)) & ((1u << kBits) - 1);
    codes[i] = static_cast<uint8_t>(code | ((i * 0x5Du) << kBits));
  }
  return codes;
}

template <int kBits>
void CheckPacking() {
  constexpr int kPerByte = 8 / kBits;
  const std::vector<uint8_t> codes = EveryPattern<kBits>();
  std::vector<uint8_t> packed(256);
  for (int b = 0; b < 256; ++b) packed[b] = static_cast<uint8_t>(b);
  // Every length of whole bytes, so that the vector loop and the scalar rest both run.
  for (int64_t bytes = 0; bytes <= 256; ++bytes) {
    std::vector<uint8_t> got(256, 0xEE);
    PackWholeBytes<kBits>(codes.data(), bytes, got.data());
    for (int64_t b = 0; b < 256; ++b) {
      ASSERT_EQ(got[b], b < bytes ? packed[b] : 0xEE)
          << kBits << "-bit PackWholeBytes of " << bytes << " bytes, byte " << b;
    }
    std::vector<uint8_t> unpacked(256 * kPerByte, 0xEE);
    std::vector<uint8_t> values(256 * kPerByte, 0xEE);
    UnpackWholeBytes<kBits>(packed.data(), bytes, unpacked.data());
    UnpackWholeBytes<kBits, true>(packed.data(), bytes, values.data());
    for (int64_t i = 0; i < 256 * kPerByte; ++i) {
      const uint8_t code = static_cast<uint8_t>(codes[i] & ((1u << kBits) - 1));
      ASSERT_EQ(unpacked[i], i < bytes * kPerByte ? code : 0xEE)
          << kBits << "-bit UnpackWholeBytes of " << bytes << " bytes, code " << i;
      ASSERT_EQ(values[i], i < bytes * kPerByte ? static_cast<uint8_t>(sign_extend(code, kBits)) : 0xEE)
          << kBits << "-bit signed UnpackWholeBytes of " << bytes << " bytes, code " << i;
    }
  }
  // Every start within a byte and many counts: UnpackCodes against unpack_codes, and the signed
  // values against its codes sign-extended.
  for (int64_t first = 0; first < 2 * kPerByte; ++first) {
    for (int64_t count = 0; count <= 200; ++count) {
      std::vector<uint8_t> got(200, 0xEE), got_values(200, 0xEE), expected(200, 0xEE);
      UnpackCodes<kBits>(packed.data(), first, count, got.data());
      UnpackCodes<kBits, true>(packed.data(), first, count, got_values.data());
      unpack_codes(packed.data(), kBits, first, count, expected.data());
      ASSERT_EQ(got, expected) << kBits << "-bit UnpackCodes from " << first << ", " << count << " codes";
      for (int64_t i = 0; i < count; ++i) expected[i] = static_cast<uint8_t>(sign_extend(expected[i], kBits));
      ASSERT_EQ(got_values, expected) << kBits << "-bit signed UnpackCodes from " << first << ", " << count << " codes";
    }
  }
}

/// UnpackCodes with kLessRow (x's codes less a row of zero points, in one pass) against unpack_codes and a
/// byte subtraction: every start within a byte, short counts and counts past the full-width loop's
/// minimum, signed and unsigned, with nothing written past the count.
template <int kBits, bool kSigned>
void CheckUnpackCodesLess() {
  constexpr int64_t kPerByte = 8 / kBits;
  std::mt19937 rng(kBits * 2 + (kSigned ? 1 : 0));
  std::vector<uint8_t> packed(600);
  for (uint8_t& b : packed) b = static_cast<uint8_t>(rng());
  const int64_t most = 512 * kPerByte + 7;
  std::vector<uint8_t> less(static_cast<size_t>(most));
  for (uint8_t& b : less) b = static_cast<uint8_t>(rng());
  for (int64_t first = 0; first < 2 * kPerByte; ++first) {
    for (const int64_t count : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{33}, int64_t{130}, 256 * kPerByte - 1,
                                256 * kPerByte, 256 * kPerByte + 3, most - 2 * kPerByte}) {
      std::vector<uint8_t> got(static_cast<size_t>(most), 0xEE), expected(static_cast<size_t>(most), 0xEE);
      UnpackCodes<kBits, kSigned, false, true>(packed.data(), first, count, got.data(), 0, less.data());
      unpack_codes(packed.data(), kBits, first, count, expected.data());
      for (int64_t i = 0; i < count; ++i) {
        const int value = kSigned ? sign_extend(expected[i], kBits) : expected[i];
        expected[i] = static_cast<uint8_t>(value - less[i]);
      }
      ASSERT_EQ(got, expected) << kBits << "-bit " << (kSigned ? "signed " : "") << "UnpackCodes less a row from "
                               << first << ", " << count << " codes";
    }
  }
}

void TestPackAndUnpackEveryPattern() {
  CheckPacking<4>();
  CheckPacking<2>();
  CheckUnpackCodesLess<4, true>();
  CheckUnpackCodesLess<4, false>();
  CheckUnpackCodesLess<2, true>();
  CheckUnpackCodesLess<2, false>();
}

/// StorePacked4 (the in-register packers) on every code pattern, from unsigned codes and from the
/// sign-extended codes of the signed types.
template <int kBits>
void CheckStorePacked4() {
  const DI di;
  const size_t lanes = hn::Lanes(di);
  const size_t group = 4 * lanes;
  const std::vector<uint8_t> patterns = EveryPattern<kBits>();
  const int32_t mask = (1 << kBits) - 1;
  for (bool is_signed : {false, true}) {
    // Groups at every offset of the pattern sequence (wrapping around), so that every code value
    // reaches every lane position.
    for (size_t start = 0; start < patterns.size(); start += lanes / 2 + 1) {
      std::vector<int32_t> values(group);
      std::vector<uint8_t> codes(group);
      for (size_t i = 0; i < group; ++i) {
        const uint32_t code = patterns[(start + i) % patterns.size()] & static_cast<uint32_t>(mask);
        codes[i] = static_cast<uint8_t>(code);
        values[i] = is_signed ? sign_extend(code, kBits) : static_cast<int32_t>(code);
      }
      std::vector<uint8_t> got(group * kBits / 8 + 1, 0xEE), expected(group * kBits / 8 + 1, 0xEE);
      StorePacked4<kBits>(hn::LoadU(di, values.data()), hn::LoadU(di, values.data() + lanes),
                          hn::LoadU(di, values.data() + 2 * lanes), hn::LoadU(di, values.data() + 3 * lanes),
                          got.data());
      pack_codes(codes.data(), kBits, 0, static_cast<int64_t>(group), expected.data(), false);
      ASSERT_EQ(got, expected) << kBits << "-bit StorePacked4, signed=" << is_signed << ", patterns from " << start;
    }
  }
}

void TestStorePacked4EveryPattern() {
  CheckStorePacked4<4>();
  CheckStorePacked4<2>();
}

/// int32 values around every saturation edge of 8- and 16-bit outputs.
std::vector<int32_t> SaturationInputs(size_t multiple) {
  std::vector<int32_t> v;
  for (int32_t edge : {-(1 << 24), -65536, -32768, -256, -128, 0, 127, 255, 32767, 65535, 1 << 24}) {
    for (int32_t d = -300; d <= 300; ++d) v.push_back(edge + d);
  }
  while (v.size() % multiple != 0) v.push_back(0);
  return v;
}

template <bool kSigned>
void CheckSaturatingStores() {
  const DI di;
  const size_t lanes = hn::Lanes(di);
  const std::vector<int32_t> inputs = SaturationInputs(4 * lanes);
  const int32_t lo8 = kSigned ? -128 : 0, hi8 = kSigned ? 127 : 255;
  const int32_t lo16 = kSigned ? -32768 : 0, hi16 = kSigned ? 32767 : 65535;
  for (size_t i = 0; i < inputs.size(); i += 4 * lanes) {
    const int32_t* p = inputs.data() + i;
    std::vector<uint8_t> bytes(4 * lanes);
    StoreBytes4<kSigned>(hn::LoadU(di, p), hn::LoadU(di, p + lanes), hn::LoadU(di, p + 2 * lanes),
                         hn::LoadU(di, p + 3 * lanes), bytes.data());
    for (size_t j = 0; j < 4 * lanes; ++j) {
      const auto expected = static_cast<uint8_t>(std::clamp(p[j], lo8, hi8));
      ASSERT_EQ(bytes[j], expected) << "StoreBytes4 signed=" << kSigned << " of " << p[j];
    }
    std::vector<uint16_t> words(2 * lanes);
    StoreWords2<kSigned>(hn::LoadU(di, p), hn::LoadU(di, p + lanes), reinterpret_cast<uint8_t*>(words.data()));
    for (size_t j = 0; j < 2 * lanes; ++j) {
      const auto expected = static_cast<uint16_t>(std::clamp(p[j], lo16, hi16));
      ASSERT_EQ(words[j], expected) << "StoreWords2 signed=" << kSigned << " of " << p[j];
    }
  }
}

void TestSaturatingStores() {
  CheckSaturatingStores<false>();
  CheckSaturatingStores<true>();
}

/// LoadInt's widening of unpacked 2/4-bit values (as UnpackCodes writes them) and of 8/16-bit
/// integers, every code.
void TestLoadIntEveryCode() {
  const DI di;
  const size_t lanes = hn::Lanes(di);
  HWY_ALIGN int32_t got[HWY_MAX_BYTES / 4];
  std::vector<uint8_t> bytes(256 + lanes);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i);
  // Every 4-bit and 2-bit code (the low bits of i), unpacked signed and unsigned.
  std::vector<uint8_t> nibbles((256 + lanes) / 2), crumbs((256 + lanes) / 4);
  pack_codes(bytes.data(), 4, 0, static_cast<int64_t>(2 * nibbles.size()), nibbles.data(), true);
  pack_codes(bytes.data(), 2, 0, static_cast<int64_t>(4 * crumbs.size()), crumbs.data(), true);
  std::vector<uint8_t> int4_values(bytes.size()), uint2_values(bytes.size());
  UnpackCodes<4, true>(nibbles.data(), 0, static_cast<int64_t>(2 * nibbles.size()), int4_values.data());
  UnpackCodes<2, false>(crumbs.data(), 0, static_cast<int64_t>(4 * crumbs.size()), uint2_values.data());
  std::vector<uint16_t> words(65536 + lanes);
  for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint16_t>(i);
  for (size_t i = 0; i < 256; i += lanes) {
    for (size_t n = 1; n <= lanes; n += lanes - 1 > 0 ? lanes - 1 : 1) {
      hn::Store(LoadInt<4, true>(int4_values.data(), static_cast<int64_t>(i), n), di, got);
      for (size_t j = 0; j < n; ++j) ASSERT_EQ(got[j], sign_extend(bytes[i + j] & 15, 4));
      hn::Store(LoadInt<2, false>(uint2_values.data(), static_cast<int64_t>(i), n), di, got);
      for (size_t j = 0; j < n; ++j) ASSERT_EQ(got[j], bytes[i + j] & 3);
      hn::Store(LoadInt<8, true>(bytes.data(), static_cast<int64_t>(i), n), di, got);
      for (size_t j = 0; j < n; ++j) ASSERT_EQ(got[j], static_cast<int8_t>(bytes[i + j]));
      if (n == lanes) break;
    }
  }
  for (size_t i = 0; i < 65536; i += lanes) {
    hn::Store(LoadInt<16, true>(words.data(), static_cast<int64_t>(i), lanes), di, got);
    for (size_t j = 0; j < lanes; ++j) ASSERT_EQ(got[j], static_cast<int16_t>(words[i + j]));
    hn::Store(LoadInt<16, false>(words.data(), static_cast<int64_t>(i), lanes), di, got);
    for (size_t j = 0; j < lanes; ++j) ASSERT_EQ(got[j], words[i + j]);
  }
}

/// StreamBytes copies exactly n bytes to every alignment of dst (lines and vectors whole, partial or
/// none; every length up to five lines) and writes nothing around them.
void TestStreamBytesEveryAlignment() {
  constexpr size_t kMax = 5 * kCacheLine + 3;
  std::vector<uint8_t> src(kMax);
  for (size_t i = 0; i < kMax; ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> buffer(kMax + 3 * kCacheLine);
  uint8_t* const line =
      buffer.data() + (kCacheLine - reinterpret_cast<uintptr_t>(buffer.data()) % kCacheLine) % kCacheLine;
  for (size_t shift = 0; shift < kCacheLine; ++shift) {
    for (size_t n = 0; n <= kMax; ++n) {
      std::fill(buffer.begin(), buffer.end(), uint8_t{0xA5});
      uint8_t* const dst = line + shift;
      StreamBytes(src.data(), n, dst);
      FlushStreamCarry();
      hwy::FlushStream();
      ASSERT_EQ(std::memcmp(dst, src.data(), n), 0) << "shift " << shift << " n " << n;
      for (uint8_t* p = buffer.data(); p < buffer.data() + buffer.size(); ++p) {
        if (p < dst || p >= dst + n) ASSERT_EQ(*p, 0xA5) << "shift " << shift << " n " << n << " wrote outside";
      }
    }
  }
}

/// StreamBytes over a run of pieces, as a task's chunks call it: each piece's last partial line is
/// held back and completed by the next piece where it starts where the last one ended, or written
/// out where it does not (a piece elsewhere, then one back in the run), and FlushStreamCarry writes
/// the rest. Every start in a line, pieces of 0 to 3 lines and 40 bytes, some of them elsewhere.
void TestStreamBytesInPieces() {
  constexpr size_t kMax = 9 * kCacheLine + 5;
  std::vector<uint8_t> src(kMax);
  for (size_t i = 0; i < kMax; ++i) src[i] = static_cast<uint8_t>(i * 13 + 5);
  std::vector<uint8_t> buffer(2 * kMax + 4 * kCacheLine);
  uint8_t* const line =
      buffer.data() + (kCacheLine - reinterpret_cast<uintptr_t>(buffer.data()) % kCacheLine) % kCacheLine;
  std::mt19937 rng(11);
  for (size_t shift = 0; shift < kCacheLine; ++shift) {
    for (int trial = 0; trial < 8; ++trial) {
      std::fill(buffer.begin(), buffer.end(), uint8_t{0xA5});
      uint8_t* const dst = line + shift;
      uint8_t* const elsewhere = dst + kMax + kCacheLine;  // another run's bytes, after a gap
      size_t done = 0;
      size_t elsewhere_done = 0;
      while (done < kMax) {
        const size_t n = std::min(kMax - done, static_cast<size_t>(rng() % (3 * kCacheLine + 41)));
        if (rng() % 4 == 0 && elsewhere_done + n <= kMax) {
          StreamBytes(src.data() + elsewhere_done, n, elsewhere + elsewhere_done);
          elsewhere_done += n;
          continue;
        }
        StreamBytes(src.data() + done, n, dst + done);
        done += n;
      }
      FlushStreamCarry();
      hwy::FlushStream();
      ASSERT_EQ(std::memcmp(dst, src.data(), kMax), 0) << "shift " << shift << " trial " << trial;
      ASSERT_EQ(std::memcmp(elsewhere, src.data(), elsewhere_done), 0) << "shift " << shift << " trial " << trial;
      for (uint8_t* p = buffer.data(); p < buffer.data() + buffer.size(); ++p) {
        const bool in_run = p >= dst && p < dst + kMax;
        const bool in_elsewhere = p >= elsewhere && p < elsewhere + elsewhere_done;
        if (!in_run && !in_elsewhere) ASSERT_EQ(*p, 0xA5) << "shift " << shift << " wrote outside";
      }
    }
  }
}

/// WholeBlocksOf gives the split the kernels made before it was one helper, for every task of
/// multiple-of-4 bounds up to 12 blocks of 4–64 elements, by the block and by groups of 4 vectors.
void TestWholeBlocksOfEveryTask() {
  const int64_t group = 4 * static_cast<int64_t>(hn::Lanes(DF()));
  for (const int64_t block : {4, 8, 16, 32, 64}) {
    for (int64_t begin = 0; begin <= 12 * block; begin += 4) {
      for (int64_t end = begin; end <= 12 * block; end += 4) {
        const int64_t lo = std::min(end, (begin + block - 1) / block * block);
        const WholeBlocks by_block = WholeBlocksOf(begin, end, block, block);
        ASSERT_EQ(by_block.lo, lo) << block << " " << begin << " " << end;
        ASSERT_EQ(by_block.hi, std::max(lo, end / block * block)) << block << " " << begin << " " << end;
        if (group % block != 0) continue;
        const WholeBlocks by_group = WholeBlocksOf(begin, end, block, group);
        ASSERT_EQ(by_group.lo, lo) << block << " " << begin << " " << end;
        ASSERT_EQ(by_group.hi, lo + std::max<int64_t>(0, end / block * block - lo) / group * group)
            << block << " " << begin << " " << end;
        ASSERT_EQ((by_group.hi - by_group.lo) % group, 0);
        ASSERT_LE(by_group.hi, end);
      }
    }
  }
}

#else
// Targets without kernels (config.h) have no helpers to test; these keep QDQ_SIMD_CHOOSE's names.
void TestWholeBlocksOfEveryTask() {}
void TestStreamBytesEveryAlignment() {}
void TestStreamBytesInPieces() {}
void TestEncodeEveryFormat() {}
void TestUncappedCodesCompleteOnBytes() {}
void TestEncodeHalfFastForms() {}
void TestDecodeEveryCode() {}
void TestLoadDecodedEveryCode() {}
void TestPackAndUnpackEveryPattern() {}
void TestStorePacked4EveryPattern() {}
void TestSaturatingStores() {}
void TestLoadIntEveryCode() {}
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {
namespace {

std::vector<int64_t> TargetBits() {
  std::vector<int64_t> bits;
  for (const Target& t : available_targets()) bits.push_back(t.bit);
  return bits;
}

std::string TargetNameOf(const ::testing::TestParamInfo<int64_t>& info) {
  for (const Target& t : available_targets()) {
    if (t.bit == info.param) return t.name;
  }
  return "target" + std::to_string(info.param);
}

class SimdHelpersTest : public ::testing::TestWithParam<int64_t> {};

#define QDQ_SIMD_HELPER_TEST(NAME)                                          \
  TEST_P(SimdHelpersTest, NAME) {                                           \
    void (*const test)() = QDQ_SIMD_CHOOSE(GetParam(), Test##NAME);         \
    ASSERT_NE(test, nullptr) << "target " << GetParam() << " not compiled"; \
    test();                                                                 \
  }

QDQ_SIMD_HELPER_TEST(EncodeEveryFormat)
QDQ_SIMD_HELPER_TEST(UncappedCodesCompleteOnBytes)
QDQ_SIMD_HELPER_TEST(EncodeHalfFastForms)
QDQ_SIMD_HELPER_TEST(DecodeEveryCode)
QDQ_SIMD_HELPER_TEST(LoadDecodedEveryCode)
QDQ_SIMD_HELPER_TEST(PackAndUnpackEveryPattern)
QDQ_SIMD_HELPER_TEST(StorePacked4EveryPattern)
QDQ_SIMD_HELPER_TEST(SaturatingStores)
QDQ_SIMD_HELPER_TEST(LoadIntEveryCode)
QDQ_SIMD_HELPER_TEST(StreamBytesEveryAlignment)
QDQ_SIMD_HELPER_TEST(StreamBytesInPieces)
QDQ_SIMD_HELPER_TEST(WholeBlocksOfEveryTask)

INSTANTIATE_TEST_SUITE_P(Targets, SimdHelpersTest, ::testing::ValuesIn(TargetBits()), TargetNameOf);
// A CPU without any compiled target has nothing to test here.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SimdHelpersTest);

}  // namespace
}  // namespace qdq::detail::simd
#endif  // HWY_ONCE
