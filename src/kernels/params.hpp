// Exact loads of single elements of x, scales and zero points, for the scalar kernels. Every value
// qdq reads (integers up to 32 bits, every narrow float) is exact in double. Conversions follow the
// type's kind, bits and format (types/type_traits.hpp), so a new type of a known kind needs no code.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "qdq/types.hpp"
#include "types/float_formats.hpp"
#include "types/packing.hpp"
#include "types/type_traits.hpp"

namespace qdq::detail {

template <class V>
inline V load_le(const void* data, int64_t index) {
  V v;
  std::memcpy(&v, static_cast<const uint8_t*>(data) + index * static_cast<int64_t>(sizeof(V)), sizeof(V));
  return v;
}

/// The code of element `index` of a packed (2/4-bit) or 8-bit buffer.
inline uint32_t load_code(const void* data, int bits, int64_t index) {
  uint8_t code;
  unpack_codes(static_cast<const uint8_t*>(data), bits, index, 1, &code);
  return code;
}

/// The unsigned integer holding one code of `bits` (8, 16, 32 or 64) bits.
template <int bits>
using CodeOf =
    std::conditional_t<bits <= 8, uint8_t,
                       std::conditional_t<bits == 16, uint16_t, std::conditional_t<bits == 32, uint32_t, uint64_t>>>;

/// The code of element `index` of a tensor of type Traits, zero-extended.
template <class Traits>
inline uint64_t load_code_of(const void* data, int64_t index) {
  if constexpr (Traits::kBits < 8) {
    return load_code(data, Traits::kBits, index);
  } else {
    return load_le<CodeOf<Traits::kBits>>(data, index);
  }
}

/// Element `index` of an integer tensor of type Traits (at most 32 bits), sign-extended as it says.
template <class Traits>
inline int64_t load_integer_of(const void* data, int64_t index) {
  static_assert(Traits::kKind == TypeKind::kInteger && Traits::kBits <= 32);
  constexpr int kBits = Traits::kBits;
  if constexpr (kBits < 8) {
    const uint32_t code = load_code(data, kBits, index);
    return Traits::kSigned ? sign_extend(code, kBits) : static_cast<int64_t>(code);
  } else if constexpr (Traits::kSigned) {
    return load_le<std::make_signed_t<CodeOf<kBits>>>(data, index);
  } else {
    return load_le<CodeOf<kBits>>(data, index);
  }
}

/// Element `index` of a tensor of type Traits (a scale, or x of QuantizeLinear), exactly.
template <class Traits>
inline double load_real_of(const void* data, int64_t index) {
  if constexpr (Traits::kKind == TypeKind::kFloat && Traits::kBits == 32) {
    return load_le<float>(data, index);
  } else if constexpr (Traits::kKind == TypeKind::kFloat && Traits::kBits == 64) {
    return load_le<double>(data, index);
  } else if constexpr (Traits::kKind == TypeKind::kMiniFloat) {
    return decode<typename Traits::Format>(static_cast<uint32_t>(load_code_of<Traits>(data, index)));
  } else if constexpr (Traits::kKind == TypeKind::kExponent) {
    return decode_e8m0(static_cast<uint32_t>(load_code_of<Traits>(data, index)));
  } else {
    static_assert(Traits::kKind == TypeKind::kInteger && Traits::kBits <= 32);
    return static_cast<double>(load_integer_of<Traits>(data, index));
  }
}

/// Element `index` of an integer tensor, sign-extended as its type says. Validation lets only
/// integer types of at most 32 bits reach here; other types read as 0.
inline int64_t load_integer(const void* data, DataType type, int64_t index) {
  return visit_type(type, [&](auto traits) -> int64_t {
    using Traits = decltype(traits);
    if constexpr (Traits::kKind == TypeKind::kInteger && Traits::kBits <= 32)
      return load_integer_of<Traits>(data, index);
    return 0;
  });
}

/// Element `index` of a float-valued tensor (a scale, or x of QuantizeLinear), exactly. Validation
/// lets only numeric types of at most 32 bits (and float64) reach here; other types read as 0.
inline double load_real(const void* data, DataType type, int64_t index) {
  return visit_type(type, [&](auto traits) -> double {
    using Traits = decltype(traits);
    constexpr TypeKind kKind = Traits::kKind;
    if constexpr (kKind == TypeKind::kFloat || kKind == TypeKind::kMiniFloat || kKind == TypeKind::kExponent ||
                  (kKind == TypeKind::kInteger && Traits::kBits <= 32)) {
      return load_real_of<Traits>(data, index);
    }
    return 0.0;
  });
}

}  // namespace qdq::detail
