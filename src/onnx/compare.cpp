// Bit-exact tensor comparison and readable element printing for `qdq test`.
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "qdq_onnx.hpp"

namespace qdq::onnx {
namespace {

bool is_float_type(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kFloat4E2M1: return true;
    default: return false;
  }
}

bool is_signed_integer(DataType type) {
  switch (type) {
    case DataType::kInt2:
    case DataType::kInt4:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: return true;
    default: return false;
  }
}

// The value of a float code, with NaN and infinities where the type has them. The narrow formats
// are decoded by qdq itself (one decoder for the library and `qdq test`): a float8 or FLOAT4E2M1 code
// as DequantizeLinear's x with scale 1, a 16-bit float or FLOAT8E8M0 code (scale-only types) as its
// x_scale with x = 1. The product is exact in float32 for every code of these types.
double decode_float(DataType type, uint64_t code) {
  if (type == DataType::kFloat) return std::bit_cast<float>(static_cast<uint32_t>(code));
  if (type == DataType::kDouble) return std::bit_cast<double>(code);
  if (is_nan_code(type, code)) {
    // Only BFLOAT16's NaN keeps its sign in print (it is the top half of a float32).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return type == DataType::kBFloat16 && (code & 0x8000) ? -nan : nan;
  }
  const int bits = bit_width(type);
  uint8_t code_bytes[2] = {};
  std::memcpy(code_bytes, &code, bits > 8 ? 2 : 1);  // little-endian host; a 4-bit code in the low nibble
  const float one = 1.0f;
  const uint8_t one_code = 1;
  const bool scale_only = bits == 16 || type == DataType::kFloat8E8M0;
  const TensorView code_view{type, {}, code_bytes, bits > 8 ? 2u : 1u};
  const TensorView x = scale_only ? TensorView{DataType::kUint8, {}, &one_code, 1} : code_view;
  const TensorView scale = scale_only ? code_view : TensorView{DataType::kFloat, {}, &one, sizeof one};
  float value = 0;
  DequantizeLinearAttributes attributes;
  attributes.output_dtype = static_cast<int64_t>(DataType::kFloat);
  ExecutionOptions options;
  options.num_threads = 1;
  dequantize_linear(attributes, x, scale, nullptr, MutableTensorView{DataType::kFloat, {}, &value, sizeof value},
                    options);
  return value;
}

std::string hex(uint64_t code) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, code, 16);
  return "0x" + std::string(buffer, result.ptr);
}

template <typename T>
std::string shortest(T value) {
  if (std::isnan(value)) return std::signbit(value) ? "-nan" : "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace

uint64_t element_code(const Tensor& tensor, uint64_t index) {
  const int bits = bit_width(tensor.type);
  if (bits < 8) {
    const uint64_t per_byte = static_cast<uint64_t>(8 / bits);
    const uint8_t byte = tensor.data[static_cast<size_t>(index / per_byte)];
    const auto shift = static_cast<unsigned>((index % per_byte) * static_cast<uint64_t>(bits));
    return (byte >> shift) & ((1u << bits) - 1u);
  }
  const size_t width = static_cast<size_t>(bits / 8);
  uint64_t code = 0;
  std::memcpy(&code, tensor.data.data() + static_cast<size_t>(index) * width, width);  // little-endian host
  return code;
}

bool is_nan_code(DataType type, uint64_t code) noexcept {
  switch (type) {
    case DataType::kFloat: return (code & 0x7F800000u) == 0x7F800000u && (code & 0x7FFFFFu) != 0;
    case DataType::kDouble:
      return (code & 0x7FF0000000000000ull) == 0x7FF0000000000000ull && (code & 0xFFFFFFFFFFFFFull) != 0;
    case DataType::kFloat16: return (code & 0x7C00) == 0x7C00 && (code & 0x3FF) != 0;
    case DataType::kBFloat16: return (code & 0x7F80) == 0x7F80 && (code & 0x7F) != 0;
    case DataType::kFloat8E4M3FN: return (code & 0x7F) == 0x7F;
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2FNUZ: return code == 0x80;
    case DataType::kFloat8E5M2: return (code & 0x7C) == 0x7C && (code & 0x3) != 0;
    case DataType::kFloat8E8M0: return code == 0xFF;
    default: return false;
  }
}

std::string format_element(DataType type, uint64_t code) {
  const int bits = bit_width(type);
  if (is_float_type(type)) {
    const double value = decode_float(type, code);
    // Printed in the element's own precision: float's shortest form is exact for every type here
    // except DOUBLE, and keeps "1.1" from turning into 1.100000023841858.
    const std::string text = type == DataType::kDouble ? shortest(value) : shortest(static_cast<float>(value));
    return text + " (" + hex(code) + ")";
  }
  if (type == DataType::kBool) return code ? "true" : "false";
  std::string text;
  if (is_signed_integer(type)) {
    // Sign-extend from the type's width.
    const auto shift = static_cast<unsigned>(64 - bits);
    text = std::to_string(static_cast<int64_t>(code << shift) >> shift);
  } else {
    text = std::to_string(code);
  }
  if (bits <= 16) text += " (" + hex(code) + ")";
  return text;
}

std::optional<std::string> compare_tensors(const Tensor& got, const Tensor& expected, std::string_view label) {
  const std::string name(label);
  if (got.type != expected.type || got.shape != expected.shape) {
    return name + " is " + data_type_name(got.type) + " " + shape_to_string(got.shape) + ", expected " +
           data_type_name(expected.type) + " " + shape_to_string(expected.shape);
  }
  const uint64_t count = element_count(expected.shape);
  const uint64_t bytes = storage_bytes(expected.type, count);
  if (got.data.size() != bytes || expected.data.size() != bytes) {
    return name + " holds " + std::to_string(got.data.size()) + " bytes, expected " + std::to_string(bytes);
  }
  uint64_t differences = 0;
  uint64_t first = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t a = element_code(got, i);
    const uint64_t b = element_code(expected, i);
    if (a == b || (is_nan_code(got.type, a) && is_nan_code(got.type, b))) continue;
    if (differences++ == 0) first = i;
  }
  if (differences == 0) return std::nullopt;
  std::string message = name + "[" + std::to_string(first) +
                        "] = " + format_element(got.type, element_code(got, first)) + ", expected " +
                        format_element(expected.type, element_code(expected, first));
  if (count > 1) {
    message += " (" + std::to_string(differences) + " of " + std::to_string(count) + " elements differ)";
  }
  return message;
}

}  // namespace qdq::onnx
