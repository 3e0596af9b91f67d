// QuantizeLinear and DequantizeLinear across every quantized type, x type, scale type and output
// type, against an independent, straightforward oracle written from policy.md:
//   Q:  P = precision, else the scale's type (e8m0 → float32, int32 → float64); x and the scale are
//       rounded to P (RNE), divided, the quotient rounded to P. Integer outputs: NaN → qmin, else
//       clamp(rint(q) + zp) exactly. Float8: q rounded once to the format (zero point never added).
//       FLOAT4E2M1: with a zero point float32(q) + zp in float32, NaN → +6; without one q rounded once.
//   DQ: d = float32(x − zp) with the difference exact (float8: no zp; float4: float32 difference),
//       p = d · float32(scale) in float32, rounded once to the output type.
// Granularities: per-tensor (rank-0 and one-element scales), per-axis (positive and negative axes),
// blocked (blocks not dividing the axis, negative axes), rank-0 tensors, empty tensors; packed
// outputs of odd length and blocks starting inside a byte. Properties: DQ(Q(x)) within half a step,
// Q monotonic in x, results independent of threads, output untouched on error.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "test_tensors.hpp"
#include "types/float_formats.hpp"
#include "types/packing.hpp"
#include "types/type_lists.hpp"
#include "types/type_traits.hpp"

namespace {

using namespace qdq_test;
namespace d = qdq::detail;

// =============================================================================================
// Element values.

/// The exact value of one element of a real-valued tensor (x or scale of Q, scale of DQ).
double real_value(DataType t, uint64_t code) {
  switch (t) {
    case DataType::kFloat: return std::bit_cast<float>(static_cast<uint32_t>(code));
    case DataType::kFloat16: return d::decode<d::Float16Format>(static_cast<uint32_t>(code));
    case DataType::kBFloat16: return d::decode<d::BFloat16Format>(static_cast<uint32_t>(code));
    case DataType::kFloat8E8M0: return d::decode_e8m0(static_cast<uint32_t>(code));
    case DataType::kInt32: return static_cast<int32_t>(static_cast<uint32_t>(code));
    default: ADD_FAILURE() << "real_value: unexpected type"; return 0;
  }
}

/// Decodes a quantized code (float8 / float4) to its value.
double narrow_value(DataType t, uint64_t code) {
  return d::visit_type(t, [code]<class Traits>(Traits) -> double {
    if constexpr (Traits::kKind == d::TypeKind::kMiniFloat && Traits::kBits <= 8) {
      return d::decode<typename Traits::Format>(static_cast<uint32_t>(code));
    } else {
      ADD_FAILURE() << "narrow_value: unexpected type";
      return 0;
    }
  });
}

uint32_t encode_narrow(DataType t, double v, bool saturate) {
  return d::visit_type(t, [v, saturate]<class Traits>(Traits) -> uint32_t {
    if constexpr (Traits::kKind == d::TypeKind::kMiniFloat && Traits::kBits <= 8) {
      return d::encode<typename Traits::Format>(v, saturate);
    } else {
      ADD_FAILURE() << "encode_narrow: unexpected type";
      return 0;
    }
  });
}

/// The mantissa bits of a quantized narrow float.
int mantissa_bits(DataType t) {
  return d::visit_type(t, []<class Traits>(Traits) -> int {
    if constexpr (Traits::kKind == d::TypeKind::kMiniFloat) {
      return Traits::Format::kManBits;
    } else {
      ADD_FAILURE() << "mantissa_bits: unexpected type";
      return 0;
    }
  });
}

/// Rounds an exact value to type P (FLOAT, FLOAT16, BFLOAT16 or DOUBLE), once.
double round_to_type(DataType p, double v) {
  switch (p) {
    case DataType::kFloat: return static_cast<float>(v);
    case DataType::kFloat16: return d::round_to<d::Float16Format>(v);
    case DataType::kBFloat16: return d::round_to<d::BFloat16Format>(v);
    case DataType::kDouble: return v;
    default: ADD_FAILURE() << "round_to_type: unexpected type"; return v;
  }
}

/// The code of a value in a real-valued input type (x or scale), rounding once.
uint64_t code_of_real(DataType t, double v) {
  switch (t) {
    case DataType::kFloat: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DataType::kFloat16: return d::encode<d::Float16Format>(v, false);
    case DataType::kBFloat16: return d::encode<d::BFloat16Format>(v, false);
    case DataType::kInt32: {
      if (std::isnan(v)) return 0;
      const double r = std::clamp(std::nearbyint(v), -2147483648.0, 2147483647.0);
      return static_cast<uint32_t>(static_cast<int32_t>(r));
    }
    default: ADD_FAILURE() << "code_of_real: unexpected type"; return 0;
  }
}

// =============================================================================================
// The oracle.

struct QuantizeSpec {
  DataType x_type;
  DataType scale_type;
  DataType y_type;
  bool saturate = true;
  int64_t precision = 0;
  bool has_zp = false;
  DataType zp_type = DataType::kUndefined;
};

DataType division_type(const QuantizeSpec& q) {
  if (q.precision != 0) return static_cast<DataType>(q.precision);
  if (q.scale_type == DataType::kFloat8E8M0) return DataType::kFloat;
  if (q.scale_type == DataType::kInt32) return DataType::kDouble;
  return q.scale_type;
}

/// Q of one element: x code, scale code, zero-point code (ignored if !has_zp) → output code.
uint64_t oracle_quantize(const QuantizeSpec& q, uint64_t x_code, uint64_t s_code, uint64_t zp_code) {
  const DataType p = division_type(q);
  const double xp = round_to_type(p, real_value(q.x_type, x_code));
  const double sp = round_to_type(p, real_value(q.scale_type, s_code));
  double quotient;
  if (p == DataType::kFloat) {
    quotient = static_cast<float>(xp) / static_cast<float>(sp);  // IEEE float32 division
  } else {
    quotient = round_to_type(p, xp / sp);  // float64 division; for 16-bit P then rounded once to P
  }
  if (is_int_type(q.y_type)) {
    const double lo = static_cast<double>(int_min(q.y_type));
    const double hi = static_cast<double>(int_max(q.y_type));
    if (std::isnan(quotient))
      return static_cast<uint64_t>(int_min(q.y_type)) & ((uint64_t(1) << type_bits(q.y_type)) - 1);
    double v = std::nearbyint(quotient);
    if (q.has_zp) {
      const Tensor one = Tensor(q.zp_type, {}, pack(q.zp_type, {zp_code}));
      v += static_cast<double>(one.ints()[0]);
    }
    const auto r = static_cast<int64_t>(std::clamp(v, lo, hi));
    return static_cast<uint64_t>(r) & ((uint64_t(1) << type_bits(q.y_type)) - 1);
  }
  if (is_float8(q.y_type)) return encode_narrow(q.y_type, quotient, q.saturate);
  // FLOAT4E2M1.
  if (q.has_zp) {
    const float sum = static_cast<float>(quotient) + static_cast<float>(narrow_value(DataType::kFloat4E2M1, zp_code));
    return encode_narrow(DataType::kFloat4E2M1, sum, true);
  }
  return encode_narrow(DataType::kFloat4E2M1, quotient, true);
}

struct DequantizeSpec {
  DataType x_type;
  DataType scale_type;
  DataType y_type;
  bool has_zp = false;
};

uint64_t oracle_dequantize(const DequantizeSpec& q, uint64_t x_code, uint64_t s_code, uint64_t zp_code) {
  float dx;
  if (is_int_type(q.x_type)) {
    const int64_t xv = Tensor(q.x_type, {}, pack(q.x_type, {x_code})).ints()[0];
    const int64_t zv = q.has_zp ? Tensor(q.x_type, {}, pack(q.x_type, {zp_code})).ints()[0] : 0;
    dx = static_cast<float>(xv - zv);  // exact difference, one rounding
  } else if (is_float8(q.x_type)) {
    dx = static_cast<float>(narrow_value(q.x_type, x_code));
  } else {  // FLOAT4E2M1
    const float xv = static_cast<float>(narrow_value(q.x_type, x_code));
    const float zv = q.has_zp ? static_cast<float>(narrow_value(q.x_type, zp_code)) : 0.0f;
    dx = q.has_zp ? xv - zv : xv;
  }
  const float product = dx * static_cast<float>(real_value(q.scale_type, s_code));
  switch (q.y_type) {
    case DataType::kFloat: return std::bit_cast<uint32_t>(product);
    case DataType::kFloat16: return d::encode<d::Float16Format>(product, false);
    case DataType::kBFloat16: return d::encode<d::BFloat16Format>(product, false);
    default: ADD_FAILURE() << "oracle_dequantize: unexpected output type"; return 0;
  }
}

// =============================================================================================
// Layouts: x shape, scale shape, axis, block size; and the scale index each element uses.

struct Layout {
  std::string name;
  Shape x_shape;
  Shape scale_shape;
  std::optional<int64_t> axis;
  std::optional<int64_t> block;
};

std::vector<Layout> layouts() {
  return {
      {"scalar_x", {}, {}, std::nullopt, std::nullopt},
      {"per_tensor", {37}, {}, std::nullopt, std::nullopt},
      {"per_tensor_long", {1031}, {}, std::nullopt, std::nullopt},  // long enough for vector kernels
      {"per_axis_long_rows", {3, 515}, {3}, 0, std::nullopt},
      {"per_tensor_shape1_scale", {5, 7}, {1}, 1, std::nullopt},
      {"per_tensor_rank0_x_shape1_scale", {}, {1}, std::nullopt, std::nullopt},
      {"per_axis", {3, 7, 5}, {7}, 1, std::nullopt},
      {"per_axis_negative", {3, 7, 5}, {5}, -1, std::nullopt},
      {"per_axis_first", {6, 5}, {6}, 0, std::nullopt},
      {"per_axis_rank1", {9}, {9}, 0, std::nullopt},
      {"blocked", {4, 9, 3}, {4, 3, 3}, 1, 4},
      {"blocked_negative_axis", {5, 7}, {5, 3}, -1, 3},
      {"blocked_axis0", {7, 3}, {2, 3}, 0, 5},
      {"blocked_odd_rows", {3, 5}, {3, 3}, 1, 2},
      {"blocked_one_block", {3, 5}, {3, 1}, 1, 8},
      {"blocked_size1", {2, 3}, {2, 3}, -1, 1},
      {"empty_per_tensor", {0, 5}, {}, std::nullopt, std::nullopt},
      {"empty_per_axis", {0, 5}, {5}, 1, std::nullopt},
      {"empty_blocked", {0, 4}, {0, 2}, 1, 2},
  };
}

std::vector<int64_t> param_indices(const Layout& l) {
  const int64_t n = numel(l.x_shape);
  const int64_t s = numel(l.scale_shape);
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  if (s == 1 && l.scale_shape.size() <= 1 && !l.block) return out;
  const auto r = static_cast<int64_t>(l.x_shape.size());
  const int64_t a = l.axis.value_or(1) < 0 ? l.axis.value_or(1) + r : l.axis.value_or(1);
  for (int64_t i = 0; i < n; ++i) {
    // Multi-index of i.
    std::vector<int64_t> idx(static_cast<size_t>(r));
    int64_t rest = i;
    for (int64_t k = r - 1; k >= 0; --k) {
      idx[static_cast<size_t>(k)] = rest % l.x_shape[static_cast<size_t>(k)];
      rest /= l.x_shape[static_cast<size_t>(k)];
    }
    if (!l.block) {
      out[static_cast<size_t>(i)] = idx[static_cast<size_t>(a)];
    } else {
      idx[static_cast<size_t>(a)] /= *l.block;
      int64_t flat = 0;
      for (int64_t k = 0; k < r; ++k) flat = flat * l.scale_shape[static_cast<size_t>(k)] + idx[static_cast<size_t>(k)];
      out[static_cast<size_t>(i)] = flat;
    }
  }
  return out;
}

// =============================================================================================
// Random inputs.

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  double uniform(double a, double b) { return std::uniform_real_distribution<double>(a, b)(g); }
  int64_t integer(int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(g); }
  bool chance(double p) { return uniform(0, 1) < p; }
};

