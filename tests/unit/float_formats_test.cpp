// Narrow float formats (src/types/float_formats.hpp) against the specification pack:
//  - every code of every float8 format, FLOAT4E2M1, float16 and bfloat16 decodes to the value the
//    layout formula of types.md §3 gives (computed here independently, with spot checks of the §8
//    tables), and every non-NaN code round-trips through decode → encode;
//  - the conversion vectors of types.md §5.1–§5.4 (qdq column where policy.md differs), the §4.2
//    boundaries, the §4.3 float4 ties, float64 sources rounded once (policy.md);
//  - properties: encode equals an independent nearest-value oracle on millions of sampled float32
//    and float64 inputs, on every midpoint between adjacent codes and next to it, and is monotonic.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "types/float_formats.hpp"

namespace {

namespace d = qdq::detail;

// ---------------------------------------------------------------------------------------------
// An independent model of each format, from types.md §3 (not from the library's traits).

enum class Kind { kIeee, kFn, kFnuz, kNone };

struct Spec {
  const char* name;
  int exp_bits;
  int man_bits;
  int bias;
  Kind kind;
  bool is_float8;

  int bits() const { return 1 + exp_bits + man_bits; }
  uint32_t sign_bit() const { return 1u << (exp_bits + man_bits); }
  uint32_t codes() const { return 1u << bits(); }
};

/// The value of a code by the layout formula; NaN for NaN codes, ±inf for infinities.
double spec_value(const Spec& s, uint32_t code) {
  const bool neg = (code & s.sign_bit()) != 0;
  const uint32_t e = (code >> s.man_bits) & ((1u << s.exp_bits) - 1);
  const uint32_t m = code & ((1u << s.man_bits) - 1);
  const uint32_t e_max = (1u << s.exp_bits) - 1;
  const uint32_t m_max = (1u << s.man_bits) - 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (s.kind) {
    case Kind::kFnuz:
      if (code == s.sign_bit()) return nan;
      break;
    case Kind::kFn:
      if (e == e_max && m == m_max) return nan;
      break;
    case Kind::kIeee:
      if (e == e_max) return m == 0 ? (neg ? -INFINITY : INFINITY) : nan;
      break;
    case Kind::kNone: break;
  }
  const double mag = e == 0 ? std::ldexp(double(m), 1 - s.bias - s.man_bits)
                            : std::ldexp(double((1u << s.man_bits) + m), int(e) - s.bias - s.man_bits);
  return neg ? -mag : mag;
}

/// The largest finite positive code (computed from spec_value).
uint32_t spec_max_code(const Spec& s) {
  uint32_t best = 0;
  for (uint32_t c = 0; c < s.sign_bit(); ++c) {
    const double v = spec_value(s, c);
    if (std::isfinite(v)) best = c;
  }
  return best;
}

uint32_t spec_nan_code(const Spec& s, bool negative) {
  const uint32_t sign = negative ? s.sign_bit() : 0u;
  switch (s.kind) {
    case Kind::kIeee:  // quiet NaN, sign kept (E5M2 0x7E/0xFE, float16 0x7E00, bfloat16 0x7FC0)
      return sign | (((1u << s.exp_bits) - 1) << s.man_bits) | (1u << (s.man_bits - 1));
    case Kind::kFn: return sign | (s.sign_bit() - 1);
    case Kind::kFnuz: return s.sign_bit();
    case Kind::kNone: return 0x7;  // policy.md: NaN → FLOAT4E2M1 gives +6
  }
  return 0;
}

/// An independent encoder: nearest representable value by search over the code table, ties to the
/// even code, with qdq's special-value rules (types.md §4, policy.md). Works for float and double.
class Oracle {
 public:
  explicit Oracle(const Spec& s) : s_(s), max_code_(spec_max_code(s)) {
    for (uint32_t c = 0; c <= max_code_; ++c) values_.push_back(spec_value(s, c));
    // A virtual next value one ulp above max; its code (max+1) has the opposite parity.
    values_.push_back(values_.back() + (values_[max_code_] - values_[max_code_ - 1]));
  }

  uint32_t max_code() const { return max_code_; }

  /// A float32 source: as encode(double), except that float16/bfloat16 NaNs keep the top payload
  /// bits (types.md §4.5: NumPy for float16, never turning a NaN into inf; ml_dtypes for bfloat16,
  /// forced quiet).
  uint32_t encode_float(float v, bool saturate) const {
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    if (std::isnan(v) && s_.kind == Kind::kIeee && s_.man_bits >= 7) {
      const uint32_t sign = (bits >> 31) != 0 ? s_.sign_bit() : 0u;
      uint32_t top = (bits & 0x7FFFFFu) >> (23 - s_.man_bits);
      if (s_.exp_bits == 8) top |= 1u << (s_.man_bits - 1);
      if (top == 0) top = 1;
      return sign | (((1u << s_.exp_bits) - 1) << s_.man_bits) | top;
    }
    return encode(v, saturate);
  }

