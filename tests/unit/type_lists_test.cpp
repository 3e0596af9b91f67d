// The derived type lists (types/type_lists.hpp) against the types and widths that the spec pack's
// types.md §1 and the operator definitions name, written out by hand here and nowhere else, so that
// the tests, fuzz harness and bench that use the lists still test against an independent source.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "types/type_lists.hpp"

namespace {

using qdq::DataType;
using T = DataType;
namespace d = qdq::detail;

std::set<T> as_set(const d::TypeList& list) { return {list.begin(), list.end()}; }

TEST(TypeLists, QuantizedTypes) {
  const std::set<T> expected = {T::kUint8,      T::kInt8,           T::kUint16,    T::kInt16,        T::kUint4,
                                T::kInt4,       T::kUint2,          T::kInt2,      T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ,
                                T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1};
  EXPECT_EQ(as_set(d::kQuantizedTypes), expected);
  EXPECT_EQ(d::kQuantizedTypes.size(), expected.size());
  EXPECT_EQ(as_set(d::kQuantizedIntegerTypes),
            (std::set<T>{T::kUint8, T::kInt8, T::kUint16, T::kInt16, T::kUint4, T::kInt4, T::kUint2, T::kInt2}));
  EXPECT_EQ(as_set(d::kQuantizedFloatTypes),
            (std::set<T>{T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1}));
  EXPECT_EQ(as_set(d::kPackedTypes), (std::set<T>{T::kUint4, T::kInt4, T::kFloat4E2M1, T::kUint2, T::kInt2}));
  EXPECT_EQ(as_set(d::kFloat8Types),
            (std::set<T>{T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ}));
  EXPECT_EQ(as_set(d::kMiniFloatTypes), (std::set<T>{T::kFloat16, T::kBFloat16, T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ,
                                                     T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1}));
}

TEST(TypeLists, RolesByVersion) {
  using R = d::TypeRole;
  EXPECT_EQ(as_set(d::types_in_role(R::kQuantizeX, 10)), (std::set<T>{T::kFloat, T::kInt32}));
  EXPECT_EQ(as_set(d::types_in_role(R::kQuantizeX)), (std::set<T>{T::kFloat, T::kFloat16, T::kBFloat16, T::kInt32}));
  EXPECT_EQ(as_set(d::types_in_role(R::kQuantizeScale)),
            (std::set<T>{T::kFloat, T::kFloat16, T::kBFloat16, T::kInt32, T::kFloat8E8M0}));
  EXPECT_EQ(as_set(d::types_in_role(R::kQuantizeY, 13)), (std::set<T>{T::kUint8, T::kInt8}));
  EXPECT_EQ(
      as_set(d::types_in_role(R::kQuantizeY, 19)),
      (std::set<T>{T::kUint8, T::kInt8, T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ}));
  EXPECT_EQ(d::types_in_role(R::kQuantizeY, 21).size(), 10u);
  EXPECT_EQ(d::types_in_role(R::kQuantizeY, 23).size(), 11u);
  EXPECT_EQ(d::types_in_role(R::kQuantizeY, 25).size(), 13u);
  std::set<T> dq_x = as_set(d::kQuantizedTypes);
  dq_x.insert(T::kInt32);
  EXPECT_EQ(as_set(d::types_in_role(R::kDequantizeX)), dq_x);
  EXPECT_EQ(as_set(d::types_in_role(R::kDequantizeScale)),
            (std::set<T>{T::kFloat, T::kFloat16, T::kBFloat16, T::kFloat8E8M0}));
  EXPECT_EQ(as_set(d::types_in_role(R::kDequantizeY)), (std::set<T>{T::kFloat, T::kFloat16, T::kBFloat16}));
}

// Storage bits per types.md §1 (test_tensors.hpp's type_bits reads them from the list).
TEST(TypeLists, StorageBits) {
  const std::vector<std::pair<T, int>> bits = {
      {T::kFloat, 32},     {T::kUint8, 8},          {T::kInt8, 8},      {T::kUint16, 16},      {T::kInt16, 16},
      {T::kInt32, 32},     {T::kInt64, 64},         {T::kBool, 8},      {T::kFloat16, 16},     {T::kDouble, 64},
      {T::kUint32, 32},    {T::kUint64, 64},        {T::kBFloat16, 16}, {T::kFloat8E4M3FN, 8}, {T::kFloat8E4M3FNUZ, 8},
      {T::kFloat8E5M2, 8}, {T::kFloat8E5M2FNUZ, 8}, {T::kUint4, 4},     {T::kInt4, 4},         {T::kFloat4E2M1, 4},
      {T::kFloat8E8M0, 8}, {T::kUint2, 2},          {T::kInt2, 2}};
  for (const auto& [type, width] : bits) EXPECT_EQ(d::type_info(type).bits, width) << qdq::data_type_name(type);
}

TEST(TypeLists, ContainsAndOrder) {
  EXPECT_TRUE(d::kFloat8Types.contains(T::kFloat8E5M2FNUZ));
  EXPECT_FALSE(d::kFloat8Types.contains(T::kFloat8E8M0));
  EXPECT_TRUE(std::is_sorted(d::kQuantizedTypes.begin(), d::kQuantizedTypes.end()));
}

// The public type queries (qdq/types.hpp) against types.md §1, written out here: each type's kind and
// whether it has negative values.
TEST(TypeQueries, KindAndSignednessOfEveryType) {
  using K = qdq::TypeKind;
  struct Row {
    T type;
    K kind;
    bool is_signed;
  };
  const std::vector<Row> rows = {
      {T::kFloat, K::kFloat, true},
      {T::kUint8, K::kInteger, false},
      {T::kInt8, K::kInteger, true},
      {T::kUint16, K::kInteger, false},
      {T::kInt16, K::kInteger, true},
      {T::kInt32, K::kInteger, true},
      {T::kInt64, K::kInteger, true},
      {T::kString, K::kOther, false},
      {T::kBool, K::kOther, false},
      {T::kFloat16, K::kMiniFloat, true},
      {T::kDouble, K::kFloat, true},
      {T::kUint32, K::kInteger, false},
      {T::kUint64, K::kInteger, false},
      {T::kComplex64, K::kOther, true},
      {T::kComplex128, K::kOther, true},
      {T::kBFloat16, K::kMiniFloat, true},
      {T::kFloat8E4M3FN, K::kMiniFloat, true},
      {T::kFloat8E4M3FNUZ, K::kMiniFloat, true},
      {T::kFloat8E5M2, K::kMiniFloat, true},
      {T::kFloat8E5M2FNUZ, K::kMiniFloat, true},
      {T::kUint4, K::kInteger, false},
      {T::kInt4, K::kInteger, true},
      {T::kFloat4E2M1, K::kMiniFloat, true},
      {T::kFloat8E8M0, K::kExponent, false},
      {T::kUint2, K::kInteger, false},
      {T::kInt2, K::kInteger, true},
  };
  ASSERT_EQ(rows.size(), 26u);  // every type ONNX numbers 1..26, in order
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    ASSERT_EQ(static_cast<size_t>(row.type), i + 1);
    EXPECT_EQ(qdq::type_kind(row.type), row.kind) << qdq::data_type_name(row.type);
    EXPECT_EQ(qdq::is_signed(row.type), row.is_signed) << qdq::data_type_name(row.type);
  }
  for (const T unknown : {T::kUndefined, static_cast<T>(27), static_cast<T>(-1)}) {
    EXPECT_EQ(qdq::type_kind(unknown), K::kOther);
    EXPECT_FALSE(qdq::is_signed(unknown));
    EXPECT_FALSE(qdq::is_nan_code(unknown, 0xFF));
  }
}