uint64_t random_scale_code(Rng& rng, DataType t) {
  if (t == DataType::kFloat8E8M0) return static_cast<uint64_t>(rng.integer(0x79, 0x83));
  if (t == DataType::kInt32) return static_cast<uint64_t>(rng.chance(0.1) ? 268435456 : rng.integer(1, 7));
  const double v = std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.integer(-6, 3)));
  return code_of_real(t, v);
}

const double kSpecials[] = {std::numeric_limits<double>::quiet_NaN(),
                            -std::numeric_limits<double>::quiet_NaN(),
                            INFINITY,
                            -INFINITY,
                            0.0,
                            -0.0,
                            1e30,
                            -1e30,
                            3e9,
                            -3e9,
                            65520.0,
                            70000.0};

/// A random x value suited to the output type and the element's scale s (value, not code).
double random_x_value(Rng& rng, DataType y_type, double s, int64_t zp) {
  if (rng.chance(0.05)) return kSpecials[rng.integer(0, std::size(kSpecials) - 1)];
  if (is_int_type(y_type)) {
    const int64_t lo = int_min(y_type) - zp - 2;
    const int64_t hi = int_max(y_type) - zp + 2;
    const double t = static_cast<double>(rng.integer(lo, hi));
    static const double fracs[] = {0.0, 0.5, -0.5, 0.25, 0.49999};
    const double f = rng.chance(0.5) ? fracs[rng.integer(0, 4)] : rng.uniform(-0.5, 0.5);
    return (t + f) * s;
  }
  if (y_type == DataType::kFloat4E2M1) {
    return (rng.chance(0.5) ? static_cast<double>(rng.integer(-32, 32)) / 4.0 : rng.uniform(-8, 8)) * s;
  }
  // Float8: exact codes, midpoints and random magnitudes over the format's range.
  const double sign = rng.chance(0.5) ? -1.0 : 1.0;
  if (rng.chance(0.3)) {
    const double v = narrow_value(y_type, static_cast<uint64_t>(rng.integer(0, 255)));
    return std::isnan(v) ? 1.0 : v * s;
  }
  return sign * std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.integer(-20, 17))) * s;
}

