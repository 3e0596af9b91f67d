// Hostile arguments through the public API: shapes whose element or byte counts overflow 64 bits
// (rejected from the shape alone — the buffers here are a few bytes, nothing large is allocated),
// negative dims, unknown type numbers, null pointers, extreme attribute values, output views that
// do not match. Every case must end in a qdq::Error whose message names the operator and the
// problem, with the output untouched; under scripts/sanitize.sh also without any UB report.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;

constexpr int64_t k2p40 = int64_t{1} << 40;
constexpr int64_t k2p62 = int64_t{1} << 62;

/// Runs `f`, which must throw qdq::Error whose message contains every one of `parts`.
void expect_error(const std::function<void()>& f, std::initializer_list<const char*> parts) {
  try {
    f();
    ADD_FAILURE() << "no qdq::Error thrown (expected one mentioning '" << *parts.begin() << "')";
  } catch (const qdq::Error& e) {
    for (const char* p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "message: " << e.what() << "\nmissing: " << p;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw " << typeid(e).name() << " instead of qdq::Error: " << e.what();
  }
}

/// A small output buffer pre-filled with a pattern; untouched() checks nothing was written.
struct Sentinel {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(64, 0x5A);
  bool untouched() const {
    for (uint8_t b : bytes) {
      if (b != 0x5A) return false;
    }
    return true;
  }
};

float g_scale = 0.5f;
uint8_t g_zero = 0;
float g_small[16] = {};

qdq::TensorView scalar_scale() { return {DataType::kFloat, {}, &g_scale, 4}; }

TEST(HostileArguments, ElementCountOverflowingIsRejectedFromTheShape) {
  const std::vector<std::vector<int64_t>> shapes = {
      {k2p40, k2p40}, {INT64_MAX, 2}, {k2p62, 2}, {3, 3, INT64_MAX}, {int64_t{1} << 32, int64_t{1} << 32}};
  for (const auto& shape : shapes) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    Sentinel y;
    const qdq::TensorView xf{DataType::kFloat, shape, g_small, sizeof g_small};
    const qdq::TensorView xi{DataType::kInt4, shape, g_small, sizeof g_small};
    const qdq::MutableTensorView yq{DataType::kUint8, shape, y.bytes.data(), y.bytes.size()};
    const qdq::MutableTensorView yd{DataType::kFloat, shape, y.bytes.data(), y.bytes.size()};
    const auto s = scalar_scale();
    expect_error([&] { qdq::quantize_linear_output({}, xf, s, nullptr); }, {"QuantizeLinear", "x", "2^63"});
    expect_error([&] { qdq::quantize_linear({}, xf, s, nullptr, yq); }, {"QuantizeLinear", "x", "2^63"});
    expect_error([&] { qdq::dequantize_linear_output({}, xi, s, nullptr); }, {"DequantizeLinear", "x", "2^63"});
    expect_error([&] { qdq::dequantize_linear({}, xi, s, nullptr, yd); }, {"DequantizeLinear", "x", "2^63"});
    expect_error([&] { qdq::dynamic_quantize_linear(xf, yq); }, {"DynamicQuantizeLinear", "x", "2^63"});
    EXPECT_TRUE(y.untouched());
  }
}

TEST(HostileArguments, ByteSizeOverflowingIsRejected) {
  // 2^62 FLOAT elements fit in 63 bits, their 2^64 bytes do not.
  const int64_t shape[1] = {k2p62};
  const qdq::TensorView xf{DataType::kFloat, shape, g_small, sizeof g_small};
  Sentinel y;
  expect_error([&] { qdq::quantize_linear_output({}, xf, scalar_scale(), nullptr); },
               {"QuantizeLinear", "x", "overflow"});
  expect_error(
      [&] {
        qdq::quantize_linear({}, xf, scalar_scale(), nullptr, {DataType::kUint8, shape, y.bytes.data(), 64});
      },
      {"QuantizeLinear", "x", "overflow"});
  // The scale's shape too.
  const int64_t x_shape[2] = {2, 2};
  const int64_t scale_shape[2] = {2, k2p62};
  const qdq::TensorView x{DataType::kFloat, x_shape, g_small, 16};
  const qdq::TensorView s{DataType::kFloat, scale_shape, g_small, sizeof g_small};
  expect_error([&] { qdq::quantize_linear_output({}, x, s, nullptr); }, {"QuantizeLinear", "y_scale"});
  EXPECT_TRUE(y.untouched());
}