  uint32_t encode(double v, bool saturate) const {
    const bool neg = std::signbit(v);
    const uint32_t sign = neg ? s_.sign_bit() : 0u;
    if (std::isnan(v)) return spec_nan_code(s_, neg);
    if (std::isinf(v)) return overflow(sign, saturate, /*infinite=*/true);
    const double a = std::fabs(v);
    // Largest i with values_[i] <= a.
    const auto it = std::upper_bound(values_.begin(), values_.end(), a);
    size_t i = static_cast<size_t>(it - values_.begin()) - 1;
    uint32_t code;
    if (i + 1 >= values_.size()) {
      code = max_code_ + 1;  // at or beyond the virtual value: overflow
    } else {
      const double lo = a - values_[i];      // exact (Sterbenz / exact zero)
      const double hi = values_[i + 1] - a;  // exact
      if (lo < hi) {
        code = static_cast<uint32_t>(i);
      } else if (hi < lo) {
        code = static_cast<uint32_t>(i + 1);
      } else {
        code = (i % 2 == 0) ? static_cast<uint32_t>(i) : static_cast<uint32_t>(i + 1);
      }
    }
    if (code > max_code_) return overflow(sign, saturate, false);
    if (code == 0) return s_.kind == Kind::kFnuz ? 0u : sign;
    return sign | code;
  }

 private:
  uint32_t overflow(uint32_t sign, bool saturate, bool infinite) const {
    if (s_.kind == Kind::kFnuz && infinite) return s_.sign_bit();  // policy.md: FNUZ ±inf → NaN
    if (saturate || s_.kind == Kind::kNone) return sign | max_code_;
    switch (s_.kind) {
      case Kind::kIeee: return sign | (((1u << s_.exp_bits) - 1) << s_.man_bits);
      case Kind::kFn: return sign | (s_.sign_bit() - 1);
      case Kind::kFnuz: return s_.sign_bit();
      case Kind::kNone: break;
    }
    return sign | max_code_;
  }

  Spec s_;
  uint32_t max_code_;
  std::vector<double> values_;
};

// ---------------------------------------------------------------------------------------------
// Typed tests over the format traits.

template <class F, int E, int M, int B, Kind K, bool F8>
struct Fmt {
  using Format = F;
  static Spec spec() { return Spec{"", E, M, B, K, F8}; }
};

using E4M3FN = Fmt<d::Float8E4M3FNFormat, 4, 3, 7, Kind::kFn, true>;
using E4M3FNUZ = Fmt<d::Float8E4M3FNUZFormat, 4, 3, 8, Kind::kFnuz, true>;
using E5M2 = Fmt<d::Float8E5M2Format, 5, 2, 15, Kind::kIeee, true>;
using E5M2FNUZ = Fmt<d::Float8E5M2FNUZFormat, 5, 2, 16, Kind::kFnuz, true>;
using F4E2M1 = Fmt<d::Float4E2M1Format, 2, 1, 1, Kind::kNone, false>;
using F16 = Fmt<d::Float16Format, 5, 10, 15, Kind::kIeee, false>;
using BF16 = Fmt<d::BFloat16Format, 8, 7, 127, Kind::kIeee, false>;

class FmtNames {
 public:
  template <class T>
  static std::string GetName(int) {
    if (std::is_same_v<T, E4M3FN>) return "E4M3FN";
    if (std::is_same_v<T, E4M3FNUZ>) return "E4M3FNUZ";
    if (std::is_same_v<T, E5M2>) return "E5M2";
    if (std::is_same_v<T, E5M2FNUZ>) return "E5M2FNUZ";
    if (std::is_same_v<T, F4E2M1>) return "FLOAT4E2M1";
    if (std::is_same_v<T, F16>) return "FLOAT16";
    if (std::is_same_v<T, BF16>) return "BFLOAT16";
    return "?";
  }
};

template <class T>
class NarrowFormatTest : public ::testing::Test {};
using AllFormats = ::testing::Types<E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, F4E2M1, F16, BF16>;
TYPED_TEST_SUITE(NarrowFormatTest, AllFormats, FmtNames);

template <class T>
class Float8FormatTest : public ::testing::Test {};
using Float8Formats = ::testing::Types<E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ>;
TYPED_TEST_SUITE(Float8FormatTest, Float8Formats, FmtNames);

// The format's own trait constants agree with the layout of types.md §3.
TYPED_TEST(NarrowFormatTest, TraitsMatchLayout) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  EXPECT_EQ(F::kExpBits, s.exp_bits);
  EXPECT_EQ(F::kManBits, s.man_bits);
  EXPECT_EQ(F::kBias, s.bias);
  EXPECT_EQ(F::kBits, s.bits());
  EXPECT_EQ(F::kMaxCode, spec_max_code(s));
}

// Every code decodes to the layout formula's value, bit for bit (−0 included); NaN codes decode to
// NaN, with the code's sign for float8 (types.md §3.7: FNUZ's 0x80 gives the negative NaN).
TYPED_TEST(NarrowFormatTest, EveryCodeDecodesToLayoutValue) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  int nan_codes = 0;
  for (uint32_t code = 0; code < s.codes(); ++code) {
    const double expected = spec_value(s, code);
    const float got = d::decode<F>(code);
    if (std::isnan(expected)) {
      ++nan_codes;
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
      if (s.is_float8) {
        const bool want_negative = s.kind == Kind::kFnuz || (code & s.sign_bit()) != 0;
        EXPECT_EQ(std::signbit(got), want_negative) << "NaN sign, code 0x" << std::hex << code;
      }
      continue;
    }
    ASSERT_EQ(double(float(expected)), expected) << "value not exact in float32";
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(float(expected)))
        << "code 0x" << std::hex << code << ": got " << got << ", want " << expected;
  }
  // NaN code counts of types.md §3.
  switch (s.kind) {
    case Kind::kFn: EXPECT_EQ(nan_codes, 2); break;
    case Kind::kFnuz: EXPECT_EQ(nan_codes, 1); break;
    case Kind::kNone: EXPECT_EQ(nan_codes, 0); break;
    case Kind::kIeee: EXPECT_EQ(nan_codes, 2 * ((1 << s.man_bits) - 1)); break;
  }
}

