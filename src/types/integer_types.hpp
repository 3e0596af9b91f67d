// Compile-time facts about ONNX's integer element types (the quantized ones), shared by the scalar
// and vectorised kernels so that ranges and widths are spelled once.
#pragma once

#include <cstdint>

#include "qdq/types.hpp"

namespace qdq::detail {

/// True for the integer types QuantizeLinear produces and DequantizeLinear reads (not INT32).
constexpr bool is_quantized_integer(DataType t) {
  using T = DataType;
  return t == T::kUint8 || t == T::kInt8 || t == T::kUint16 || t == T::kInt16 || t == T::kUint4 || t == T::kInt4 ||
         t == T::kUint2 || t == T::kInt2;
}

constexpr bool is_signed_quantized_integer(DataType t) {
  using T = DataType;
  return t == T::kInt8 || t == T::kInt16 || t == T::kInt4 || t == T::kInt2;
}

/// Storage bits of a quantized element: 16, 4 (incl. FLOAT4E2M1), 2, else 8.
constexpr int quantized_bits(DataType t) {
  using T = DataType;
  switch (t) {
    case T::kUint16:
    case T::kInt16: return 16;
    case T::kUint4:
    case T::kInt4:
    case T::kFloat4E2M1: return 4;
    case T::kUint2:
    case T::kInt2: return 2;
    default: return 8;
  }
}

/// The range an integer output saturates to; {0, 0} for other types.
constexpr int32_t integer_min(DataType t) {
  if (!is_signed_quantized_integer(t)) return 0;
  return -(int32_t{1} << (quantized_bits(t) - 1));
}
constexpr int32_t integer_max(DataType t) {
  if (!is_quantized_integer(t)) return 0;
  const int bits = quantized_bits(t);
  return is_signed_quantized_integer(t) ? (int32_t{1} << (bits - 1)) - 1 : (int32_t{1} << bits) - 1;
}

static_assert(integer_min(DataType::kInt8) == -128 && integer_max(DataType::kInt8) == 127);
static_assert(integer_min(DataType::kUint16) == 0 && integer_max(DataType::kUint16) == 65535);
static_assert(integer_min(DataType::kInt2) == -2 && integer_max(DataType::kInt2) == 1);
static_assert(integer_max(DataType::kUint4) == 15 && integer_max(DataType::kFloat4E2M1) == 0);

}  // namespace qdq::detail