// dynamic_quantize_linear checked x's buffer as count * 4 in 64-bit unsigned arithmetic: for
// 2^62 + 1 elements that wraps to 4, so a 4-byte buffer passed the check for x (only the output
// check stopped the call). Fixed when this test passes; see README.md, "Reliability".
// OPEN BUG (reported; enable when fixed).
TEST(HostileArguments, DynamicQuantizeChecksXBytesWithoutWrapping) {
  const int64_t shape[1] = {k2p62 + 1};
  float x = 1.0f;
  Sentinel y;
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear({DataType::kFloat, shape, &x, 4}, {DataType::kUint8, shape, y.bytes.data(), 64});
      },
      {"DynamicQuantizeLinear", "x", "bytes"});
  try {
    qdq::dynamic_quantize_linear({DataType::kFloat, shape, &x, 4}, {DataType::kUint8, shape, y.bytes.data(), 64});
  } catch (const qdq::Error& e) {
    EXPECT_EQ(std::string(e.what()).find("output y"), std::string::npos)
        << "x's 4-byte buffer was accepted for 2^62+1 elements: " << e.what();
  }
  EXPECT_TRUE(y.untouched());
}

// OPEN BUG (reported; enable when fixed).
TEST(HostileArguments, EmptyTensorsWithHugeOtherDims) {
  // Zero elements, but the other dims multiply past 2^63: must be an empty result or a clean error,
  // never signed overflow in the plan (UBSan) or a write.
  const int64_t x_shape[3] = {k2p40, k2p40, 0};
  const int64_t per_axis_shape[1] = {0};
  static uint8_t none = 0;
  const qdq::TensorView x{DataType::kFloat, x_shape, &none, 0};
  Sentinel y;
  for (int64_t axis : {0, 1, 2}) {
    SCOPED_TRACE(axis);
    qdq::QuantizeLinearAttributes a;
    a.axis = axis;
    const int64_t len[1] = {x_shape[axis]};
    const qdq::TensorView s{DataType::kFloat,
                            axis == 2 ? std::span<const int64_t>(per_axis_shape) : std::span<const int64_t>(len),
                            axis == 2 ? static_cast<const void*>(&none) : g_small, 0};
    try {
      const qdq::TensorSpec spec = qdq::quantize_linear_output(a, x, s, nullptr);
      EXPECT_EQ(spec.size_bytes, 0u);
      qdq::quantize_linear(a, x, s, nullptr, {spec.type, x_shape, y.bytes.data(), 0});
    } catch (const qdq::Error& e) {
      EXPECT_NE(std::string(e.what()).find("QuantizeLinear"), std::string::npos) << e.what();
    }
    // Blocked along `axis` with block 1: the scale has x's shape, so also zero elements.
    a.block_size = 1;
    const qdq::TensorView sb{DataType::kFloat, x_shape, &none, 0};
    try {
      const qdq::TensorSpec spec = qdq::quantize_linear_output(a, x, sb, nullptr);
      EXPECT_EQ(spec.size_bytes, 0u);
      qdq::quantize_linear(a, x, sb, nullptr, {spec.type, x_shape, y.bytes.data(), 0});
    } catch (const qdq::Error& e) {
      EXPECT_NE(std::string(e.what()).find("QuantizeLinear"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(y.untouched());
}

// OPEN BUG (reported; enable when fixed).
TEST(HostileArguments, HugeBlockSizeDoesNotOverflow) {
  // ceil(D / B) computed as (D + B - 1) / B overflows for B near INT64_MAX.
  const int64_t x_shape[2] = {2, 3};
  const int64_t s_shape[2] = {2, 1};
  float x[6] = {1, 2, 3, 4, 5, 6};
  float s[2] = {1, 1};
  for (int64_t b : {INT64_MAX, INT64_MAX - 1, k2p62}) {
    SCOPED_TRACE(b);
    qdq::QuantizeLinearAttributes a;
    a.axis = 1;
    a.block_size = b;
    std::vector<uint8_t> y(6, 0x5A);
    try {
      const qdq::TensorSpec spec = qdq::quantize_linear_output(a, {DataType::kFloat, x_shape, x, 24},
                                                               {DataType::kFloat, s_shape, s, 8}, nullptr);
      qdq::quantize_linear(a, {DataType::kFloat, x_shape, x, 24}, {DataType::kFloat, s_shape, s, 8}, nullptr,
                           {spec.type, x_shape, y.data(), y.size()});
      EXPECT_EQ(y[5], 6);  // one block covers the axis: accepted is fine, as long as it is right
    } catch (const qdq::Error& e) {
      EXPECT_NE(std::string(e.what()).find("block"), std::string::npos) << e.what();
    }
    qdq::DequantizeLinearAttributes d;
    d.axis = 1;
    d.block_size = b;
    const uint8_t xq[6] = {1, 2, 3, 4, 5, 6};
    try {
      (void)qdq::dequantize_linear_output(d, {DataType::kUint8, x_shape, xq, 6}, {DataType::kFloat, s_shape, s, 8},
                                          nullptr);
    } catch (const qdq::Error& e) {
      EXPECT_NE(std::string(e.what()).find("block"), std::string::npos) << e.what();
    }
  }
}

TEST(HostileArguments, NegativeDimsAndUnknownTypes) {
  static const int64_t negative[2] = {2, -1};
  expect_error(
      [] {
        qdq::quantize_linear_output({}, {DataType::kFloat, {negative, 2}, g_small, 8}, scalar_scale(), nullptr);
      },
      {"QuantizeLinear", "x", "negative"});
  expect_error(
      [] {
        qdq::dequantize_linear_output({}, {DataType::kInt8, {negative, 2}, g_small, 2}, scalar_scale(), nullptr);
      },
      {"DequantizeLinear", "x", "negative"});
  expect_error(
      [] {
        qdq::quantize_linear_output({}, {DataType::kFloat, {}, g_small, 4},
                                    {DataType::kFloat, {negative, 2}, g_small, 8}, nullptr);
      },
      {"QuantizeLinear", "y_scale", "negative"});
  for (int32_t t : {0, 8, 27, 1000, -1, INT32_MIN, INT32_MAX}) {
    SCOPED_TRACE(t);
    const auto type = static_cast<DataType>(t);
    expect_error(
        [&] {
          qdq::quantize_linear_output({}, {type, {}, g_small, 4}, scalar_scale(), nullptr);
        },
        {"QuantizeLinear", "x"});
    expect_error(
        [&] {
          qdq::quantize_linear_output({}, {DataType::kFloat, {}, g_small, 4}, {type, {}, g_small, 4}, nullptr);
        },
        {"QuantizeLinear", "y_scale"});
    const qdq::TensorView zp{type, {}, g_small, 1};
    expect_error(
        [&] {
          qdq::quantize_linear_output({}, {DataType::kFloat, {}, g_small, 4}, scalar_scale(), &zp);
        },
        {"QuantizeLinear", "y_zero_point"});
    expect_error(
        [&] {
          qdq::dequantize_linear_output({}, {type, {}, g_small, 1}, scalar_scale(), nullptr);
        },
        {"DequantizeLinear", "x"});
    expect_error(
        [&] {
          qdq::dequantize_linear_output({}, {DataType::kInt8, {}, g_small, 1}, {type, {}, g_small, 4}, nullptr);
        },
        {"DequantizeLinear", "x_scale"});
    uint8_t y[4] = {};
    expect_error(
        [&] {
          qdq::dynamic_quantize_linear({type, {}, g_small, 4}, {DataType::kUint8, {}, y, 1});
        },
        {"DynamicQuantizeLinear", "x"});
  }
}

TEST(HostileArguments, NullPointersWithNonZeroSizes) {
  expect_error(
      [] {
        qdq::quantize_linear_output({}, {DataType::kFloat, {}, nullptr, 4}, scalar_scale(), nullptr);
      },
      {"QuantizeLinear", "x", "null"});
  expect_error(
      [] {
        qdq::quantize_linear_output({}, {DataType::kFloat, {}, g_small, 4}, {DataType::kFloat, {}, nullptr, 4},
                                    nullptr);
      },
      {"QuantizeLinear", "y_scale", "null"});
  const qdq::TensorView zp{DataType::kUint8, {}, nullptr, 1};
  expect_error(
      [&] {
        qdq::quantize_linear_output({}, {DataType::kFloat, {}, g_small, 4}, scalar_scale(), &zp);
      },
      {"QuantizeLinear", "y_zero_point", "null"});
  expect_error(
      [] {
        qdq::quantize_linear({}, {DataType::kFloat, {}, g_small, 4}, scalar_scale(), nullptr,
                             {DataType::kUint8, {}, nullptr, 1});
      },
      {"QuantizeLinear", "output y", "null"});
  expect_error(
      [] {
        qdq::dequantize_linear({}, {DataType::kUint8, {}, g_small, 1}, scalar_scale(), nullptr,
                               {DataType::kFloat, {}, nullptr, 4});
      },
      {"DequantizeLinear", "output y", "null"});
  expect_error(
      [] {
        qdq::dynamic_quantize_linear({DataType::kFloat, {}, nullptr, 4}, {DataType::kUint8, {}, g_small, 1});
      },
      {"DynamicQuantizeLinear", "x", "null"});
  uint8_t none = 0;
  expect_error(
      [&] {
        qdq::dynamic_quantize_linear({DataType::kFloat, {}, g_small, 4}, {DataType::kUint8, {}, nullptr, 1});
      },
      {"DynamicQuantizeLinear", "output y", "null"});
  (void)none;
}

TEST(HostileArguments, ExtremeAxisAndOpset) {
  const int64_t x_shape[2] = {2, 3};
  const int64_t s_shape[1] = {3};
  float s[3] = {1, 1, 1};
  const qdq::TensorView x{DataType::kFloat, x_shape, g_small, 24};
  const qdq::TensorView scale{DataType::kFloat, s_shape, s, 12};
  for (int64_t axis : {INT64_MIN, INT64_MIN + 1, int64_t{-3}, int64_t{2}, INT64_MAX}) {
    SCOPED_TRACE(axis);
    qdq::QuantizeLinearAttributes a;
    a.axis = axis;
    expect_error([&] { qdq::quantize_linear_output(a, x, scale, nullptr); },
                 {"QuantizeLinear", "axis", "out of range"});
    qdq::DequantizeLinearAttributes d;
    d.axis = axis;
    const qdq::TensorView xq{DataType::kInt8, x_shape, g_small, 6};
    expect_error([&] { qdq::dequantize_linear_output(d, xq, scale, nullptr); },
                 {"DequantizeLinear", "axis", "out of range"});
  }
  for (int64_t opset : {INT64_MIN, int64_t{-1}, int64_t{0}, int64_t{9}}) {
    SCOPED_TRACE(opset);
    qdq::QuantizeLinearAttributes a;
    a.opset = opset;
    expect_error([&] { qdq::quantize_linear_output(a, x, scalar_scale(), nullptr); }, {"QuantizeLinear", "opset"});
    qdq::DequantizeLinearAttributes d;
    d.opset = opset;
    expect_error(
        [&] {
          qdq::dequantize_linear_output(d, {DataType::kInt8, {}, g_small, 1}, scalar_scale(), nullptr);
        },
        {"DequantizeLinear", "opset"});
    uint8_t y = 0;
    expect_error(
        [&] {
          qdq::dynamic_quantize_linear({DataType::kFloat, {}, g_small, 4}, {DataType::kUint8, {}, &y, 1}, {}, opset);
        },
        {"DynamicQuantizeLinear", "opset"});
    EXPECT_THROW(qdq::quantize_linear_version(opset), qdq::Error);
  }
  // A far-future opset selects the newest version.
  qdq::QuantizeLinearAttributes a;
  a.opset = INT64_MAX;
  EXPECT_EQ(qdq::quantize_linear_output(a, x, scalar_scale(), nullptr).type, DataType::kUint8);
  for (int64_t b : {int64_t{-1}, INT64_MIN}) {
    qdq::QuantizeLinearAttributes q;
    q.block_size = b;
    expect_error([&] { qdq::quantize_linear_output(q, x, scalar_scale(), nullptr); },
                 {"QuantizeLinear", "block_size", "negative"});
  }
}

// Attribute values are int64 in ONNX; a type number beyond int32 must not be truncated into a valid
// one (2^32 + 2 is not UINT8). Fixed when these pass; see README.md, "Reliability".
// OPEN BUG (reported; enable when fixed).
TEST(HostileArguments, TypeAttributesBeyondInt32AreRejected) {
  const int64_t wrap = int64_t{1} << 32;
  const qdq::TensorView x{DataType::kFloat, {}, g_small, 4};
  qdq::QuantizeLinearAttributes a;
  a.output_dtype = wrap + static_cast<int64_t>(DataType::kUint8);
  expect_error([&] { qdq::quantize_linear_output(a, x, scalar_scale(), nullptr); }, {"QuantizeLinear", "output_dtype"});
  const qdq::TensorView zp{DataType::kUint8, {}, &g_zero, 1};
  expect_error([&] { qdq::quantize_linear_output(a, x, scalar_scale(), &zp); }, {"QuantizeLinear", "output_dtype"});
  qdq::QuantizeLinearAttributes p;
  p.precision = wrap + static_cast<int64_t>(DataType::kFloat);
  expect_error([&] { qdq::quantize_linear_output(p, x, scalar_scale(), nullptr); }, {"QuantizeLinear", "precision"});
  qdq::DequantizeLinearAttributes d;
  d.output_dtype = wrap + static_cast<int64_t>(DataType::kFloat16);
  expect_error(
      [&] {
        qdq::dequantize_linear_output(d, {DataType::kInt8, {}, g_small, 1}, scalar_scale(), nullptr);
      },
      {"DequantizeLinear", "output_dtype"});
}

TEST(HostileArguments, MismatchedOutputViewsLeaveTheBufferUntouched) {
  const int64_t shape[2] = {2, 3};
  const int64_t other[2] = {3, 2};
  const qdq::TensorView x{DataType::kFloat, shape, g_small, 24};
  struct Bad {
    const char* what;
    DataType type;
    std::span<const int64_t> shape;
    size_t size;
    const char* message;
  };
  const Bad bad[] = {
      {"type", DataType::kInt8, shape, 6, "element type"}, {"shape", DataType::kUint8, other, 6, "shape"},
      {"rank", DataType::kUint8, {shape, 1}, 2, "shape"},  {"size+1", DataType::kUint8, shape, 7, "bytes"},
      {"size-1", DataType::kUint8, shape, 5, "bytes"},     {"size 0", DataType::kUint8, shape, 0, "bytes"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.what);
    Sentinel y;
    expect_error(
        [&] {
          qdq::quantize_linear({}, x, scalar_scale(), nullptr, {b.type, b.shape, y.bytes.data(), b.size});
        },
        {"QuantizeLinear", "output y", b.message});
    expect_error(
        [&] {
          qdq::dynamic_quantize_linear(x, {b.type, b.shape, y.bytes.data(), b.size});
        },
        {"DynamicQuantizeLinear", "output y", b.message});
    EXPECT_TRUE(y.untouched());
  }
  Sentinel y;
  const qdq::TensorView xq{DataType::kUint8, shape, g_small, 6};
  expect_error(
      [&] {
        qdq::dequantize_linear({}, xq, scalar_scale(), nullptr, {DataType::kFloat16, shape, y.bytes.data(), 12});
      },
      {"DequantizeLinear", "output y", "element type"});
  expect_error(
      [&] {
        qdq::dequantize_linear({}, xq, scalar_scale(), nullptr, {DataType::kFloat, shape, y.bytes.data(), 23});
      },
      {"DequantizeLinear", "output y", "bytes"});
  EXPECT_TRUE(y.untouched());
}

TEST(HostileArguments, ExtremeThreadCounts) {
  // 3 tasks: any thread count, including absurd ones, gives the same bytes.
  const int64_t shape[1] = {3 * 32768 + 5};
  std::vector<float> x(static_cast<size_t>(shape[0]));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 511) - 255.0f;
  const qdq::TensorView xv{DataType::kFloat, shape, x.data(), x.size() * 4};
  std::vector<uint8_t> reference(x.size()), y(x.size());
  qdq::ExecutionOptions one;
  one.num_threads = 1;
  qdq::quantize_linear({}, xv, scalar_scale(), nullptr, {DataType::kUint8, shape, reference.data(), reference.size()},
                       one);
  for (int n : {-7, INT_MIN, 0, 3, 1000, INT_MAX}) {
    SCOPED_TRACE(n);
    qdq::ExecutionOptions o;
    o.num_threads = n;
    std::fill(y.begin(), y.end(), 0);
    qdq::quantize_linear({}, xv, scalar_scale(), nullptr, {DataType::kUint8, shape, y.data(), y.size()}, o);
    EXPECT_EQ(y, reference);
  }
  qdq::set_default_num_threads(-3);
  EXPECT_GE(qdq::default_num_threads(), 1);
  qdq::set_default_num_threads(0);
}

}  // namespace
