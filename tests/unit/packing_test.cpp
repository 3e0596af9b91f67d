// Sub-byte packing (src/types/packing.hpp) against packing.md §1: element k of a b-bit type lives in
// byte k·b/8 at bit (k·b) mod 8, first element in the low bits, padding bits zero; signed fields
// sign-extend from their top bit. Also the public size helpers of qdq/types.hpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "qdq/types.hpp"
#include "types/packing.hpp"

namespace {

namespace d = qdq::detail;

// Independent bit-level model: set / get element k of a packed buffer.
void ref_put(std::vector<uint8_t>& buf, int bits, int64_t k, uint8_t code) {
  if (bits == 8) {
    buf[static_cast<size_t>(k)] = code;
    return;
  }
  const int64_t bit = k * bits;
  const uint8_t mask = static_cast<uint8_t>(((1u << bits) - 1) << (bit % 8));
  uint8_t& byte = buf[static_cast<size_t>(bit / 8)];
  byte = static_cast<uint8_t>((byte & ~mask) | ((code << (bit % 8)) & mask));
}

uint8_t ref_get(const std::vector<uint8_t>& buf, int bits, int64_t k) {
  if (bits == 8) return buf[static_cast<size_t>(k)];
  const int64_t bit = k * bits;
  return static_cast<uint8_t>((buf[static_cast<size_t>(bit / 8)] >> (bit % 8)) & ((1u << bits) - 1));
}

size_t bytes_for(int bits, int64_t n) { return static_cast<size_t>((n * bits + 7) / 8); }

class PackingTest : public ::testing::TestWithParam<int> {};
INSTANTIATE_TEST_SUITE_P(Bits, PackingTest, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "bit"; });

// Whole tensors of every length 0..70: the bytes equal the model, padding bits are zero, and
// unpacking gives the codes back.
TEST_P(PackingTest, WholeTensorsAnyLength) {
  const int bits = GetParam();
  std::mt19937 rng(1);
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    for (auto& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
    std::vector<uint8_t> expected(bytes_for(bits, n), 0);
    for (int64_t k = 0; k < n; ++k) ref_put(expected, bits, k, codes[static_cast<size_t>(k)]);
    std::vector<uint8_t> packed(bytes_for(bits, n), 0xFF);  // garbage in the padding before packing
    d::pack_codes(codes.data(), bits, 0, n, packed.data(), /*pad_to_byte=*/true);
    EXPECT_EQ(packed, expected) << "n = " << n;
    std::vector<uint8_t> back(static_cast<size_t>(n), 0xEE);
    d::unpack_codes(packed.data(), bits, 0, n, back.data());
    EXPECT_EQ(back, codes) << "n = " << n;
  }
}

// Ranges [first, first+count) starting inside a byte: only those elements change, bytes outside are
// untouched, and with pad_to_byte the bits after the range in its last byte are zeroed.
TEST_P(PackingTest, RangesStartingInsideAByte) {
  const int bits = GetParam();
  const int per_byte = 8 / bits;
  std::mt19937 rng(2);
  for (int64_t first = 0; first < 3 * per_byte; ++first) {
    for (int64_t count = 0; count <= 3 * per_byte + 3; ++count) {
      for (bool pad : {false, true}) {
        const int64_t total = first + count + (pad ? 0 : 2 * per_byte);
        std::vector<uint8_t> buf(bytes_for(bits, total) + 1);
        for (auto& b : buf) b = static_cast<uint8_t>(rng());
        std::vector<uint8_t> codes(static_cast<size_t>(count));
        // Codes with garbage above their low `bits` bits: pack_codes must mask them.
        for (auto& c : codes) c = static_cast<uint8_t>(rng());
        std::vector<uint8_t> expected = buf;
        for (int64_t i = 0; i < count; ++i) {
          ref_put(expected, bits, first + i, static_cast<uint8_t>(codes[static_cast<size_t>(i)] & ((1u << bits) - 1)));
        }
        if (pad && bits < 8) {
          const int64_t end = first + count;
          for (int64_t k = end; k % per_byte != 0; ++k) ref_put(expected, bits, k, 0);
        }
        d::pack_codes(codes.data(), bits, first, count, buf.data(), pad);
        ASSERT_EQ(buf, expected) << "first " << first << " count " << count << " pad " << pad;
        // And unpacking the same range reads the (masked) codes back.
        std::vector<uint8_t> back(static_cast<size_t>(count));
        d::unpack_codes(buf.data(), bits, first, count, back.data());
        for (int64_t i = 0; i < count; ++i) {
          EXPECT_EQ(back[static_cast<size_t>(i)], ref_get(buf, bits, first + i));
          EXPECT_EQ(back[static_cast<size_t>(i)], codes[static_cast<size_t>(i)] & ((1u << bits) - 1));
        }
      }
    }
  }
}