uint64_t random_zero_point_code(Rng& rng, DataType zp_type) {
  if (is_int_type(zp_type)) {
    const int64_t v = rng.integer(int_min(zp_type), int_max(zp_type));
    return static_cast<uint64_t>(v) & ((uint64_t(1) << type_bits(zp_type)) - 1);
  }
  if (zp_type == DataType::kFloat4E2M1) return static_cast<uint64_t>(rng.integer(0, 15));
  return static_cast<uint64_t>(rng.integer(0, 255));  // float8: any value, not added
}

std::string tname(DataType t) { return qdq::data_type_name(t); }

// The type lists follow data_types.inc: every QuantizeLinear y, x and y_scale type.
constexpr d::TypeList kQuantizedTypes = d::kQuantizedTypes;
constexpr d::TypeList kXTypes = d::types_in_role(d::TypeRole::kQuantizeX);
constexpr d::TypeList kQScaleTypes = d::types_in_role(d::TypeRole::kQuantizeScale);
static_assert(kQuantizedTypes.size() == 13 && kXTypes.size() == 4 && kQScaleTypes.size() == 5);

// =============================================================================================
// QuantizeLinear against the oracle: every (y, x, scale) type triple × every layout × zero point
// present / absent × saturate × precision.

using QParam = std::tuple<DataType, DataType, DataType>;  // y, x, scale

class QuantizeTyped : public ::testing::TestWithParam<QParam> {};

struct QRun {
  Tensor x, scale, zp, y;
  std::vector<uint64_t> expected;
};

/// Builds random inputs for a layout, runs QuantizeLinear and the oracle.
void check_quantize(const QuantizeSpec& spec_in, const Layout& l, uint64_t seed,
                    const qdq::ExecutionOptions& opts = {}) {
  QuantizeSpec spec = spec_in;
  Rng rng(seed);
  const int64_t n = numel(l.x_shape);
  const int64_t ns = numel(l.scale_shape);
  std::vector<uint64_t> s_codes, zp_codes, x_codes;
  for (int64_t i = 0; i < ns; ++i) s_codes.push_back(random_scale_code(rng, spec.scale_type));
  for (int64_t i = 0; i < ns; ++i) zp_codes.push_back(spec.has_zp ? random_zero_point_code(rng, spec.zp_type) : 0);
  const auto pidx = param_indices(l);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = pidx[static_cast<size_t>(i)];
    const double s = real_value(spec.scale_type, s_codes[static_cast<size_t>(k)]);
    int64_t zpv = 0;
    if (spec.has_zp && is_int_type(spec.zp_type)) {
      zpv = Tensor(spec.zp_type, {}, pack(spec.zp_type, {zp_codes[static_cast<size_t>(k)]})).ints()[0];
    }
    x_codes.push_back(code_of_real(spec.x_type, random_x_value(rng, spec.y_type, s, zpv)));
  }
  const Tensor x = from_codes(spec.x_type, l.x_shape, x_codes);
  const Tensor scale = from_codes(spec.scale_type, l.scale_shape, s_codes);
  const Tensor zp = from_codes(spec.has_zp ? spec.zp_type : DataType::kUint8, l.scale_shape, zp_codes);
  qdq::QuantizeLinearAttributes a;
  a.opset = 25;
  a.axis = l.axis;
  a.block_size = l.block;
  if (!spec.has_zp) a.output_dtype = static_cast<int64_t>(spec.y_type);
  if (is_float8(spec.y_type)) a.saturate = spec.saturate ? 1 : 0;
  if (spec.precision != 0) a.precision = spec.precision;
  std::vector<uint64_t> expected;
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
    expected.push_back(oracle_quantize(spec, x_codes[static_cast<size_t>(i)], s_codes[k], zp_codes[k]));
  }
  const auto zv = zp.view();
  const qdq::TensorView* zpp = spec.has_zp ? &zv : nullptr;
  qdq::TensorSpec out;
  ASSERT_NO_THROW(out = qdq::quantize_linear_output(a, x.view(), scale.view(), zpp)) << l.name;
  EXPECT_EQ(out.type, spec.y_type);
  EXPECT_EQ(out.shape, l.x_shape);
  ASSERT_EQ(out.size_bytes, byte_size(spec.y_type, n));
  Tensor y = output(spec.y_type, l.x_shape, 0xCD);
  try {
    qdq::quantize_linear(a, x.view(), scale.view(), zpp, y.mut(), opts);
  } catch (const std::exception& e) {
    FAIL() << l.name << ": unexpected error " << e.what();
  }
  // Compare whole bytes (padding bits of packed outputs must be zero), then report per element.
  if (y.bytes != pack(spec.y_type, expected)) {
    const auto got = y.codes();
    int shown = 0;
    for (int64_t i = 0; i < n && shown < 8; ++i) {
      if (got[static_cast<size_t>(i)] != expected[static_cast<size_t>(i)]) {
        ++shown;
        const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
        ADD_FAILURE() << l.name << " y=" << tname(spec.y_type) << " x=" << tname(spec.x_type)
                      << " scale=" << tname(spec.scale_type) << " zp=" << (spec.has_zp ? tname(spec.zp_type) : "none")
                      << " sat=" << spec.saturate << " precision=" << spec.precision << " element " << i
                      << ": x code 0x" << std::hex << x_codes[static_cast<size_t>(i)] << " ("
                      << real_value(spec.x_type, x_codes[static_cast<size_t>(i)]) << "), scale code 0x" << s_codes[k]
                      << " (" << real_value(spec.scale_type, s_codes[k]) << "), zp code 0x" << zp_codes[k] << ": got 0x"
                      << got[static_cast<size_t>(i)] << ", want 0x" << expected[static_cast<size_t>(i)];
      }
    }
    if (shown == 0) ADD_FAILURE() << l.name << ": element codes match but padding bits differ (must be zero)";
  }
  if (is_int_type(spec.y_type) && qdq::bit_width(spec.y_type) < 8) {
    // The same call with y one value per byte (CodeLayout::kOnePerByte): the oracle's codes as int8
    // values (signed types) or uint8 codes, and nothing written past them.
    const int bits = qdq::bit_width(spec.y_type);
    const bool is_signed = qdq::is_signed(spec.y_type);
    std::vector<uint8_t> values(static_cast<size_t>(n) + 1, 0xCD);
    const qdq::MutableTensorView yv{spec.y_type, l.x_shape, values.data(), static_cast<size_t>(n),
                                    qdq::CodeLayout::kOnePerByte};
    try {
      qdq::quantize_linear(a, x.view(), scale.view(), zpp, yv, opts);
    } catch (const std::exception& e) {
      FAIL() << l.name << " one value per byte: unexpected error " << e.what();
    }
    int shown = 0;
    for (int64_t i = 0; i < n && shown < 8; ++i) {
      const uint64_t code = expected[static_cast<size_t>(i)];
      const auto want =
          static_cast<uint8_t>(is_signed ? qdq::detail::sign_extend(static_cast<uint32_t>(code), bits) : code);
      if (values[static_cast<size_t>(i)] != want) {
        ++shown;
        ADD_FAILURE() << l.name << " y=" << tname(spec.y_type) << " one value per byte, element " << i << ": got 0x"
                      << std::hex << int{values[static_cast<size_t>(i)]} << ", want 0x" << int{want};
      }
    }
    EXPECT_EQ(values[static_cast<size_t>(n)], 0xCD) << l.name << ": written past y";
  }
}