// decode → encode gives the code back for every non-NaN code, saturating or not (float8), from a
// float and from a double source. Infinities (E5M2, float16, bfloat16) round-trip without
// saturation and give ±max with it. NaN codes give a NaN code.
TYPED_TEST(NarrowFormatTest, DecodeEncodeRoundTrip) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  const uint32_t max_code = spec_max_code(s);
  for (uint32_t code = 0; code < s.codes(); ++code) {
    const double v = spec_value(s, code);
    const float f = d::decode<F>(code);
    if (std::isnan(v)) {
      for (bool sat : {true, false}) {
        EXPECT_TRUE(std::isnan(spec_value(s, d::encode<F>(f, sat)))) << "NaN code 0x" << std::hex << code;
      }
      continue;
    }
    if (std::isinf(v)) {
      EXPECT_EQ(d::encode<F>(f, false), code) << "inf code 0x" << std::hex << code;
      EXPECT_EQ(d::encode<F>(double(f), false), code);
      EXPECT_EQ(d::encode<F>(f, true), (code & s.sign_bit()) | max_code) << "inf code 0x" << std::hex << code;
      continue;
    }
    for (bool sat : {true, false}) {
      EXPECT_EQ(d::encode<F>(f, sat), code) << "code 0x" << std::hex << code << " sat " << sat;
      EXPECT_EQ(d::encode<F>(double(f), sat), code) << "double, code 0x" << std::hex << code << " sat " << sat;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(d::round_to<F>(f)), std::bit_cast<uint32_t>(f));
  }
}

// At every midpoint between two adjacent finite codes, and one float32 ulp / a tiny double amount on
// either side, encode agrees with the oracle (ties to even, one rounding from double).
TYPED_TEST(NarrowFormatTest, MidpointsAndNeighboursMatchOracle) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  const Oracle oracle(s);
  const uint32_t max_code = oracle.max_code();
  for (uint32_t c = 0; c <= max_code; ++c) {
    const double lo = spec_value(s, c);
    const double hi = c < max_code ? spec_value(s, c + 1) : 2 * lo - spec_value(s, c - 1);
    const double mid = (lo + hi) / 2;  // exact
    ASSERT_EQ(double(float(mid)), mid);
    const float fm = float(mid);
    const float probes_f[] = {fm, std::nextafter(fm, 0.0f), std::nextafter(fm, INFINITY), float(lo), float(hi)};
    const double tiny = std::ldexp(std::fabs(mid), -40);
    const double probes_d[] = {mid, mid - tiny, mid + tiny};
    for (double sign : {1.0, -1.0}) {
      for (bool sat : {true, false}) {
        for (float p : probes_f) {
          const float x = float(sign) * p;
          EXPECT_EQ(d::encode<F>(x, sat), oracle.encode(x, sat))
              << "float x = " << x << " (bits 0x" << std::hex << std::bit_cast<uint32_t>(x) << ") sat " << sat;
        }
        for (double p : probes_d) {
          const double x = sign * p;
          EXPECT_EQ(d::encode<F>(x, sat), oracle.encode(x, sat))
              << "double x = " << x << " (bits 0x" << std::hex << std::bit_cast<uint64_t>(x) << ") sat " << sat;
        }
      }
    }
  }
}

// A million random float32 bit patterns (all of them: NaN, inf, subnormals) and a million random
// doubles across the format's range: encode equals the oracle.
TYPED_TEST(NarrowFormatTest, RandomInputsMatchOracle) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  const Oracle oracle(s);
  std::mt19937_64 rng(12345);
  int failures = 0;
  for (int i = 0; i < 1000000 && failures < 10; ++i) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    const bool sat = (i & 1) != 0;
    const uint32_t got = d::encode<F>(x, sat);
    const uint32_t want = oracle.encode_float(x, sat);
    if (got != want) {
      ++failures;
      ADD_FAILURE() << "float bits 0x" << std::hex << std::bit_cast<uint32_t>(x) << " sat " << sat << ": got 0x" << got
                    << " want 0x" << want;
    }
  }
  // Doubles concentrated in the format's range (random exponent across it plus a margin).
  const double max_value = spec_value(s, oracle.max_code());
  const int top = std::ilogb(max_value) + 2;
  const int bottom = 1 - s.bias - s.man_bits - 3;
  std::uniform_int_distribution<int> exp_dist(bottom, top);
  for (int i = 0; i < 1000000 && failures < 10; ++i) {
    const double frac = 1.0 + double(rng() >> 12) * 0x1p-52;
    const double x = std::ldexp(frac, exp_dist(rng)) * ((rng() & 1) ? -1.0 : 1.0);
    const bool sat = (i & 1) != 0;
    const uint32_t got = d::encode<F>(x, sat);
    const uint32_t want = oracle.encode(x, sat);
    if (got != want) {
      ++failures;
      ADD_FAILURE() << "double " << x << " sat " << sat << ": got 0x" << std::hex << got << " want 0x" << want;
    }
  }
}

