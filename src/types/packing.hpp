// The definition of how ONNX packs 4-bit and 2-bit elements, and its scalar form: element k of a
// tensor lives in byte k·bits/8, at bit (k·bits) mod 8, first element in the low bits; a partial last
// byte is padded with zero bits. Kernels work on unpacked codes (one per byte) and call these at the
// edges. The vector forms are all in kernels/simd/pack-inl.h and the whole-tensor loops in
// packing_bulk.hpp; tests/unit/simd_helpers_test.cc checks the vector forms against these.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qdq::detail {

/// Reads `count` codes of `bits` (2, 4 or 8) bits starting at element `first` of a packed buffer
/// into one byte each (no sign extension). `first` may start inside a byte.
inline void unpack_codes(const uint8_t* packed, int bits, int64_t first, int64_t count, uint8_t* codes) {
  if (bits == 8) {
    for (int64_t i = 0; i < count; ++i) codes[i] = packed[first + i];
    return;
  }
  const int per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  int64_t i = 0;
  int64_t k = first;
  // Leading partial byte.
  for (; i < count && (k % per_byte) != 0; ++i, ++k) {
    codes[i] = static_cast<uint8_t>((packed[k / per_byte] >> ((k % per_byte) * bits)) & mask);
  }
  // Whole bytes.
  for (; i + per_byte <= count; i += per_byte, k += per_byte) {
    const uint8_t byte = packed[k / per_byte];
    for (int j = 0; j < per_byte; ++j) codes[i + j] = static_cast<uint8_t>((byte >> (j * bits)) & mask);
  }
  for (; i < count; ++i, ++k) {
    codes[i] = static_cast<uint8_t>((packed[k / per_byte] >> ((k % per_byte) * bits)) & mask);
  }
}

/// Writes `count` codes (one per byte, low `bits` bits used) as elements `first`.. of a packed
/// buffer. Bytes wholly covered are overwritten; a byte shared with elements outside the range is
/// updated in place, so callers that split work between threads give each a byte-aligned range.
/// `pad_to_byte`: the range ends the tensor, so the unused high bits of its last byte are zeroed.
inline void pack_codes(const uint8_t* codes, int bits, int64_t first, int64_t count, uint8_t* packed,
                       bool pad_to_byte) {
  if (bits == 8) {
    for (int64_t i = 0; i < count; ++i) packed[first + i] = codes[i];
    return;
  }
  const int per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  int64_t i = 0;
  int64_t k = first;
  auto put_one = [&](int64_t element, uint8_t code) {
    const int shift = static_cast<int>(element % per_byte) * bits;
    uint8_t& byte = packed[element / per_byte];
    byte = static_cast<uint8_t>((byte & ~(mask << shift)) | ((code & mask) << shift));
  };
  for (; i < count && (k % per_byte) != 0; ++i, ++k) put_one(k, codes[i]);
  for (; i + per_byte <= count; i += per_byte, k += per_byte) {
    uint8_t byte = 0;
    for (int j = 0; j < per_byte; ++j) byte = static_cast<uint8_t>(byte | ((codes[i + j] & mask) << (j * bits)));
    packed[k / per_byte] = byte;
  }
  for (; i < count; ++i, ++k) put_one(k, codes[i]);
  const int used = static_cast<int>(k % per_byte) * bits;
  if (pad_to_byte && used != 0) packed[k / per_byte] &= static_cast<uint8_t>((1u << used) - 1);
}

/// Sign-extends a `bits`-bit two's complement code.
constexpr int32_t sign_extend(uint32_t code, int bits) {
  const uint32_t top = 1u << (bits - 1);
  return static_cast<int32_t>((code & ((1u << bits) - 1)) ^ top) - static_cast<int32_t>(top);
}

}  // namespace qdq::detail
