// Names, sizes and element counts of ONNX element types (the facts come from types/data_types.inc).
#include <array>
#include <cctype>
#include <string>
#include <type_traits>

#include "qdq/types.hpp"
#include "types/type_traits.hpp"

namespace qdq {
namespace {

using detail::kLastDataType;
using detail::type_info;
using detail::TypeInfo;

/// The list's row of a type, or nullptr for kUndefined and numbers outside the list.
const TypeInfo* find(DataType type) {
  const auto v = static_cast<int32_t>(type);
  if (v < 1 || v > kLastDataType) return nullptr;
  return &type_info(type);
}

// The low `bits` bits set (all 64 for bits >= 64).
constexpr uint64_t width_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// A NaN code of the MiniFloat format F (its bits above F::kBits cleared).
template <class F>
constexpr bool is_minifloat_nan(uint64_t code) {
  switch (F::kSpecials) {
    case detail::SpecialValues::kIeee: return (code & F::kMagnitudeMask) > (F::kExpFieldMax << F::kManBits);
    case detail::SpecialValues::kFn: return (code & F::kMagnitudeMask) == F::kMagnitudeMask;
    case detail::SpecialValues::kFnuz: return code == F::kSignBit;
    case detail::SpecialValues::kNone: return false;
  }
  return false;
}

// A NaN code of the type of `Traits` (its bits above the width cleared). The switch over the kinds
// has no default, so that a new kind must say what its NaNs are.
template <class Traits>
constexpr bool is_nan_code_of(uint64_t code) {
  switch (Traits::kKind) {
    case TypeKind::kFloat:  // IEEE binary32 or binary64: all-ones exponent, nonzero mantissa
      return Traits::kBits == 32 ? (code & 0x7FFFFFFFu) > 0x7F800000u
                                 : (code & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
    case TypeKind::kMiniFloat:
      if constexpr (!std::is_void_v<typename Traits::Format>) return is_minifloat_nan<typename Traits::Format>(code);
      return false;
    case TypeKind::kExponent: return code == width_mask(Traits::kBits);  // FLOAT8E8M0's 0xFF
    case TypeKind::kInteger:
    case TypeKind::kOther: return false;
  }
  return false;
}

}  // namespace

std::string data_type_name(DataType type) {
  if (const TypeInfo* info = find(type)) return info->name;
  if (type == DataType::kUndefined) return "UNDEFINED";
  return "DataType(" + std::to_string(static_cast<int32_t>(type)) + ")";
}

std::optional<DataType> parse_data_type(std::string_view name) {
  if (name.starts_with("tensor(") && name.ends_with(")")) name = name.substr(7, name.size() - 8);
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "FLOAT32") upper = "FLOAT";
  if (upper == "FLOAT64") upper = "DOUBLE";
  for (const TypeInfo& info : detail::kTypeInfos) {
    if (upper == info.name) return info.type;
  }
  return std::nullopt;
}

bool is_known_data_type(int32_t value) noexcept { return value >= 1 && value <= kLastDataType; }

int bit_width(DataType type) noexcept {
  const TypeInfo* info = find(type);
  return info ? info->bits : 0;
}

TypeKind type_kind(DataType type) noexcept { return type_info(type).kind; }

bool is_signed(DataType type) noexcept { return type_info(type).is_signed; }

bool is_nan_code(DataType type, uint64_t code) noexcept {
  return detail::visit_type(type, [code](auto traits) {
    using Traits = decltype(traits);
    return is_nan_code_of<Traits>(code & width_mask(Traits::kBits));
  });
}

uint64_t storage_bytes(DataType type, uint64_t elements) {
  const int bits = bit_width(type);
  if (bits == 0) throw Error("element type " + data_type_name(type) + " has no fixed storage size");
  if (bits < 8) {
    const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
    return elements / per_byte + (elements % per_byte != 0 ? 1 : 0);
  }
  const uint64_t bytes_per = static_cast<uint64_t>(bits / 8);
  if (elements > UINT64_MAX / bytes_per) {
    throw Error(std::to_string(elements) + " elements of " + data_type_name(type) +
                " overflow a 64-bit byte size (more than 2^64 bytes)");
  }
  return elements * bytes_per;
}

std::string shape_to_string(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

uint64_t element_count(std::span<const int64_t> shape) {
  uint64_t count = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) throw Error("shape " + shape_to_string(shape) + " has a negative dimension");
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : shape) {
    if (count > static_cast<uint64_t>(INT64_MAX) / static_cast<uint64_t>(d)) {
      throw Error("shape " + shape_to_string(shape) + " has more than 2^63 elements");
    }
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

}  // namespace qdq