// encode is monotonic over sorted finite float32 inputs (saturating; and without saturation for
// the formats that have infinities, where overflow stays ordered).
TYPED_TEST(NarrowFormatTest, EncodeIsMonotonic) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  static const std::vector<float> sorted = [] {
    std::mt19937 rng(777);
    std::vector<float> v;
    v.reserve(2000000);
    while (v.size() < 1500000) {
      const float x = std::bit_cast<float>(static_cast<uint32_t>(rng()));
      if (std::isfinite(x)) v.push_back(x);
    }
    // Dense values around the narrow formats' ranges too.
    std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
    std::uniform_real_distribution<float> small(-0.01f, 0.01f);
    while (v.size() < 2000000) v.push_back((v.size() & 1) ? u(rng) : small(rng));
    std::sort(v.begin(), v.end());
    return v;
  }();
  for (bool sat : {true, false}) {
    if (!sat && s.kind != Kind::kIeee) continue;
    double prev = -INFINITY;
    for (float x : sorted) {
      const double y = spec_value(s, d::encode<F>(x, sat));
      ASSERT_FALSE(std::isnan(y)) << "finite " << x << " gave NaN";
      ASSERT_LE(prev, y) << "not monotonic at x = " << x << " sat " << sat;
      prev = y;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Spot checks of the §8 tables and of §3 key codes.

struct TableEntry {
  uint32_t code;
  double value;
};

template <class F>
void check_entries(const std::vector<TableEntry>& entries) {
  for (const auto& e : entries) {
    EXPECT_EQ(double(d::decode<F>(e.code)), e.value) << "code 0x" << std::hex << e.code;
  }
}

TEST(Float8Tables, E4M3FNSpotChecks) {
  check_entries<d::Float8E4M3FNFormat>({{0x00, 0},
                                        {0x01, 0.001953125},
                                        {0x07, 0.013671875},
                                        {0x08, 0.015625},
                                        {0x1D, 0.1015625},
                                        {0x2A, 0.3125},
                                        {0x38, 1},
                                        {0x39, 1.125},
                                        {0x4D, 6.5},
                                        {0x5D, 26},
                                        {0x6C, 96},
                                        {0x77, 240},
                                        {0x78, 256},
                                        {0x7E, 448},
                                        {0xED, -104},
                                        {0xFE, -448},
                                        {0x81, -0.001953125}});
  EXPECT_TRUE(std::signbit(d::decode<d::Float8E4M3FNFormat>(0x80)));
  EXPECT_EQ(d::decode<d::Float8E4M3FNFormat>(0x80), 0.0f);
  EXPECT_TRUE(std::isnan(d::decode<d::Float8E4M3FNFormat>(0x7F)));
  EXPECT_TRUE(std::isnan(d::decode<d::Float8E4M3FNFormat>(0xFF)));
}

TEST(Float8Tables, E4M3FNUZSpotChecks) {
  check_entries<d::Float8E4M3FNUZFormat>({{0x00, 0},
                                          {0x01, 0.0009765625},
                                          {0x08, 0.0078125},
                                          {0x38, 0.5},
                                          {0x40, 1},
                                          {0x5D, 13},
                                          {0x74, 96},
                                          {0x77, 120},
                                          {0x78, 128},
                                          {0x7F, 240},
                                          {0xFF, -240},
                                          {0x81, -0.0009765625}});
  EXPECT_TRUE(std::isnan(d::decode<d::Float8E4M3FNUZFormat>(0x80)));
}

TEST(Float8Tables, E5M2SpotChecks) {
  check_entries<d::Float8E5M2Format>({{0x00, 0},
                                      {0x01, 1.52587890625e-05},
                                      {0x04, 6.103515625e-05},
                                      {0x13, 0.0008544921875},
                                      {0x38, 0.5},
                                      {0x3C, 1},
                                      {0x56, 96},
                                      {0x5F, 448},
                                      {0x7A, 49152},
                                      {0x7B, 57344},
                                      {0xD6, -96},
                                      {0xFB, -57344}});
  EXPECT_EQ(d::decode<d::Float8E5M2Format>(0x7C), INFINITY);
  EXPECT_EQ(d::decode<d::Float8E5M2Format>(0xFC), -INFINITY);
  for (uint32_t c : {0x7Du, 0x7Eu, 0x7Fu, 0xFDu, 0xFEu, 0xFFu})
    EXPECT_TRUE(std::isnan(d::decode<d::Float8E5M2Format>(c)));
}

TEST(Float8Tables, E5M2FNUZSpotChecks) {
  check_entries<d::Float8E5M2FNUZFormat>({{0x00, 0},
                                          {0x01, 7.62939453125e-06},
                                          {0x04, 3.0517578125e-05},
                                          {0x3C, 0.5},
                                          {0x40, 1},
                                          {0x5A, 96},
                                          {0x7C, 32768},
                                          {0x7F, 57344},
                                          {0xFF, -57344}});
  EXPECT_TRUE(std::isnan(d::decode<d::Float8E5M2FNUZFormat>(0x80)));
}

// types.md §3.6: all 16 FLOAT4E2M1 codes.
TEST(Float4E2M1, AllSixteenCodes) {
  const double values[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (uint32_t c = 0; c < 16; ++c) {
    const float got = d::decode<d::Float4E2M1Format>(c);
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(float(values[c]))) << "code " << c;
    EXPECT_EQ(d::encode<d::Float4E2M1Format>(got, false), c);
    EXPECT_EQ(d::encode<d::Float4E2M1Format>(got, true), c);
  }
}

// types.md §4.3: ties go to the even code; always saturating; zero signs.
TEST(Float4E2M1, TiesSaturationAndZeros) {
  struct Row {
    float x;
    uint32_t code;
  };
  const Row rows[] = {{0.25f, 0x0},     {0.75f, 0x2},   {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4},  {3.5f, 0x6},
                      {5.0f, 0x6},      {5.0001f, 0x7}, {6.0f, 0x7},  {7.0f, 0x7},  {1e30f, 0x7}, {INFINITY, 0x7},
                      {-INFINITY, 0xF}, {-5.0f, 0xE},   {-5.5f, 0xF}, {-0.0f, 0x8}, {-0.1f, 0x8}, {0.0f, 0x0}};
  for (const Row& r : rows) {
    for (bool sat : {true, false}) {
      EXPECT_EQ(d::encode<d::Float4E2M1Format>(r.x, sat), r.code) << "x = " << r.x << " sat " << sat;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// FLOAT8E8M0 (types.md §3.5, §5.3).

TEST(Float8E8M0, AllCodesDecode) {
  for (uint32_t c = 0; c < 256; ++c) {
    const float got = d::decode_e8m0(c);
    if (c == 0xFF) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    const float want = float(std::ldexp(1.0, int(c) - 127));
    EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << "code " << c;
    EXPECT_FALSE(std::signbit(got));
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(d::decode_e8m0(0x00)), 0x00400000u);
  EXPECT_EQ(d::decode_e8m0(0x7E), 0.5f);
  EXPECT_EQ(d::decode_e8m0(0x7F), 1.0f);
  EXPECT_EQ(d::decode_e8m0(0x80), 2.0f);
  EXPECT_EQ(d::decode_e8m0(0x81), 4.0f);
  EXPECT_EQ(d::decode_e8m0(0xFD), 0x1p126f);
  EXPECT_EQ(d::decode_e8m0(0xFE), 0x1p127f);
}

TEST(Float8E8M0, AstypeVectors) {
  struct Row {
    uint32_t bits;
    uint32_t code;
  };
  const Row rows[] = {{0x00000000, 0xFF}, {0x80000000, 0xFF}, {0x7F800000, 0xFF}, {0x7FC00000, 0xFF},
                      {0x3F800000, 0x7F}, {0x3FC00000, 0x80}, {0x3FBFFFFF, 0x7F}, {0x3F400000, 0x7F},
                      {0x40400000, 0x81}, {0xBF800000, 0xFF}, {0x00400000, 0x00}, {0x00200000, 0x00},
                      {0x00000001, 0x00}, {0x7F000000, 0xFE}, {0x7F400000, 0xFF}, {0x7F7FFFFF, 0xFF}};
  for (const Row& r : rows) {
    EXPECT_EQ(d::encode_e8m0(std::bit_cast<float>(r.bits)), r.code) << "bits 0x" << std::hex << r.bits;
  }
  // Every code but NaN round-trips.
  for (uint32_t c = 0; c < 255; ++c) EXPECT_EQ(d::encode_e8m0(d::decode_e8m0(c)), c) << c;
}

// ---------------------------------------------------------------------------------------------
// types.md §5.1: float32 → float8 with saturate 1 / 0 (qdq column: FNUZ ±inf with saturate → 0x80).

TEST(Float8Vectors, Table51) {
  struct Row {
    uint32_t bits;
    uint8_t c[8];  // E4M3FN s1 s0, E4M3FNUZ s1 s0, E5M2 s1 s0, E5M2FNUZ s1 s0
  };
  const Row rows[] = {
      {0x00000000, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {0x80000000, {0x80, 0x80, 0x00, 0x00, 0x80, 0x80, 0x00, 0x00}},
      {0x7F800000, {0x7E, 0x7F, 0x80 /*qdq*/, 0x80, 0x7B, 0x7C, 0x80 /*qdq*/, 0x80}},
      {0xFF800000, {0xFE, 0xFF, 0x80 /*qdq*/, 0x80, 0xFB, 0xFC, 0x80 /*qdq*/, 0x80}},
      {0x7FC00000, {0x7F, 0x7F, 0x80, 0x80, 0x7E, 0x7E, 0x80, 0x80}},
      {0xFFC00000, {0xFF, 0xFF, 0x80, 0x80, 0xFE, 0xFE, 0x80, 0x80}},
      {0x3F800000, {0x38, 0x38, 0x40, 0x40, 0x3C, 0x3C, 0x40, 0x40}},
      {0x3F880000, {0x38, 0x38, 0x40, 0x40, 0x3C, 0x3C, 0x40, 0x40}},
      {0x3F900000, {0x39, 0x39, 0x41, 0x41, 0x3C, 0x3C, 0x40, 0x40}},
      {0x3F980000, {0x3A, 0x3A, 0x42, 0x42, 0x3D, 0x3D, 0x41, 0x41}},
      {0x3E99999A, {0x2A, 0x2A, 0x32, 0x32, 0x35, 0x35, 0x39, 0x39}},
      {0xC0533333, {0xC5, 0xC5, 0xCD, 0xCD, 0xC3, 0xC3, 0xC7, 0xC7}},
      {0x42C00000, {0x6C, 0x6C, 0x74, 0x74, 0x56, 0x56, 0x5A, 0x5A}},
      {0x42C80000, {0x6C, 0x6C, 0x74, 0x74, 0x56, 0x56, 0x5A, 0x5A}},
      {0x43480000, {0x74, 0x74, 0x7C, 0x7C, 0x5A, 0x5A, 0x5E, 0x5E}},
      {0x43700000, {0x77, 0x77, 0x7F, 0x7F, 0x5C, 0x5C, 0x60, 0x60}},
      {0x4377FD71, {0x77, 0x77, 0x7F, 0x7F, 0x5C, 0x5C, 0x60, 0x60}},
      {0x43780000, {0x78, 0x78, 0x7F, 0x80, 0x5C, 0x5C, 0x60, 0x60}},
      {0x43E00000, {0x7E, 0x7E, 0x7F, 0x80, 0x5F, 0x5F, 0x63, 0x63}},
      {0x43E08000, {0x7E, 0x7E, 0x7F, 0x80, 0x5F, 0x5F, 0x63, 0x63}},
      {0x43E80000, {0x7E, 0x7E, 0x7F, 0x80, 0x5F, 0x5F, 0x63, 0x63}},
      {0x43E80148, {0x7E, 0x7F, 0x7F, 0x80, 0x5F, 0x5F, 0x63, 0x63}},
      {0x43F00000, {0x7E, 0x7F, 0x7F, 0x80, 0x60, 0x60, 0x64, 0x64}},
      {0xC3E88000, {0xFE, 0xFF, 0xFF, 0x80, 0xDF, 0xDF, 0xE3, 0xE3}},
      {0x47435000, {0x7E, 0x7F, 0x7F, 0x80, 0x7A, 0x7A, 0x7E, 0x7E}},
      {0x47600000, {0x7E, 0x7F, 0x7F, 0x80, 0x7B, 0x7B, 0x7F, 0x7F}},
      {0x476FFFFD, {0x7E, 0x7F, 0x7F, 0x80, 0x7B, 0x7B, 0x7F, 0x7F}},
      {0x47700000, {0x7E, 0x7F, 0x7F, 0x80, 0x7B, 0x7C, 0x7F, 0x80}},
      {0x7149F2CA, {0x7E, 0x7F, 0x7F, 0x80, 0x7B, 0x7C, 0x7F, 0x80}},
      {0x3B000000, {0x01, 0x01, 0x02, 0x02, 0x18, 0x18, 0x1C, 0x1C}},
      {0x3A800000, {0x00, 0x00, 0x01, 0x01, 0x14, 0x14, 0x18, 0x18}},
      {0x3AC00000, {0x01, 0x01, 0x02, 0x02, 0x16, 0x16, 0x1A, 0x1A}},
      {0x3A000000, {0x00, 0x00, 0x00, 0x00, 0x10, 0x10, 0x14, 0x14}},
      {0x37800000, {0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x02}},
      {0x37000000, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01}},
      {0x37400000, {0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x02}},
      {0x36800000, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
      {0xB5800000, {0x80, 0x80, 0x00, 0x00, 0x80, 0x80, 0x00, 0x00}},
  };
  for (const Row& r : rows) {
    const float x = std::bit_cast<float>(r.bits);
    const double xd = x;
    SCOPED_TRACE(::testing::Message() << "x bits 0x" << std::hex << r.bits);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(x, true), r.c[0]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(x, false), r.c[1]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(x, true), r.c[2]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(x, false), r.c[3]);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(x, true), r.c[4]);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(x, false), r.c[5]);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(x, true), r.c[6]);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(x, false), r.c[7]);
    // The same values as float64 sources (exactly representable: same codes).
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(xd, true), r.c[0]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(xd, false), r.c[1]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(xd, true), r.c[2]);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(xd, false), r.c[3]);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(xd, true), r.c[4]);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(xd, false), r.c[5]);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(xd, true), r.c[6]);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(xd, false), r.c[7]);
  }
}

