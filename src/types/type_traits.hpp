// Facts about every ONNX element type, generated from the one list (types/data_types.inc): a run-time
// table (type_info), a compile-time traits class per type (TypeTraits), and visit_type, which turns a
// run-time DataType into its TypeTraits. visit_type's switch has one case per line of the list and
// no default, so -Wswitch names any DataType enumerator the list lacks.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "qdq/types.hpp"
#include "types/float_formats.hpp"

namespace qdq::detail {

/// What a type's codes mean; the kernels pick their conversions by kind, bits and format. The public
/// qdq::TypeKind (qdq/types.hpp) is this enum.
using TypeKind = qdq::TypeKind;

/// The inputs and outputs a type may be, as the since-columns of data_types.inc name them.
enum class TypeRole { kQuantizeX, kQuantizeScale, kQuantizeY, kDequantizeX, kDequantizeScale, kDequantizeY };
inline constexpr int kTypeRoles = 6;

namespace type_traits_internal {
template <class Format>
struct FormatFacts {
  static constexpr bool kNegativeZero = Format::kHasNegativeZero;
};
template <>
struct FormatFacts<void> {
  static constexpr bool kNegativeZero = true;
};
}  // namespace type_traits_internal

/// The compile-time facts of one type (one specialisation per line of data_types.inc). `value` makes
/// it usable like std::integral_constant<DataType, T>.
template <DataType kType>
struct TypeTraits;

template <>
struct TypeTraits<DataType::kUndefined> {
  static constexpr DataType value = DataType::kUndefined;
  static constexpr const char* kName = "UNDEFINED";
  static constexpr int kBits = 0;
  static constexpr TypeKind kKind = TypeKind::kOther;
  static constexpr bool kSigned = false;
  using Format = void;
  static constexpr std::array<int, kTypeRoles> kSince{};
};

#define QDQ_DATA_TYPE(E, NAME, BITS, KIND, SIGNED, FORMAT, QX, QS, QY, DQX, DQS, DQY)       \
  template <>                                                                               \
  struct TypeTraits<DataType::E> {                                                          \
    static constexpr DataType value = DataType::E;                                          \
    static constexpr const char* kName = #NAME;                                             \
    static constexpr int kBits = BITS;                                                      \
    static constexpr TypeKind kKind = TypeKind::KIND;                                       \
    static constexpr bool kSigned = SIGNED != 0;                                            \
    using Format = FORMAT;                                                                  \
    static constexpr std::array<int, kTypeRoles> kSince{QX, QS, QY, DQX, DQS, DQY};         \
    static_assert((kKind == TypeKind::kMiniFloat) == !std::is_void_v<Format>,               \
                  #NAME ": every kMiniFloat type, and no other, names a MiniFloat format"); \
  };
#include "types/data_types.inc"
#undef QDQ_DATA_TYPE

/// The run-time form of TypeTraits, one row per type.
struct TypeInfo {
  DataType type;
  const char* name;
  int bits;
  TypeKind kind;
  bool is_signed;
  bool negative_zero;  // a −0 code exists (not for the FNUZ float8 formats)
  std::array<int, kTypeRoles> since;
};

template <class Traits>
constexpr TypeInfo make_type_info() {
  return {Traits::value, Traits::kName,   Traits::kBits,
          Traits::kKind, Traits::kSigned, type_traits_internal::FormatFacts<typename Traits::Format>::kNegativeZero,
          Traits::kSince};
}

/// Every type of the list, in DataType order (index = number − 1).
inline constexpr TypeInfo kTypeInfos[] = {
#define QDQ_DATA_TYPE(E, ...) make_type_info<TypeTraits<DataType::E>>(),
#include "types/data_types.inc"
#undef QDQ_DATA_TYPE
};

/// The highest DataType number the list defines (ONNX numbers its types 1..kLastDataType).
inline constexpr int kLastDataType = static_cast<int>(std::size(kTypeInfos));

constexpr bool type_list_is_in_order() {
  for (int i = 0; i < kLastDataType; ++i) {
    if (static_cast<int>(kTypeInfos[i].type) != i + 1) return false;
  }
  return true;
}
static_assert(type_list_is_in_order(), "data_types.inc must list the types in DataType order, from 1, without gaps");

inline constexpr TypeInfo kUndefinedTypeInfo = make_type_info<TypeTraits<DataType::kUndefined>>();

/// The row of `type`; UNDEFINED's (no bits, no role) for kUndefined and numbers outside the list.
constexpr const TypeInfo& type_info(DataType type) {
  const int v = static_cast<int>(type);
  return v >= 1 && v <= kLastDataType ? kTypeInfos[v - 1] : kUndefinedTypeInfo;
}

/// The first version at which `type` may take `role`, 0 if never.
constexpr int role_since(DataType type, TypeRole role) { return type_info(type).since[static_cast<int>(role)]; }

/// Whether `type` may take `role` at operator version `version`.
constexpr bool allowed_in_role(DataType type, TypeRole role, int version) {
  const int since = role_since(type, role);
  return since != 0 && since <= version;
}

/// Calls fn(TypeTraits<T>{}) for the type T that `type` names and returns its result; numbers outside
/// the list get TypeTraits<kUndefined>. Generated from data_types.inc with no default case, so that
/// the compiler (-Wswitch) flags a DataType enumerator missing from the list.
template <class Fn>
constexpr decltype(auto) visit_type(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kUndefined: return fn(TypeTraits<DataType::kUndefined>{});
#define QDQ_DATA_TYPE(E, ...) \
  case DataType::E:           \
    return fn(TypeTraits<DataType::E>{});
#include "types/data_types.inc"
#undef QDQ_DATA_TYPE
  }
  return fn(TypeTraits<DataType::kUndefined>{});
}

/// A type the quotient or product may be computed in: float32, float64 and the 16-bit MiniFloats.
constexpr bool is_division_type(DataType t) {
  const TypeInfo& info = type_info(t);
  return info.kind == TypeKind::kFloat || (info.kind == TypeKind::kMiniFloat && info.bits == 16);
}

/// A narrow float whose zero point is a value added in float32 (FLOAT4E2M1), as opposed to the
/// float8 formats, whose zero point only selects the output type and must be zero.
constexpr bool has_float_zero_point(DataType t) {
  const TypeInfo& info = type_info(t);
  return info.kind == TypeKind::kMiniFloat && info.bits < 8;
}

/// A float8 format (a MiniFloat of 8 bits): its zero point only selects the type.
constexpr bool is_float8(DataType t) {
  const TypeInfo& info = type_info(t);
  return info.kind == TypeKind::kMiniFloat && info.bits == 8;
}

}  // namespace qdq::detail