// NaN codes per types.md §1: every code of the types up to 16 bits, spot checks of FLOAT and DOUBLE.
TEST(TypeQueries, NanCodesOfEveryType) {
  const auto ieee16_nan = [](uint32_t code, uint32_t exponent_mask) {
    return (code & exponent_mask) == exponent_mask && (code & 0x7FFFu & ~exponent_mask) != 0;
  };
  for (int v = 1; v <= 26; ++v) {
    const T type = static_cast<T>(v);
    const int bits = qdq::bit_width(type);
    if (bits == 0 || bits > 16) continue;
    for (uint32_t code = 0; code < (1u << bits); ++code) {
      bool nan = false;
      switch (type) {
        case T::kFloat8E4M3FN: nan = code == 0x7F || code == 0xFF; break;
        case T::kFloat8E4M3FNUZ:
        case T::kFloat8E5M2FNUZ: nan = code == 0x80; break;
        case T::kFloat8E5M2: nan = (code & 0x7F) >= 0x7D; break;
        case T::kFloat8E8M0: nan = code == 0xFF; break;
        case T::kFloat16: nan = ieee16_nan(code, 0x7C00); break;
        case T::kBFloat16: nan = ieee16_nan(code, 0x7F80); break;
        default: break;  // integers, BOOL and FLOAT4E2M1 have no NaN
      }
      EXPECT_EQ(qdq::is_nan_code(type, code), nan) << qdq::data_type_name(type) << " code " << code;
    }
  }
  EXPECT_FALSE(qdq::is_nan_code(T::kFloat, 0x7F800000u));  // +inf
  EXPECT_FALSE(qdq::is_nan_code(T::kFloat, 0xFF800000u));  // -inf
  EXPECT_FALSE(qdq::is_nan_code(T::kFloat, 0x3F800000u));
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat, 0x7F800001u));
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat, 0xFFC00000u));
  EXPECT_FALSE(qdq::is_nan_code(T::kDouble, 0x7FF0000000000000ull));
  EXPECT_FALSE(qdq::is_nan_code(T::kDouble, 0x7FC00000ull));
  EXPECT_TRUE(qdq::is_nan_code(T::kDouble, 0x7FF8000000000000ull));
  EXPECT_TRUE(qdq::is_nan_code(T::kDouble, 0xFFF0000000000001ull));
  // Bits above the type's width are ignored.
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat8E4M3FN, 0x17F));
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat8E5M2FNUZ, 0x180));
  EXPECT_FALSE(qdq::is_nan_code(T::kFloat8E5M2FNUZ, 0x100));
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat16, 0x17E00));
  EXPECT_TRUE(qdq::is_nan_code(T::kFloat, 0x1'7FC0'0000ull));
  EXPECT_FALSE(qdq::is_nan_code(T::kFloat, 0xFFFF'FFFF'0000'0000ull));
}

}  // namespace