TEST_P(QuantizeTyped, MatchesOracleOnEveryLayout) {
  const auto [y_type, x_type, scale_type] = GetParam();
  uint64_t seed = 1000 + static_cast<uint64_t>(y_type) * 10000 + static_cast<uint64_t>(x_type) * 100 +
                  static_cast<uint64_t>(scale_type);
  for (const Layout& l : layouts()) {
    for (bool has_zp : {true, false}) {
      for (bool sat : {true, false}) {
        if (!sat && !is_float8(y_type)) continue;
        QuantizeSpec spec{x_type, scale_type, y_type, sat, 0, has_zp, y_type};
        SCOPED_TRACE(l.name + (has_zp ? " zp" : " no zp") + (sat ? " sat" : " nosat"));
        check_quantize(spec, l, seed++);
      }
    }
  }
}

TEST_P(QuantizeTyped, PrecisionAttribute) {
  const auto [y_type, x_type, scale_type] = GetParam();
  uint64_t seed = 7 + static_cast<uint64_t>(y_type) * 10000 + static_cast<uint64_t>(x_type) * 100 +
                  static_cast<uint64_t>(scale_type);
  const Layout per_axis{"per_axis", {4, 6}, {6}, 1, std::nullopt};
  const Layout per_tensor{"per_tensor", {23}, {}, std::nullopt, std::nullopt};
  for (int64_t precision : {1, 10, 16}) {
    for (const Layout& l : {per_tensor, per_axis}) {
      QuantizeSpec spec{x_type, scale_type, y_type, true, precision, true, y_type};
      SCOPED_TRACE(l.name + " precision " + std::to_string(precision));
      check_quantize(spec, l, seed++);
    }
  }
}

std::string qparam_name(const ::testing::TestParamInfo<QParam>& info) {
  return tname(std::get<0>(info.param)) + "_x" + tname(std::get<1>(info.param)) + "_s" + tname(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, QuantizeTyped,
                         ::testing::Combine(::testing::ValuesIn(kQuantizedTypes), ::testing::ValuesIn(kXTypes),
                                            ::testing::ValuesIn(kQScaleTypes)),
                         qparam_name);

// =============================================================================================
// DequantizeLinear against the oracle: every (x, scale, output_dtype) combination × layout × zp.

using DQParam = std::tuple<DataType, DataType, DataType>;  // x, scale, output_dtype (kUndefined = absent)

class DequantizeTyped : public ::testing::TestWithParam<DQParam> {};

uint64_t random_dq_zero_point(Rng& rng, DataType x_type) {
  if (is_float8(x_type) && !d::type_info(x_type).negative_zero) return 0x00;  // FNUZ: 0x80 is NaN
  if (is_float8(x_type)) return rng.chance(0.5) ? 0x00 : 0x80;                // ±0 only
  if (x_type == DataType::kInt32) return static_cast<uint32_t>(static_cast<int32_t>(rng.integer(-100000, 100000)));
  return random_zero_point_code(rng, x_type);
}

uint64_t random_dq_x(Rng& rng, DataType x_type) {
  if (x_type == DataType::kInt32) {
    if (rng.chance(0.2)) {
      static const int64_t big[] = {16777217, 16777219, -16777217, 2147483647, -2147483648LL, 33554435};
      return static_cast<uint32_t>(static_cast<int32_t>(big[rng.integer(0, 5)]));
    }
    return static_cast<uint32_t>(static_cast<int32_t>(rng.integer(-100000, 100000)));
  }
  return static_cast<uint64_t>(rng.integer(0, (int64_t(1) << type_bits(x_type)) - 1));  // every code
}

uint64_t random_dq_scale(Rng& rng, DataType t) {
  if (t == DataType::kFloat8E8M0) {
    if (rng.chance(0.1)) {
      static const uint64_t edge[] = {0x00, 0x01, 0xFE, 0xFF, 0x90, 0x60};
      return edge[rng.integer(0, 5)];
    }
    return static_cast<uint64_t>(rng.integer(0x70, 0x8F));
  }
  if (rng.chance(0.05)) return code_of_real(t, rng.chance(0.5) ? 1e30 : 1e-30);
  return code_of_real(
      t, std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.integer(-10, 10))) * (rng.chance(0.1) ? -1.0 : 1.0));
}

