// Exact loads of single elements of x, scales and zero points, for the scalar kernels. Every value
// qdq reads (integers up to 32 bits, every narrow float) is exact in double.
#pragma once

#include <cstdint>
#include <cstring>

#include "qdq/types.hpp"
#include "types/float_formats.hpp"
#include "types/packing.hpp"

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

/// Element `index` of an integer tensor, sign-extended as its type says.
inline int64_t load_integer(const void* data, DataType type, int64_t index) {
  switch (type) {
    case DataType::kUint8: return load_le<uint8_t>(data, index);
    case DataType::kInt8: return load_le<int8_t>(data, index);
    case DataType::kUint16: return load_le<uint16_t>(data, index);
    case DataType::kInt16: return load_le<int16_t>(data, index);
    case DataType::kInt32: return load_le<int32_t>(data, index);
    case DataType::kUint4: return load_code(data, 4, index);
    case DataType::kInt4: return sign_extend(load_code(data, 4, index), 4);
    case DataType::kUint2: return load_code(data, 2, index);
    case DataType::kInt2: return sign_extend(load_code(data, 2, index), 2);
    default: return 0;
  }
}

/// Element `index` of a float-valued tensor (a scale, or x of QuantizeLinear), exactly.
inline double load_real(const void* data, DataType type, int64_t index) {
  switch (type) {
    case DataType::kFloat: return load_le<float>(data, index);
    case DataType::kFloat16: return half_to_float(load_le<uint16_t>(data, index));
    case DataType::kBFloat16: return bfloat16_to_float(load_le<uint16_t>(data, index));
    case DataType::kFloat8E8M0: return decode_e8m0(load_le<uint8_t>(data, index));
    case DataType::kInt32: return load_le<int32_t>(data, index);
    case DataType::kFloat4E2M1: return decode<Float4E2M1Format>(load_code(data, 4, index));
    default: return 0.0;
  }
}

}  // namespace qdq::detail
