// Lists of types derived from the one type list (types/data_types.inc) for the tests, the fuzz harness
// and the bench: "every quantized output", "every float8 type". Because they follow the list, a new
// type is tested, fuzzed and benchmarked wherever its kind and roles say it belongs.
#pragma once

#include <array>
#include <cstddef>

#include "types/type_traits.hpp"

namespace qdq::detail {

/// A fixed-capacity list of types in DataType order, usable at compile time and in range-for.
struct TypeList {
  using value_type = DataType;
  using const_iterator = const DataType*;

  std::array<DataType, kLastDataType> types{};
  size_t count = 0;

  constexpr const DataType* begin() const { return types.data(); }
  constexpr const DataType* end() const { return types.data() + count; }
  constexpr size_t size() const { return count; }
  constexpr bool contains(DataType t) const {
    for (DataType u : *this) {
      if (u == t) return true;
    }
    return false;
  }
};

/// Every type of the list whose TypeInfo satisfies `pred`, in DataType order; no allocation.
template <class Pred>
constexpr TypeList types_where(Pred pred) {
  TypeList list;
  for (const TypeInfo& info : kTypeInfos) {
    if (pred(info)) list.types[list.count++] = info.type;
  }
  return list;
}

/// Every type that may take `role` at some operator version.
constexpr TypeList types_in_role(TypeRole role) {
  return types_where([role](const TypeInfo& info) { return info.since[static_cast<int>(role)] != 0; });
}

/// Every type that may take `role` at operator version `version`.
constexpr TypeList types_in_role(TypeRole role, int version) {
  return types_where([role, version](const TypeInfo& info) { return allowed_in_role(info.type, role, version); });
}

/// Every quantized type: QuantizeLinear's outputs (= DequantizeLinear's x, INT32 aside).
inline constexpr TypeList kQuantizedTypes = types_in_role(TypeRole::kQuantizeY);

/// Every quantized integer type (INT8 ... UINT2).
inline constexpr TypeList kQuantizedIntegerTypes = types_where([](const TypeInfo& info) {
  return info.since[static_cast<int>(TypeRole::kQuantizeY)] != 0 && info.kind == TypeKind::kInteger;
});

/// Every quantized narrow float (the float8 formats and FLOAT4E2M1).
inline constexpr TypeList kQuantizedFloatTypes = types_where([](const TypeInfo& info) {
  return info.since[static_cast<int>(TypeRole::kQuantizeY)] != 0 && info.kind == TypeKind::kMiniFloat;
});

/// Every quantized type stored below 8 bits, packed several to a byte.
inline constexpr TypeList kPackedTypes = types_where(
    [](const TypeInfo& info) { return info.since[static_cast<int>(TypeRole::kQuantizeY)] != 0 && info.bits < 8; });

/// Every float8 format.
inline constexpr TypeList kFloat8Types = types_where([](const TypeInfo& info) { return is_float8(info.type); });

/// Every MiniFloat (float16, bfloat16, the float8 formats, FLOAT4E2M1).
inline constexpr TypeList kMiniFloatTypes =
    types_where([](const TypeInfo& info) { return info.kind == TypeKind::kMiniFloat; });

static_assert(kQuantizedTypes.size() == kQuantizedIntegerTypes.size() + kQuantizedFloatTypes.size(),
              "every quantized type is an integer or a narrow float");

}  // namespace qdq::detail