void check_dequantize(const DequantizeSpec& spec, const Layout& l, std::optional<int64_t> output_dtype, uint64_t seed,
                      const qdq::ExecutionOptions& opts = {}) {
  Rng rng(seed);
  const int64_t n = numel(l.x_shape);
  const int64_t ns = numel(l.scale_shape);
  std::vector<uint64_t> s_codes, zp_codes, x_codes;
  for (int64_t i = 0; i < ns; ++i) s_codes.push_back(random_dq_scale(rng, spec.scale_type));
  for (int64_t i = 0; i < ns; ++i) zp_codes.push_back(spec.has_zp ? random_dq_zero_point(rng, spec.x_type) : 0);
  for (int64_t i = 0; i < n; ++i) x_codes.push_back(random_dq_x(rng, spec.x_type));
  const auto pidx = param_indices(l);
  const Tensor x = from_codes(spec.x_type, l.x_shape, x_codes);
  const Tensor scale = from_codes(spec.scale_type, l.scale_shape, s_codes);
  const Tensor zp = from_codes(spec.x_type, l.scale_shape, zp_codes);
  qdq::DequantizeLinearAttributes a;
  a.opset = 25;
  a.axis = l.axis;
  a.block_size = l.block;
  a.output_dtype = output_dtype;
  std::vector<uint64_t> expected;
  for (int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
    expected.push_back(oracle_dequantize(spec, x_codes[static_cast<size_t>(i)], s_codes[k], zp_codes[k]));
  }
  const auto zv = zp.view();
  const qdq::TensorView* zpp = spec.has_zp ? &zv : nullptr;
  qdq::TensorSpec out;
  ASSERT_NO_THROW(out = qdq::dequantize_linear_output(a, x.view(), scale.view(), zpp)) << l.name;
  EXPECT_EQ(out.type, spec.y_type);
  EXPECT_EQ(out.shape, l.x_shape);
  ASSERT_EQ(out.size_bytes, byte_size(spec.y_type, n));
  Tensor y = output(spec.y_type, l.x_shape, 0xCD);
  try {
    qdq::dequantize_linear(a, x.view(), scale.view(), zpp, y.mut(), opts);
  } catch (const std::exception& e) {
    FAIL() << l.name << ": unexpected error " << e.what();
  }
  const auto got = y.codes();
  int shown = 0;
  for (int64_t i = 0; i < n && shown < 8; ++i) {
    const uint64_t g = got[static_cast<size_t>(i)];
    const uint64_t w = expected[static_cast<size_t>(i)];
    // NaN outputs: any NaN is accepted (the payload is not part of the contract).
    const bool both_nan =
        spec.y_type == DataType::kFloat
            ? std::isnan(std::bit_cast<float>(uint32_t(g))) && std::isnan(std::bit_cast<float>(uint32_t(w)))
        : spec.y_type == DataType::kFloat16
            ? std::isnan(d::half_to_float(uint16_t(g))) && std::isnan(d::half_to_float(uint16_t(w)))
            : std::isnan(d::bfloat16_to_float(uint16_t(g))) && std::isnan(d::bfloat16_to_float(uint16_t(w)));
    if (g != w && !both_nan) {
      ++shown;
      const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
      ADD_FAILURE() << l.name << " x=" << tname(spec.x_type) << " scale=" << tname(spec.scale_type)
                    << " y=" << tname(spec.y_type) << " zp=" << spec.has_zp << " element " << i << ": x code 0x"
                    << std::hex << x_codes[static_cast<size_t>(i)] << ", scale code 0x" << s_codes[k] << " ("
                    << real_value(spec.scale_type, s_codes[k]) << "), zp code 0x" << zp_codes[k] << ": got 0x" << g
                    << ", want 0x" << w;
    }
  }
}

TEST_P(DequantizeTyped, MatchesOracleOnEveryLayout) {
  const auto [x_type, scale_type, out] = GetParam();
  const DataType y_type = out == DataType::kUndefined ? scale_type : out;
  const std::optional<int64_t> output_dtype =
      out == DataType::kUndefined ? std::nullopt : std::optional<int64_t>(static_cast<int64_t>(out));
  uint64_t seed = 5000 + static_cast<uint64_t>(x_type) * 10000 + static_cast<uint64_t>(scale_type) * 100 +
                  static_cast<uint64_t>(out);
  for (const Layout& l : layouts()) {
    for (bool has_zp : {true, false}) {
      DequantizeSpec spec{x_type, scale_type, y_type, has_zp};
      SCOPED_TRACE(l.name + (has_zp ? " zp" : " no zp"));
      check_dequantize(spec, l, output_dtype, seed++);
    }
  }
}