// types.md §5.2 (qdq: NaN → 0x7 in both columns). The zero-point column is x + 0.0f in float32.
TEST(Float4Vectors, Table52) {
  struct Row {
    uint32_t bits;
    uint32_t no_zp;
    uint32_t zp0;
  };
  const Row rows[] = {{0x00000000, 0x0, 0x0}, {0x80000000, 0x8, 0x0}, {0x7F800000, 0x7, 0x7}, {0xFF800000, 0xF, 0xF},
                      {0x7FC00000, 0x7, 0x7}, {0xFFC00000, 0x7, 0x7}, {0x3E800000, 0x0, 0x0}, {0x3E800003, 0x1, 0x1},
                      {0x3F400000, 0x2, 0x2}, {0x3FA00000, 0x2, 0x2}, {0x3FE00000, 0x4, 0x4}, {0x40200000, 0x4, 0x4},
                      {0x40600000, 0x6, 0x6}, {0x40A00000, 0x6, 0x6}, {0x40A000D2, 0x7, 0x7}, {0x40C00000, 0x7, 0x7},
                      {0x40E00000, 0x7, 0x7}, {0x42C80000, 0x7, 0x7}, {0xBE800000, 0x8, 0x8}, {0xBE851EB8, 0x9, 0x9},
                      {0xC0E00000, 0xF, 0xF}, {0x0DA24260, 0x0, 0x0}};
  for (const Row& r : rows) {
    const float x = std::bit_cast<float>(r.bits);
    volatile float zero = 0.0f;
    const float with_zp = x + zero;
    for (bool sat : {true, false}) {
      EXPECT_EQ(d::encode<d::Float4E2M1Format>(x, sat), r.no_zp) << "bits 0x" << std::hex << r.bits;
      EXPECT_EQ(d::encode<d::Float4E2M1Format>(with_zp, sat), r.zp0) << "bits 0x" << std::hex << r.bits;
      EXPECT_EQ(d::encode<d::Float4E2M1Format>(double(x), sat), r.no_zp) << "double, bits 0x" << std::hex << r.bits;
    }
  }
}

