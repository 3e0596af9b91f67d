// 64-bit sizes: a packed INT4 tensor of 2^31 + 3 elements (1 GiB + 2 bytes) dequantized into a
// FLOAT16 caller buffer (4 GiB) with a float32 scale (opset 25, output_dtype), then the FLOAT16
// result quantized back to INT4 (per-axis, so element indices above 2^31 also index the scales).
// Checks elements at both ends and around 2^31 and 2^32 (bytes), where 32-bit index arithmetic
// would wrap. Peak memory about 6.5 GiB; about a minute with 2 threads (QDQ_NUM_THREADS=2).
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;

constexpr int64_t kElements = (int64_t{1} << 31) + 3;

/// Page-backed memory, released with munmap (no zero-filling pass, no std::vector overhead).
struct Mapping {
  void* p = MAP_FAILED;
  size_t size = 0;
  explicit Mapping(size_t n) : size(n) {
    p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  }
  ~Mapping() {
    if (p != MAP_FAILED) munmap(p, size);
  }
  uint8_t* bytes() const { return static_cast<uint8_t*>(p); }
};

/// The INT4 value of element k: a pattern that differs between neighbours and across 2^31.
int int4_value(int64_t k) { return static_cast<int>(((k * 7) ^ (k >> 31) * 5) & 15) - 8; }

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h >> 15) << 31;
  const int exp = (h >> 10) & 31;
  const uint32_t man = h & 1023;
  if (exp == 0) return std::ldexp(static_cast<float>(man), -24) * (sign ? -1.0f : 1.0f);
  if (exp == 31) return man ? NAN : (sign ? -INFINITY : INFINITY);
  uint32_t bits = sign | static_cast<uint32_t>(exp - 15 + 127) << 23 | man << 13;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

std::vector<int64_t> probes() {
  const int64_t two31 = int64_t{1} << 31;
  std::vector<int64_t> out;
  for (int64_t base : {int64_t{0}, two31 - 8, kElements - 8, two31 / 2 - 4, int64_t{65535} * 32768 - 4}) {
    for (int64_t k = base; k < base + 8 && k < kElements; ++k) out.push_back(k);
  }
  return out;
}

TEST(LargeTensors, Int4BeyondTwoTo31ElementsRoundTrip) {
  const int64_t shape[1] = {kElements};
  const size_t x_bytes = static_cast<size_t>((kElements + 1) / 2);
  Mapping x(x_bytes);
  ASSERT_NE(x.p, MAP_FAILED);
  // Fill: byte b holds elements 2b (low nibble) and 2b+1 (high nibble).
  for (size_t b = 0; b < x_bytes; ++b) {
    const int64_t k = static_cast<int64_t>(b) * 2;
    const int lo = int4_value(k) & 15;
    const int hi = k + 1 < kElements ? int4_value(k + 1) & 15 : 0;
    x.bytes()[b] = static_cast<uint8_t>(lo | hi << 4);
  }

  // Dequantize to FLOAT16, per-tensor scale 0.25 (float32), output_dtype FLOAT16 at opset 25.
  const float scale = 0.25f;
  qdq::DequantizeLinearAttributes d;
  d.opset = 25;
  d.output_dtype = static_cast<int64_t>(DataType::kFloat16);
  const qdq::TensorView xv{DataType::kInt4, shape, x.bytes(), x_bytes};
  const qdq::TensorView sv{DataType::kFloat, {}, &scale, 4};
  const qdq::TensorSpec spec = qdq::dequantize_linear_output(d, xv, sv, nullptr);
  ASSERT_EQ(spec.size_bytes, static_cast<uint64_t>(kElements) * 2);
  Mapping y(static_cast<size_t>(spec.size_bytes));
  ASSERT_NE(y.p, MAP_FAILED);
  qdq::dequantize_linear(d, xv, sv, nullptr, {DataType::kFloat16, shape, y.bytes(), y.size});
  for (int64_t k : probes()) {
    uint16_t h;
    std::memcpy(&h, y.bytes() + k * 2, 2);
    ASSERT_EQ(half_to_float(h), static_cast<float>(int4_value(k)) * 0.25f) << "element " << k;
  }

  // Quantize the FLOAT16 result back to INT4 (y_scale FLOAT16 0.25, as v25 allows; zero point INT4 0).
  const uint16_t scale16 = 0x3400;  // 0.25
  const uint8_t zero = 0;
  const int64_t one[1] = {1};
  qdq::QuantizeLinearAttributes q;
  q.opset = 25;
  const qdq::TensorView yv{DataType::kFloat16, shape, y.bytes(), y.size};
  const qdq::TensorView s16{DataType::kFloat16, {}, &scale16, 2};
  const qdq::TensorView zp{DataType::kInt4, one, &zero, 1};
  const qdq::TensorSpec back_spec = qdq::quantize_linear_output(q, yv, s16, &zp);
  ASSERT_EQ(back_spec.type, DataType::kInt4);
  ASSERT_EQ(back_spec.size_bytes, x_bytes);
  Mapping back(x_bytes);
  ASSERT_NE(back.p, MAP_FAILED);
  qdq::quantize_linear(q, yv, s16, &zp, {DataType::kInt4, shape, back.bytes(), back.size});
  // The whole tensor round-trips exactly (values -8..7 times 0.25 are exact in FLOAT16).
  EXPECT_EQ(std::memcmp(back.bytes(), x.bytes(), x_bytes), 0);
  for (int64_t k : probes()) {
    const int code = (back.bytes()[k / 2] >> (4 * (k % 2))) & 15;
    ASSERT_EQ(code, int4_value(k) & 15) << "element " << k;
  }
  EXPECT_EQ(back.bytes()[x_bytes - 1] >> 4, 0) << "padding nibble of the last byte";
}

TEST(LargeTensors, OverflowingShapesAreRejectedWithoutAllocating) {
  // [2^40, 2^40] elements, and [2^62] FLOAT (2^64 bytes): errors from the shape, small buffers.
  const int64_t huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
  const int64_t bytes_overflow[1] = {int64_t{1} << 62};
  uint8_t tiny[16] = {};
  const float scale = 1.0f;
  const qdq::TensorView sv{DataType::kFloat, {}, &scale, 4};
  EXPECT_THROW(qdq::dequantize_linear_output({}, {DataType::kInt4, huge, tiny, 16}, sv, nullptr), qdq::Error);
  EXPECT_THROW(qdq::quantize_linear_output({}, {DataType::kFloat, huge, tiny, 16}, sv, nullptr), qdq::Error);
  EXPECT_THROW(qdq::quantize_linear_output({}, {DataType::kFloat, bytes_overflow, tiny, 16}, sv, nullptr), qdq::Error);
  EXPECT_THROW(qdq::element_count(huge), qdq::Error);
  EXPECT_THROW(qdq::storage_bytes(DataType::kFloat, uint64_t{1} << 62), qdq::Error);
  EXPECT_EQ(qdq::storage_bytes(DataType::kInt4, (uint64_t{1} << 63) - 1), uint64_t{1} << 62);
}

}  // namespace