// Unpacking ignores padding bits and any bits outside the range.
TEST_P(PackingTest, UnpackIgnoresPaddingAndNeighbours) {
  const int bits = GetParam();
  std::mt19937 rng(3);
  std::vector<uint8_t> buf(16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  const int64_t total = static_cast<int64_t>(buf.size()) * 8 / bits;
  for (int64_t first = 0; first < total; first += 3) {
    for (int64_t count = 0; first + count <= total; count += 5) {
      std::vector<uint8_t> out(static_cast<size_t>(count) + 2, 0xAB);
      d::unpack_codes(buf.data(), bits, first, count, out.data());
      for (int64_t i = 0; i < count; ++i) EXPECT_EQ(out[static_cast<size_t>(i)], ref_get(buf, bits, first + i));
      EXPECT_EQ(out[static_cast<size_t>(count)], 0xAB) << "wrote past count";
      EXPECT_EQ(out[static_cast<size_t>(count) + 1], 0xAB) << "wrote past count";
    }
  }
}

// Splitting a tensor into byte-aligned pieces packed separately gives the same bytes as one call.
TEST_P(PackingTest, PiecewiseEqualsWhole) {
  const int bits = GetParam();
  const int per_byte = 8 / bits;
  std::mt19937 rng(4);
  const int64_t n = 37;
  std::vector<uint8_t> codes(n);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
  std::vector<uint8_t> whole(bytes_for(bits, n), 0x55);
  d::pack_codes(codes.data(), bits, 0, n, whole.data(), true);
  std::vector<uint8_t> pieces(bytes_for(bits, n), 0x55);
  for (int64_t start = 0; start < n; start += 2 * per_byte) {
    const int64_t count = std::min<int64_t>(2 * per_byte, n - start);
    d::pack_codes(codes.data() + start, bits, start, count, pieces.data(), start + count == n);
  }
  EXPECT_EQ(pieces, whole);
  // Element-by-element, unaligned, in reverse order.
  std::vector<uint8_t> singles(bytes_for(bits, n), 0x00);
  for (int64_t k = n - 1; k >= 0; --k) d::pack_codes(codes.data() + k, bits, k, 1, singles.data(), false);
  EXPECT_EQ(singles, whole);
}

// packing.md §1 examples.
TEST(PackingExamples, FromPackingMd) {
  {  // INT4 [0, 1, 7, −4, −8] → 0x10, 0xC7, 0x08
    const uint8_t codes[] = {0x0, 0x1, 0x7, 0xC, 0x8};
    uint8_t out[3] = {0xFF, 0xFF, 0xFF};
    d::pack_codes(codes, 4, 0, 5, out, true);
    EXPECT_EQ(out[0], 0x10);
    EXPECT_EQ(out[1], 0xC7);
    EXPECT_EQ(out[2], 0x08);
  }
  {  // UINT4 [0, 1, 7, 10, 15] → 0x10, 0xA7, 0x0F (int32_data [16, 167, 15])
    const uint8_t codes[] = {0, 1, 7, 10, 15};
    uint8_t out[3] = {};
    d::pack_codes(codes, 4, 0, 5, out, true);
    EXPECT_EQ(out[0], 16);
    EXPECT_EQ(out[1], 167);
    EXPECT_EQ(out[2], 15);
  }
  {  // FLOAT4E2M1 codes 0x0 0x2 0xA 0x3 0xE → [32, 58, 14]
    const uint8_t codes[] = {0x0, 0x2, 0xA, 0x3, 0xE};
    uint8_t out[3] = {};
    d::pack_codes(codes, 4, 0, 5, out, true);
    EXPECT_EQ(out[0], 32);
    EXPECT_EQ(out[1], 58);
    EXPECT_EQ(out[2], 14);
  }
  {  // INT2 [0, 1, −1, −2] → 180
    const uint8_t codes[] = {0x0, 0x1, 0x3, 0x2};
    uint8_t out[1] = {};
    d::pack_codes(codes, 2, 0, 4, out, true);
    EXPECT_EQ(out[0], 180);
    uint8_t back[4];
    d::unpack_codes(out, 2, 0, 4, back);
    EXPECT_EQ(d::sign_extend(back[0], 2), 0);
    EXPECT_EQ(d::sign_extend(back[1], 2), 1);
    EXPECT_EQ(d::sign_extend(back[2], 2), -1);
    EXPECT_EQ(d::sign_extend(back[3], 2), -2);
  }
  {  // UINT2 [0,1,2,3, 0,0,0,1, 1,1,2,2] → 228, 64, 165
    const uint8_t codes[] = {0, 1, 2, 3, 0, 0, 0, 1, 1, 1, 2, 2};
    uint8_t out[3] = {};
    d::pack_codes(codes, 2, 0, 12, out, true);
    EXPECT_EQ(out[0], 228);
    EXPECT_EQ(out[1], 64);
    EXPECT_EQ(out[2], 165);
  }
  {  // INT4 [1, 2, 3, 5, −8, −6, 3, 4, 4, 5, 5, 7] → int32_data [33, 83, 168, 67, 84, 117]
    const uint8_t codes[] = {0x1, 0x2, 0x3, 0x5, 0x8, 0xA, 0x3, 0x4, 0x4, 0x5, 0x5, 0x7};
    uint8_t out[6] = {};
    d::pack_codes(codes, 4, 0, 12, out, true);
    const uint8_t want[6] = {33, 83, 168, 67, 84, 117};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]) << i;
  }
}