std::vector<DQParam> dq_params() {
  std::vector<DQParam> out;
  std::vector<DataType> xs(std::begin(kQuantizedTypes), std::end(kQuantizedTypes));
  xs.push_back(DataType::kInt32);
  for (DataType x : xs) {
    for (DataType s : {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat8E8M0}) {
      for (DataType o : {DataType::kUndefined, DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}) {
        if (s == DataType::kFloat8E8M0 && o == DataType::kUndefined) continue;  // output_dtype required
        out.emplace_back(x, s, o);
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, DequantizeTyped, ::testing::ValuesIn(dq_params()),
                         [](const ::testing::TestParamInfo<DQParam>& info) {
                           const DataType o = std::get<2>(info.param);
                           return tname(std::get<0>(info.param)) + "_s" + tname(std::get<1>(info.param)) + "_out" +
                                  (o == DataType::kUndefined ? std::string("Default") : tname(o));
                         });

// =============================================================================================
// Older versions: the arithmetic is the same wherever the types are allowed.

TEST(QuantizeVersions, SameArithmeticAtEveryVersion) {
  const Layout per_tensor{"per_tensor", {29}, {}, std::nullopt, std::nullopt};
  const Layout per_axis{"per_axis", {3, 4}, {4}, std::nullopt, std::nullopt};
  uint64_t seed = 99;
  for (int64_t opset : {10, 11, 13, 19, 21, 23, 24, 25}) {
    for (DataType y : {DataType::kUint8, DataType::kInt8}) {
      for (DataType x : {DataType::kFloat, DataType::kInt32}) {
        for (const Layout& l : {per_tensor, per_axis}) {
          if (opset < 13 && !l.scale_shape.empty()) continue;
          Rng rng(seed++);
          std::vector<uint64_t> s_codes, zp_codes, x_codes;
          for (int64_t i = 0; i < numel(l.scale_shape); ++i) {
            s_codes.push_back(random_scale_code(rng, DataType::kFloat));
            zp_codes.push_back(random_zero_point_code(rng, y));
          }
          const auto pidx = param_indices(l);
          for (int64_t i = 0; i < numel(l.x_shape); ++i) {
            const double s = real_value(DataType::kFloat, s_codes[static_cast<size_t>(pidx[static_cast<size_t>(i)])]);
            x_codes.push_back(code_of_real(x, random_x_value(rng, y, s, 0)));
          }
          if (x == DataType::kInt32) x_codes[0] = 16777217;  // rounds to float32 16777216 (float32 division)
          // At v19/v21 x and y_scale must have the same type: an int32 x needs an int32 scale there.
          const DataType st = (x == DataType::kInt32 && (opset == 19 || opset == 21 || opset == 20 || opset == 22))
                                  ? DataType::kInt32
                                  : DataType::kFloat;
          if (st == DataType::kInt32) {
            for (auto& c : s_codes) c = static_cast<uint64_t>(rng.integer(1, 5));
          }
          if (opset < 19 && x == DataType::kInt32 && st != DataType::kFloat) continue;
          const QuantizeSpec spec{x, st, y, true, 0, true, y};
          const Tensor xt = from_codes(x, l.x_shape, x_codes);
          const Tensor st_t = from_codes(st, l.scale_shape, s_codes);
          const Tensor zp = from_codes(y, l.scale_shape, zp_codes);
          qdq::QuantizeLinearAttributes a;
          a.opset = opset;
          Tensor out = output(y, l.x_shape);
          const auto zv = zp.view();
          try {
            qdq::quantize_linear(a, xt.view(), st_t.view(), &zv, out.mut());
          } catch (const std::exception& e) {
            ADD_FAILURE() << "opset " << opset << " " << l.name << " x " << tname(x) << ": " << e.what();
            continue;
          }
          std::vector<uint64_t> expected;
          for (int64_t i = 0; i < numel(l.x_shape); ++i) {
            const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
            expected.push_back(oracle_quantize(spec, x_codes[static_cast<size_t>(i)], s_codes[k], zp_codes[k]));
          }
          EXPECT_EQ(out.codes(), expected)
              << "opset " << opset << " " << l.name << " x " << tname(x) << " y " << tname(y);
        }
      }
    }
  }
}

TEST(DequantizeVersions, SameArithmeticAtEveryVersion) {
  uint64_t seed = 4242;
  for (int64_t opset : {10, 13, 19, 21, 23, 24, 25}) {
    for (DataType x : {DataType::kUint8, DataType::kInt8, DataType::kInt32}) {
      Rng rng(seed++);
      const Layout l = opset >= 13 ? Layout{"per_axis", {2, 5}, {5}, std::nullopt, std::nullopt}
                                   : Layout{"per_tensor", {9}, {}, std::nullopt, std::nullopt};
      std::vector<uint64_t> s_codes, zp_codes, x_codes;
      for (int64_t i = 0; i < numel(l.scale_shape); ++i) {
        s_codes.push_back(random_dq_scale(rng, DataType::kFloat));
        zp_codes.push_back(random_dq_zero_point(rng, x));
      }
      for (int64_t i = 0; i < numel(l.x_shape); ++i) x_codes.push_back(random_dq_x(rng, x));
      const DequantizeSpec spec{x, DataType::kFloat, DataType::kFloat, true};
      const Tensor xt = from_codes(x, l.x_shape, x_codes);
      const Tensor st = from_codes(DataType::kFloat, l.scale_shape, s_codes);
      const Tensor zp = from_codes(x, l.scale_shape, zp_codes);
      qdq::DequantizeLinearAttributes a;
      a.opset = opset;
      Tensor out = output(DataType::kFloat, l.x_shape);
      const auto zv = zp.view();
      try {
        qdq::dequantize_linear(a, xt.view(), st.view(), &zv, out.mut());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "opset " << opset << " x " << tname(x) << ": " << e.what();
        continue;
      }
      const auto pidx = param_indices(l);
      std::vector<uint64_t> expected;
      for (int64_t i = 0; i < numel(l.x_shape); ++i) {
        const auto k = static_cast<size_t>(pidx[static_cast<size_t>(i)]);
        expected.push_back(oracle_dequantize(spec, x_codes[static_cast<size_t>(i)], s_codes[k], zp_codes[k]));
      }
      EXPECT_EQ(out.codes(), expected) << "opset " << opset << " x " << tname(x);
    }
  }
}

// =============================================================================================
// Special scales: zero, negative, NaN, infinite — ordinary IEEE division, then the output rules.

TEST(QuantizeSpecialScales, ZeroNegativeNaNInfinite) {
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (DataType y : kQuantizedTypes) {
    for (float s : {0.0f, -0.0f, -2.0f, kNaN, INFINITY, -INFINITY}) {
      const std::vector<float> xs = {0.0f, -0.0f, 1.0f, -3.0f, 5.5f, kNaN, INFINITY, -INFINITY};
      std::vector<uint64_t> x_codes;
      for (float v : xs) x_codes.push_back(std::bit_cast<uint32_t>(v));
      const Tensor x = from_codes(DataType::kFloat, {8}, x_codes);
      const Tensor st = scalar_f32(s);
      qdq::QuantizeLinearAttributes a;
      a.output_dtype = static_cast<int64_t>(y);
      Tensor out = output(y, {8});
      qdq::quantize_linear(a, x.view(), st.view(), nullptr, out.mut());
      const QuantizeSpec spec{DataType::kFloat, DataType::kFloat, y, true, 0, false, y};
      std::vector<uint64_t> expected;
      for (uint64_t c : x_codes) expected.push_back(oracle_quantize(spec, c, std::bit_cast<uint32_t>(s), 0));
      EXPECT_EQ(out.codes(), expected) << tname(y) << " scale " << s;
    }
  }
}

// =============================================================================================
// Properties.

constexpr d::TypeList kIntTypes = d::kQuantizedIntegerTypes;

// DQ(Q(x)) is within half a quantization step of x for x inside the representable range.
TEST(RoundTrip, DequantizeOfQuantizeWithinHalfAStep) {
  Rng rng(31337);
  for (DataType y : kIntTypes) {
    for (int trial = 0; trial < 20; ++trial) {
      const float s = static_cast<float>(std::ldexp(rng.uniform(1.0, 2.0), static_cast<int>(rng.integer(-8, 4))));
      const int64_t zp = rng.integer(int_min(y), int_max(y));
      const int64_t n = 257;
      std::vector<float> xs;
      for (int64_t i = 0; i < n; ++i) {
        xs.push_back(static_cast<float>(
            rng.uniform(static_cast<double>(int_min(y) - zp), static_cast<double>(int_max(y) - zp)) * s));
      }
      const Tensor x = f32({n}, xs);
      const Tensor sc = scalar_f32(s);
      const Tensor z = from_ints(y, {}, {zp});
      const auto zv = z.view();
      Tensor q = output(y, {n});
      qdq::quantize_linear({}, x.view(), sc.view(), &zv, q.mut());
      Tensor back = output(DataType::kFloat, {n});
      qdq::dequantize_linear({}, q.view(), sc.view(), &zv, back.mut());
      const auto r = back.floats();
      for (int64_t i = 0; i < n; ++i) {
        const double err = std::fabs(double(r[static_cast<size_t>(i)]) - double(xs[static_cast<size_t>(i)]));
        const double tol = 0.5 * s * (1 + 1e-6) + std::fabs(xs[static_cast<size_t>(i)]) * 1e-6;
        ASSERT_LE(err, tol) << tname(y) << " x " << xs[static_cast<size_t>(i)] << " scale " << s << " zp " << zp
                            << " → " << r[static_cast<size_t>(i)];
      }
    }
  }
}

// Float8 / float4: DQ(Q(x)) is the nearest representable value (within half an ulp of the format).
TEST(RoundTrip, Float8AndFloat4WithinHalfAnUlp) {
  Rng rng(4711);
  for (DataType y : d::kQuantizedFloatTypes) {
    // Largest finite value of the format.
    double maxv = 0;
    for (uint64_t c = 0; c < (y == DataType::kFloat4E2M1 ? 16u : 256u); ++c) {
      const double v = narrow_value(y, c);
      if (std::isfinite(v)) maxv = std::max(maxv, v);
    }
    const int man_bits = mantissa_bits(y);
    double min_sub = INFINITY;
    for (uint64_t c = 1; c < 8; ++c) min_sub = std::min(min_sub, std::fabs(narrow_value(y, c)));
    const float s = 0.5f;
    const int64_t n = 301;
    std::vector<float> xs;
    for (int64_t i = 0; i < n; ++i) {
      const double mag =
          rng.chance(0.5) ? rng.uniform(0, maxv) : std::ldexp(rng.uniform(1, 2), static_cast<int>(rng.integer(-14, 8)));
      xs.push_back(static_cast<float>(std::min(mag, maxv) * s * (rng.chance(0.5) ? -1 : 1)));
    }
    const Tensor x = f32({n}, xs);
    const Tensor sc = scalar_f32(s);
    qdq::QuantizeLinearAttributes qa;
    qa.output_dtype = static_cast<int64_t>(y);
    Tensor q = output(y, {n});
    qdq::quantize_linear(qa, x.view(), sc.view(), nullptr, q.mut());
    Tensor back = output(DataType::kFloat, {n});
    qdq::dequantize_linear({}, q.view(), sc.view(), nullptr, back.mut());
    const auto r = back.floats();
    for (int64_t i = 0; i < n; ++i) {
      const double xi = xs[static_cast<size_t>(i)];
      const double err = std::fabs(double(r[static_cast<size_t>(i)]) - xi);
      const double tol = std::max(std::fabs(xi) * std::ldexp(1.0, -(man_bits + 1)), 0.5 * min_sub * s) * (1 + 1e-9);
      ASSERT_LE(err, tol) << tname(y) << " x " << xi << " → " << r[static_cast<size_t>(i)];
    }
  }
}

// For a positive scale, Q is monotonic in x (every output type; float8 saturating).
TEST(Monotonicity, QuantizeIsMonotonicInX) {
  Rng rng(2718);
  std::vector<float> xs;
  for (int i = 0; i < 20000; ++i) {
    xs.push_back(static_cast<float>(rng.chance(0.5)
                                        ? rng.uniform(-300, 300)
                                        : std::ldexp(rng.uniform(-2, 2), static_cast<int>(rng.integer(-20, 20)))));
  }
  xs.push_back(INFINITY);
  xs.push_back(-INFINITY);
  xs.push_back(1e30f);
  std::sort(xs.begin(), xs.end());
  const auto n = static_cast<int64_t>(xs.size());
  const Tensor x = f32({n}, xs);
  for (DataType y : kQuantizedTypes) {
    for (DataType st : {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}) {
      const Tensor sc = from_codes(st, {}, {code_of_real(st, 0.37)});
      qdq::QuantizeLinearAttributes a;
      a.output_dtype = static_cast<int64_t>(y);
      Tensor q = output(y, {n});
      qdq::quantize_linear(a, x.view(), sc.view(), nullptr, q.mut());
      double prev = -INFINITY;
      const auto codes = q.codes();
      const auto ints = q.ints();
      for (int64_t i = 0; i < n; ++i) {
        double v;
        if (is_int_type(y)) {
          v = static_cast<double>(ints[static_cast<size_t>(i)]);
        } else {
          v = narrow_value(y, codes[static_cast<size_t>(i)]);
          // FNUZ: a quotient that is ±inf in the division type (x = ±inf, or x overflowing a 16-bit
          // P) gives NaN (policy.md); skip those points when the oracle agrees.
          const QuantizeSpec spec{DataType::kFloat, st, y, true, 0, false, y};
          if (std::isnan(v) && oracle_quantize(spec, bits_of(xs[static_cast<size_t>(i)]), code_of_real(st, 0.37), 0) ==
                                   codes[static_cast<size_t>(i)]) {
            continue;
          }
        }
        ASSERT_FALSE(std::isnan(v)) << tname(y) << " x " << xs[static_cast<size_t>(i)];
        ASSERT_LE(prev, v) << tname(y) << " scale " << tname(st)
                           << " not monotonic at x = " << xs[static_cast<size_t>(i)];
        prev = v;
      }
    }
  }
}

// =============================================================================================
// Packed outputs: odd lengths, per-axis rows and blocks starting inside a byte, padding zero.

TEST(PackedOutputs, OddLengthsAndUnalignedRows) {
  uint64_t seed = 606;
  for (DataType y : d::kPackedTypes) {
    for (int64_t cols : {1, 2, 3, 5, 7, 9}) {
      for (int64_t rows : {1, 3}) {
        const Layout per_axis{"per_axis_rows", {rows, cols}, {rows}, 0, std::nullopt};
        const Layout blocked{"blocked_rows", {rows, cols}, {rows, (cols + 1) / 2}, 1, 2};
        const Layout flat{"per_tensor_odd", {rows * cols}, {}, std::nullopt, std::nullopt};
        for (const Layout& l : {per_axis, blocked, flat}) {
          for (bool has_zp : {true, false}) {
            SCOPED_TRACE(l.name + " " + tname(y) + " " + std::to_string(rows) + "x" + std::to_string(cols));
            check_quantize(QuantizeSpec{DataType::kFloat, DataType::kFloat, y, true, 0, has_zp, y}, l, seed++);
            check_dequantize(DequantizeSpec{y, DataType::kFloat, DataType::kFloat, has_zp}, l, std::nullopt, seed++);
          }
        }
      }
    }
  }
}

// =============================================================================================
// Threads: results do not depend on the thread count, the caller's ParallelFor, or force_scalar.

TEST(Threads, ResultsIndependentOfExecution) {
  qdq::ExecutionOptions one;
  one.num_threads = 1;
  qdq::ExecutionOptions two;
  two.num_threads = 2;
  qdq::ExecutionOptions four_scalar;
  four_scalar.num_threads = 4;
  four_scalar.force_scalar = true;
  qdq::ExecutionOptions custom;
  custom.num_threads = 3;
  std::atomic<int> calls{0};
  custom.parallel_for = [&calls](size_t tasks, const std::function<void(size_t)>& body) {
    ++calls;
    std::vector<std::thread> threads;
    for (size_t t = tasks; t-- > 0;) threads.emplace_back([&body, t] { body(t); });  // reverse order, concurrently
    for (auto& th : threads) th.join();
  };
  uint64_t seed = 123;
  for (DataType y : {DataType::kUint8, DataType::kInt4, DataType::kInt2, DataType::kFloat8E4M3FN, DataType::kFloat4E2M1,
                     DataType::kInt16}) {
    const Layout big_axis{"big_per_axis", {3, 33335}, {33335}, 1, std::nullopt};  // odd element count
    const Layout big_blocked{"big_blocked", {70001, 2}, {4376, 2}, 0, 16};        // 70001/16 → 4376 blocks
    // Rows past a tile: row-tile tasks (a ragged last block of rows and column run; an outer axis).
    const Layout row_tiles{"row_tiles", {19, 8200}, {1, 8200}, 0, 32};
    const Layout row_tiles_middle{"row_tiles_middle", {2, 40, 1500}, {2, 2, 1500}, 1, 32};
    // Rows long enough for float8 quantize's row-tile tasks too (a ragged last column run).
    const Layout long_rows{"long_rows", {3, 32772}, {1, 32772}, 0, 32};
    for (const Layout& l : {big_axis, big_blocked, row_tiles, row_tiles_middle, long_rows}) {
      for (const auto* opts : {&one, &two, &four_scalar, &custom}) {
        SCOPED_TRACE(l.name + " " + tname(y));
        check_quantize(QuantizeSpec{DataType::kFloat, DataType::kFloat, y, true, 0, true, y}, l, seed, *opts);
        if (y != DataType::kInt16) {
          check_dequantize(DequantizeSpec{y, DataType::kFloat, DataType::kFloat16, true}, l,
                           static_cast<int64_t>(DataType::kFloat16), seed + 1, *opts);
        }
      }
      seed += 2;
    }
  }
  EXPECT_GT(calls.load(), 0) << "the caller's ParallelFor was never used";
  // Dynamic quantization too.
  Rng rng(9);
  std::vector<float> xs(100003);
  for (auto& v : xs) v = static_cast<float>(rng.uniform(-7, 3));
  const Tensor x = f32({static_cast<int64_t>(xs.size())}, xs);
  Tensor y1 = output(DataType::kUint8, x.shape), y2 = output(DataType::kUint8, x.shape),
         y3 = output(DataType::kUint8, x.shape);
  const auto p1 = qdq::dynamic_quantize_linear(x.view(), y1.mut(), one);
  const auto p2 = qdq::dynamic_quantize_linear(x.view(), y2.mut(), two);
  const auto p3 = qdq::dynamic_quantize_linear(x.view(), y3.mut(), custom);
  EXPECT_EQ(bits_of(p1.y_scale), bits_of(p2.y_scale));
  EXPECT_EQ(bits_of(p1.y_scale), bits_of(p3.y_scale));
  EXPECT_EQ(p1.y_zero_point, p2.y_zero_point);
  EXPECT_EQ(p1.y_zero_point, p3.y_zero_point);
  EXPECT_EQ(y1.bytes, y2.bytes);
  EXPECT_EQ(y1.bytes, y3.bytes);
}

// The range pass reads its chunks in an order of its own (the last first): each extreme, and a
// NaN, must count wherever it lies, in the first, a middle or the ragged last chunk, on any
// number of threads.
TEST(Threads, DynamicRangeSeesEveryChunk) {
  const size_t n = 3 * 32768 + 5;  // three whole tasks and a ragged one
  qdq::ExecutionOptions one, two;
  one.num_threads = 1;
  two.num_threads = 2;
  for (const size_t at : {size_t{0}, size_t{32767}, size_t{32768}, size_t{65600}, n - 5, n - 1}) {
    SCOPED_TRACE("extremes at " + std::to_string(at));
    std::vector<float> xs(n, 1.0f);
    xs[at] = -4.0f;  // the minimum alone
    const Tensor low = f32({static_cast<int64_t>(n)}, xs);
    xs[at] = 10.0f;  // the maximum alone
    const Tensor high = f32({static_cast<int64_t>(n)}, xs);
    xs[at] = std::numeric_limits<float>::quiet_NaN();
    const Tensor nan = f32({static_cast<int64_t>(n)}, xs);
    for (const auto* opts : {&one, &two}) {
      Tensor y = output(DataType::kUint8, low.shape);
      auto p = qdq::dynamic_quantize_linear(low.view(), y.mut(), *opts);
      EXPECT_EQ(bits_of(p.y_scale), bits_of(5.0f / 255.0f));  // the range [-4, 1]
      EXPECT_EQ(p.y_zero_point, 204);
      EXPECT_EQ(y.bytes[at], 0);
      p = qdq::dynamic_quantize_linear(high.view(), y.mut(), *opts);
      EXPECT_EQ(bits_of(p.y_scale), bits_of(10.0f / 255.0f));  // the range [0, 10]: zero is always in it
      EXPECT_EQ(p.y_zero_point, 0);
      EXPECT_EQ(y.bytes[at], 255);
      p = qdq::dynamic_quantize_linear(nan.view(), y.mut(), *opts);
      EXPECT_TRUE(std::isnan(p.y_scale));
    }
  }
}

// =============================================================================================
// Output untouched on error.

TEST(OutputUntouchedOnError, QuantizeAndDequantize) {
  const uint8_t sentinel = 0xA5;
  // Q: output_dtype disagrees with the zero point.
  {
    const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
    const Tensor s = scalar_f32(1);
    const Tensor zp = from_ints(DataType::kUint8, {}, {3});
    const auto zv = zp.view();
    Tensor y = output(DataType::kUint8, {2, 3}, sentinel);
    qdq::QuantizeLinearAttributes a;
    a.output_dtype = static_cast<int64_t>(DataType::kInt8);
    EXPECT_THROW(qdq::quantize_linear(a, x.view(), s.view(), &zv, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(6, sentinel));
  }
  // Q: the output buffer has the wrong size (one byte short).
  {
    const Tensor x = f32({5}, {1, 2, 3, 4, 5});
    Tensor y(DataType::kInt4, {5}, std::vector<uint8_t>(2, sentinel));
    qdq::QuantizeLinearAttributes a;
    a.output_dtype = static_cast<int64_t>(DataType::kInt4);
    EXPECT_THROW(qdq::quantize_linear(a, x.view(), scalar_f32(1).view(), nullptr, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(2, sentinel));
  }
  // Q: blocked scale with the wrong block count.
  {
    const Tensor x = f32({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    const Tensor s = f32({2, 2}, {1, 1, 1, 1});
    Tensor y = output(DataType::kUint8, {2, 5}, sentinel);
    qdq::QuantizeLinearAttributes a;
    a.axis = 1;
    a.block_size = 2;
    EXPECT_THROW(qdq::quantize_linear(a, x.view(), s.view(), nullptr, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(10, sentinel));
  }
  // DQ: float8 zero point not zero in its last element only (the check reads data).
  {
    const Tensor x = from_codes(DataType::kFloat8E4M3FN, {2, 3}, {0x38, 0x40, 0x48, 0x38, 0x40, 0x48});
    const Tensor s = f32({3}, {1, 2, 3});
    const Tensor zp = from_codes(DataType::kFloat8E4M3FN, {3}, {0x00, 0x80, 0x30});
    const auto zv = zp.view();
    Tensor y = output(DataType::kFloat, {2, 3}, sentinel);
    EXPECT_THROW(qdq::dequantize_linear({}, x.view(), s.view(), &zv, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(24, sentinel));
  }
  // DQ: output of the wrong type.
  {
    const Tensor x = from_ints(DataType::kUint8, {3}, {1, 2, 3});
    Tensor y = output(DataType::kFloat16, {3}, sentinel);
    EXPECT_THROW(qdq::dequantize_linear({}, x.view(), scalar_f32(1).view(), nullptr, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(6, sentinel));
  }
  // DQ: output of the wrong shape (same byte count).
  {
    const Tensor x = from_ints(DataType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 6});
    Tensor y = output(DataType::kFloat, {3, 2}, sentinel);
    EXPECT_THROW(qdq::dequantize_linear({}, x.view(), scalar_f32(1).view(), nullptr, y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(24, sentinel));
  }
  // Dynamic: output of the wrong type.
  {
    const Tensor x = f32({3}, {1, 2, 3});
    Tensor y = output(DataType::kInt8, {3}, sentinel);
    EXPECT_THROW(qdq::dynamic_quantize_linear(x.view(), y.mut()), qdq::Error);
    EXPECT_EQ(y.bytes, std::vector<uint8_t>(3, sentinel));
  }
}

}  // namespace
