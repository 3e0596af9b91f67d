// Facts about ONNX's quantized integer element types, shared by the scalar and vectorised kernels so
// that ranges and widths are spelled once; all derived from the type list (types/type_traits.hpp).
#pragma once

#include <cstdint>

#include "qdq/types.hpp"
#include "types/type_traits.hpp"

namespace qdq::detail {

/// True for the integer types QuantizeLinear produces and DequantizeLinear reads (not INT32).
constexpr bool is_quantized_integer(DataType t) {
  return type_info(t).kind == TypeKind::kInteger && role_since(t, TypeRole::kQuantizeY) != 0;
}

constexpr bool is_signed_quantized_integer(DataType t) { return is_quantized_integer(t) && type_info(t).is_signed; }

/// Storage bits of a quantized element (16, 8, 4 or 2; FLOAT4E2M1 is 4).
constexpr int quantized_bits(DataType t) { return type_info(t).bits; }

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
static_assert(quantized_bits(DataType::kFloat8E4M3FN) == 8 && quantized_bits(DataType::kFloat4E2M1) == 4);

}  // namespace qdq::detail
