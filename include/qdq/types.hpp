/// \file
/// qdq — ONNX linear quantization kernels.
/// Element types as ONNX numbers them, and the facts about them that callers need to size buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "qdq/export.hpp"

namespace qdq {

/// Element types, numbered exactly as ONNX's TensorProto.DataType so that a value read from an ONNX
/// file can be cast to this enum directly.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

/// Every error qdq raises: invalid arguments, shapes, types, attributes, malformed files. The message
/// names the operator and version (where there is one), the input, the rule and the offending values.
/// Does not allocate beyond its message.
class QDQ_API Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// ONNX's upper-case name of a type ("FLOAT8E4M3FN"), or "DataType(N)" for an unknown number.
/// Allocates the returned string; thread-safe.
QDQ_API std::string data_type_name(DataType type);

/// Parses an ONNX type name, case-insensitively, with or without the "tensor(...)" wrapper
/// ("float8e4m3fn", "FLOAT16", "tensor(int4)"); std::nullopt if unknown. Thread-safe.
QDQ_API std::optional<DataType> parse_data_type(std::string_view name);

/// True for the numbers 1..26 that ONNX defines. Thread-safe, no allocation.
QDQ_API bool is_known_data_type(int32_t value) noexcept;

/// Storage bits of one element: 2 (INT2/UINT2), 4 (INT4/UINT4/FLOAT4E2M1), 8, 16, 32, 64; 0 for
/// types without a fixed size (STRING, UNDEFINED). Thread-safe, no allocation.
QDQ_API int bit_width(DataType type) noexcept;

/// What the codes of an element type mean (numbered as the C API's qdq_type_kind).
enum class TypeKind : int32_t {
  kOther = 0,      ///< no number the operators read or write: UNDEFINED, STRING, BOOL, COMPLEX64/128
  kInteger = 1,    ///< two's complement or unsigned integers, INT2 to UINT64 (packed below 8 bits)
  kFloat = 2,      ///< IEEE float32 and float64: FLOAT, DOUBLE
  kMiniFloat = 3,  ///< narrow floats of sign, exponent and mantissa: FLOAT16, BFLOAT16, float8, FLOAT4E2M1
  kExponent = 4,   ///< FLOAT8E8M0: a biased power of two, without sign or mantissa
};

/// The kind of `type`'s codes; kOther for UNDEFINED and numbers ONNX does not define. Thread-safe, no
/// allocation.
QDQ_API TypeKind type_kind(DataType type) noexcept;

/// True if `type` has negative values: the INT types, every float type except FLOAT8E8M0, and
/// COMPLEX64/128; false for unknown numbers. Thread-safe, no allocation.
QDQ_API bool is_signed(DataType type) noexcept;

/// True if `code`, an element's bit pattern (zero-extended; bits above bit_width(type) are ignored),
/// is a NaN of `type`. Integers, FLOAT4E2M1 and the other types without NaN have none; FLOAT8E4M3FN's
/// are S.1111.111, the FNUZ formats' 0x80 only, FLOAT8E8M0's 0xFF. Thread-safe, no allocation.
QDQ_API bool is_nan_code(DataType type, uint64_t code) noexcept;

/// Bytes that `elements` elements of `type` occupy in ONNX's layout (sub-byte types packed, first
/// element in the low bits, last byte padded). Throws qdq::Error if the result overflows 64 bits or
/// the type has no fixed size. Thread-safe, no allocation.
QDQ_API uint64_t storage_bytes(DataType type, uint64_t elements);

/// Number of elements of a shape: the product of the dimensions (1 for rank 0). Throws qdq::Error
/// naming the shape if a dimension is negative or the product overflows 63 bits. No allocation
/// except for the message.
QDQ_API uint64_t element_count(std::span<const int64_t> shape);

/// "[2,3,4]": a shape as qdq's messages print it. Allocates the string.
QDQ_API std::string shape_to_string(std::span<const int64_t> shape);

}  // namespace qdq