// types.md §5.4: float32 → bfloat16 and float16.
TEST(SixteenBitVectors, Table54) {
  struct Row {
    uint32_t bits;
    uint16_t bf16;
    uint16_t f16;
  };
  const Row rows[] = {{0x7FC00000, 0x7FC0, 0x7E00}, {0xFFC00000, 0xFFC0, 0xFE00}, {0x7F800000, 0x7F80, 0x7C00},
                      {0x3F808000, 0x3F80, 0x3C04}, {0x3F818000, 0x3F82, 0x3C0C}, {0x7F7F0000, 0x7F7F, 0x7C00},
                      {0x7F7FFFFF, 0x7F80, 0x7C00}, {0x477FE000, 0x4780, 0x7BFF}, {0x477FEFFD, 0x4780, 0x7BFF},
                      {0x477FF000, 0x4780, 0x7C00}, {0x33800000, 0x3380, 0x0001}, {0x33000000, 0x3300, 0x0000},
                      {0x33400000, 0x3340, 0x0001}, {0x00010000, 0x0001, 0x0000}, {0x00008000, 0x0000, 0x0000},
                      {0x0000C000, 0x0001, 0x0000}};
  for (const Row& r : rows) {
    const float x = std::bit_cast<float>(r.bits);
    EXPECT_EQ(d::float_to_bfloat16(x), r.bf16) << "bits 0x" << std::hex << r.bits;
    EXPECT_EQ(d::float_to_half(x), r.f16) << "bits 0x" << std::hex << r.bits;
    EXPECT_EQ(d::encode<d::BFloat16Format>(x, false), r.bf16);
    EXPECT_EQ(d::encode<d::Float16Format>(x, false), r.f16);
  }
  // types.md §4.5 extra facts.
  EXPECT_EQ(d::float_to_half(0x1p-25f), 0x0000);
  EXPECT_EQ(d::float_to_half(0x1.8p-25f), 0x0001);
  EXPECT_EQ(d::float_to_bfloat16(0x1p-134f), 0x0000);
  EXPECT_EQ(d::float_to_bfloat16(0x1.8p-134f), 0x0001);
  EXPECT_EQ(d::float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(d::float_to_bfloat16(-0.0f), 0x8000);
  EXPECT_EQ(d::half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(d::bfloat16_to_float(0x7F7F), 3.3895313892515355e38f);
}

// The 16-bit wrappers agree with decode/encode on every pattern; NaNs stay NaN with their sign.
TEST(SixteenBit, AllPatternsThroughFloat32) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = d::half_to_float(static_cast<uint16_t>(h));
    const float b = d::bfloat16_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      const uint16_t back = d::float_to_half(f);
      EXPECT_TRUE((back & 0x7C00) == 0x7C00 && (back & 0x03FF) != 0) << std::hex << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
    } else {
      EXPECT_EQ(d::float_to_half(f), h) << std::hex << h;
    }
    if (std::isnan(b)) {
      const uint16_t back = d::float_to_bfloat16(b);
      EXPECT_TRUE((back & 0x7F80) == 0x7F80 && (back & 0x007F) != 0) << std::hex << h;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << h;
    } else {
      EXPECT_EQ(d::float_to_bfloat16(b), h) << std::hex << h;
      EXPECT_EQ(std::bit_cast<uint32_t>(b), h << 16) << std::hex << h;  // bfloat16 = top half of a float32
    }
  }
}