TEST(SignExtend, AllCodes) {
  for (uint32_t c = 0; c < 16; ++c) {
    EXPECT_EQ(d::sign_extend(c, 4), c < 8 ? int32_t(c) : int32_t(c) - 16) << c;
    EXPECT_EQ(d::sign_extend(c | 0xF0u, 4), c < 8 ? int32_t(c) : int32_t(c) - 16) << "high garbage " << c;
  }
  for (uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(d::sign_extend(c, 2), c < 2 ? int32_t(c) : int32_t(c) - 4) << c;
    EXPECT_EQ(d::sign_extend(c | 0xFCu, 2), c < 2 ? int32_t(c) : int32_t(c) - 4) << "high garbage " << c;
  }
  for (uint32_t c = 0; c < 256; ++c) EXPECT_EQ(d::sign_extend(c, 8), int32_t(int8_t(uint8_t(c))));
  for (uint32_t c = 0; c < 65536; c += 7) EXPECT_EQ(d::sign_extend(c, 16), int32_t(int16_t(uint16_t(c))));
  EXPECT_EQ(d::sign_extend(0x8u, 4), -8);
  EXPECT_EQ(d::sign_extend(0xFu, 4), -1);
  EXPECT_EQ(d::sign_extend(0x2u, 2), -2);
  EXPECT_EQ(d::sign_extend(0x3u, 2), -1);
}

// Public size helpers (qdq/types.hpp).
TEST(StorageBytes, PackedAndWholeTypes) {
  using qdq::DataType;
  EXPECT_EQ(qdq::storage_bytes(DataType::kInt4, 5), 3u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kUint4, 4), 2u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kFloat4E2M1, 1), 1u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kInt2, 5), 2u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kUint2, 12), 3u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kUint2, 0), 0u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kUint8, 7), 7u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kFloat16, 7), 14u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kFloat, 3), 12u);
  EXPECT_EQ(qdq::storage_bytes(DataType::kFloat8E8M0, 3), 3u);
  EXPECT_THROW(qdq::storage_bytes(DataType::kString, 1), qdq::Error);
  EXPECT_THROW(qdq::storage_bytes(DataType::kDouble, uint64_t(1) << 62), qdq::Error);
  EXPECT_EQ(qdq::bit_width(DataType::kInt2), 2);
  EXPECT_EQ(qdq::bit_width(DataType::kFloat4E2M1), 4);
  EXPECT_EQ(qdq::bit_width(DataType::kFloat8E8M0), 8);
  EXPECT_EQ(qdq::bit_width(DataType::kBFloat16), 16);
  EXPECT_EQ(qdq::bit_width(DataType::kUndefined), 0);
}

TEST(ElementCount, ShapesAndErrors) {
  const std::vector<int64_t> scalar;
  const std::vector<int64_t> s234{2, 3, 4};
  const std::vector<int64_t> empty{3, 0, 5};
  const std::vector<int64_t> negative{2, -1};
  const std::vector<int64_t> huge{int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(qdq::element_count(scalar), 1u);
  EXPECT_EQ(qdq::element_count(s234), 24u);
  EXPECT_EQ(qdq::element_count(empty), 0u);
  EXPECT_THROW(qdq::element_count(negative), qdq::Error);
  EXPECT_THROW(qdq::element_count(huge), qdq::Error);
  EXPECT_EQ(qdq::shape_to_string(s234), "[2,3,4]");
  EXPECT_EQ(qdq::shape_to_string(scalar), "[]");
}

TEST(DataTypeNames, RoundTrip) {
  using qdq::DataType;
  for (int32_t v = 1; v <= 26; ++v) {
    const auto t = static_cast<DataType>(v);
    EXPECT_TRUE(qdq::is_known_data_type(v));
    const auto parsed = qdq::parse_data_type(qdq::data_type_name(t));
    ASSERT_TRUE(parsed.has_value()) << v;
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(qdq::is_known_data_type(0));
  EXPECT_FALSE(qdq::is_known_data_type(27));
  EXPECT_EQ(qdq::data_type_name(DataType::kFloat8E4M3FN), "FLOAT8E4M3FN");
  EXPECT_EQ(qdq::data_type_name(static_cast<DataType>(99)), "DataType(99)");
  EXPECT_EQ(qdq::parse_data_type("tensor(int4)"), DataType::kInt4);
  EXPECT_EQ(qdq::parse_data_type("float8e4m3fn"), DataType::kFloat8E4M3FN);
  EXPECT_FALSE(qdq::parse_data_type("float7").has_value());
}

}  // namespace
