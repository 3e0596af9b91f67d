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

}  // namespace