// ---------------------------------------------------------------------------------------------
// types.md §4.2 exact boundaries (float32 inputs, both signs).

TEST(Float8Boundaries, Table42) {
  auto below = [](float x) { return std::nextafter(x, 0.0f); };
  auto above = [](float x) { return std::nextafter(x, INFINITY); };
  for (float sign : {1.0f, -1.0f}) {
    const uint32_t s8 = sign < 0 ? 0x80u : 0u;
    // E4M3FN: 464 still gives max (tie to even 448); anything above overflows; 2^-10 → 0.
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(sign * 464.0f, false), s8 | 0x7E);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(sign * above(464.0f), false), s8 | 0x7F);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(sign * above(464.0f), true), s8 | 0x7E);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(sign * 0x1p-10f, false), s8);
    EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(sign * above(0x1p-10f), false), s8 | 0x01);
    // E4M3FNUZ: just below 248 → max, 248 overflows; 2^-11 → 0 (no −0).
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(sign * below(248.0f), false), s8 | 0x7F);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(sign * 248.0f, false), 0x80u);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(sign * 248.0f, true), s8 | 0x7F);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(sign * 0x1p-11f, false), 0x00u);
    EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(sign * above(0x1p-11f), false), s8 | 0x01);
    // E5M2: just below 61440 → max, 61440 → inf; 2^-17 → 0.
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(sign * below(61440.0f), false), s8 | 0x7B);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(sign * 61440.0f, false), s8 | 0x7C);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(sign * 61440.0f, true), s8 | 0x7B);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(sign * 0x1p-17f, false), s8);
    EXPECT_EQ(d::encode<d::Float8E5M2Format>(sign * above(0x1p-17f), false), s8 | 0x01);
    // E5M2FNUZ: just below 61440 → max, 61440 → NaN; 2^-18 → 0.
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(sign * below(61440.0f), false), s8 | 0x7F);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(sign * 61440.0f, false), 0x80u);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(sign * 61440.0f, true), s8 | 0x7F);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(sign * 0x1p-18f, false), 0x00u);
    EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(sign * above(0x1p-18f), false), s8 | 0x01);
  }
}

// ---------------------------------------------------------------------------------------------
// float64 sources are rounded once (policy.md): 1.0625 + 2^-28 → E4M3FN 0x39 (through float32 it
// would be the tie 1.0625 → 0x38).

TEST(Float64Source, OneRounding) {
  const double x = 1.0625 + 0x1p-28;
  EXPECT_EQ(float(x), 1.0625f);  // the double-rounding path would see the tie
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(x, true), 0x39u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(x, false), 0x39u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(float(x), true), 0x38u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(-x, true), 0xB9u);
  // The same in the other formats: just above / below a tie, beyond float32's precision.
  EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(x, true), 0x41u);            // 1.0 = 0x40, 1.125 = 0x41
  EXPECT_EQ(d::encode<d::Float8E5M2Format>(1.125 + 0x1p-30, true), 0x3Du);  // 1.0 = 0x3C, 1.25 = 0x3D
  EXPECT_EQ(d::encode<d::Float8E5M2Format>(1.125 - 0x1p-30, true), 0x3Cu);
  EXPECT_EQ(d::encode<d::Float8E5M2FNUZFormat>(1.125 + 0x1p-30, true), 0x41u);
  EXPECT_EQ(d::encode<d::Float4E2M1Format>(2.5 + 0x1p-40, true), 0x5u);  // tie 2.5 → 2 (0x4), above → 3
  EXPECT_EQ(d::encode<d::Float4E2M1Format>(0.25 + 0x1p-50, true), 0x1u);
  EXPECT_EQ(d::encode<d::Float16Format>(1.0 + 0x1p-11 + 0x1p-40, false), 0x3C01u);
  EXPECT_EQ(d::encode<d::BFloat16Format>(1.0 + 0x1p-8 + 0x1p-40, false), 0x3F81u);
  // Doubles far outside float32's range.
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(1e300, true), 0x7Eu);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(1e300, false), 0x7Fu);
  EXPECT_EQ(d::encode<d::Float8E5M2Format>(-1e300, false), 0xFCu);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(1e-300, true), 0x00u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(-1e-300, true), 0x80u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(-1e-300, true), 0x00u);
  EXPECT_EQ(d::encode<d::Float4E2M1Format>(std::numeric_limits<double>::quiet_NaN(), true), 0x7u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNUZFormat>(std::numeric_limits<double>::infinity(), true), 0x80u);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(-std::numeric_limits<double>::infinity(), true), 0xFEu);
  EXPECT_EQ(d::encode<d::Float8E4M3FNFormat>(std::numeric_limits<double>::denorm_min(), true), 0x00u);
}

// Special values of every float8 format, both saturation modes (types.md §4.2 tables, qdq).
TYPED_TEST(Float8FormatTest, SpecialValues) {
  using F = typename TypeParam::Format;
  const Spec s = TypeParam::spec();
  const Oracle oracle(s);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (bool sat : {true, false}) {
    EXPECT_EQ(d::encode<F>(nan, sat), spec_nan_code(s, false));
    EXPECT_EQ(d::encode<F>(-nan, sat), spec_nan_code(s, true));
    EXPECT_EQ(d::encode<F>(INFINITY, sat), oracle.encode(INFINITY, sat));
    EXPECT_EQ(d::encode<F>(-INFINITY, sat), oracle.encode(-INFINITY, sat));
    EXPECT_EQ(d::encode<F>(0.0f, sat), 0u);
    EXPECT_EQ(d::encode<F>(-0.0f, sat), s.kind == Kind::kFnuz ? 0u : 0x80u);
    EXPECT_EQ(d::encode<F>(std::numeric_limits<float>::max(), sat),
              sat ? oracle.max_code() : oracle.encode(1e38, false));
    EXPECT_EQ(d::encode<F>(std::numeric_limits<float>::denorm_min(), sat), 0u);
  }
  if (s.kind == Kind::kFnuz) {
    EXPECT_EQ(d::encode<F>(INFINITY, true), 0x80u);  // policy.md
    EXPECT_EQ(d::encode<F>(-INFINITY, true), 0x80u);
  }
}

}  // namespace
