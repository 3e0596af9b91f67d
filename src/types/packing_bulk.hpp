// Whole-tensor packing and unpacking at memory speed, for callers that convert between one code per
// byte and ONNX's packed layout around a library call (the Python module). The layout is the one
// packing.hpp defines (element k in byte k·bits/8 at bit (k·bits) mod 8, first element in the low
// bits, the last byte zero-padded); these are the same functions as pack_codes / unpack_codes over a
// whole tensor, written as loops without carried state so that compilers vectorise them. Kept apart
// from packing.hpp so that the library's kernels, which include that, do not depend on this file.
#pragma once

#include <cstdint>

#include "types/packing.hpp"

namespace qdq::detail {

/// Packs a whole tensor: `count` codes, one per byte (low `bits` bits used; 2, 4 or 8), into
/// `storage_bytes` bytes of ONNX's layout, the last byte padded with zero bits. Same result as
/// pack_codes(codes, bits, 0, count, packed, true), in loops without carried state that compilers
/// vectorise, so the pass runs at memory speed. No allocation; single-threaded.
inline void pack_all_codes(const uint8_t* codes, int bits, int64_t count, uint8_t* packed) {
  if (bits == 4) {
    const int64_t whole = count / 2;
    for (int64_t i = 0; i < whole; ++i) {
      packed[i] = static_cast<uint8_t>((codes[2 * i] & 0x0F) | (codes[2 * i + 1] << 4));
    }
    if (count % 2) packed[whole] = static_cast<uint8_t>(codes[count - 1] & 0x0F);
    return;
  }
  if (bits == 2) {
    const int64_t whole = count / 4;
    for (int64_t i = 0; i < whole; ++i) {
      packed[i] = static_cast<uint8_t>((codes[4 * i] & 0x03) | ((codes[4 * i + 1] & 0x03) << 2) |
                                       ((codes[4 * i + 2] & 0x03) << 4) | (codes[4 * i + 3] << 6));
    }
    if (count % 4) pack_codes(codes + 4 * whole, bits, 0, count % 4, packed + whole, true);
    return;
  }
  pack_codes(codes, bits, 0, count, packed, true);
}

/// Unpacks a whole tensor of `count` `bits`-bit elements (2, 4 or 8) into one byte each: the code
/// (0 .. 2^bits - 1), or with `sign_extend_codes` the two's complement value as an int8 byte. Loops
/// that compilers vectorise (memory speed). No allocation; single-threaded.
inline void unpack_all_codes(const uint8_t* packed, int bits, int64_t count, bool sign_extend_codes, uint8_t* out) {
  if (bits == 4) {
    const int64_t whole = count / 2;
    if (sign_extend_codes) {
      for (int64_t i = 0; i < whole; ++i) {
        const uint8_t b = packed[i];
        out[2 * i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 4);
        out[2 * i + 1] = static_cast<uint8_t>(static_cast<int8_t>(b) >> 4);
      }
    } else {
      for (int64_t i = 0; i < whole; ++i) {
        const uint8_t b = packed[i];
        out[2 * i] = static_cast<uint8_t>(b & 0x0F);
        out[2 * i + 1] = static_cast<uint8_t>(b >> 4);
      }
    }
    if (count % 2) {
      const uint8_t code = packed[whole] & 0x0F;
      out[count - 1] =
          sign_extend_codes ? static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(code << 4)) >> 4) : code;
    }
    return;
  }
  if (bits == 2) {
    const int64_t whole = count / 4;
    // Each code moved to the top two bits, then shifted down: arithmetically (sign-extended) or not.
    if (sign_extend_codes) {
      for (int64_t i = 0; i < whole; ++i) {
        const uint8_t b = packed[i];
        out[4 * i] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 6)) >> 6);
        out[4 * i + 1] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 4)) >> 6);
        out[4 * i + 2] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<uint8_t>(b << 2)) >> 6);
        out[4 * i + 3] = static_cast<uint8_t>(static_cast<int8_t>(b) >> 6);
      }
    } else {
      for (int64_t i = 0; i < whole; ++i) {
        const uint8_t b = packed[i];
        out[4 * i] = static_cast<uint8_t>(b & 0x03);
        out[4 * i + 1] = static_cast<uint8_t>((b >> 2) & 0x03);
        out[4 * i + 2] = static_cast<uint8_t>((b >> 4) & 0x03);
        out[4 * i + 3] = static_cast<uint8_t>(b >> 6);
      }
    }
    for (int64_t i = 4 * whole; i < count; ++i) {
      const uint8_t shifted = static_cast<uint8_t>(packed[whole] << (6 - 2 * (i - 4 * whole)));
      out[i] = sign_extend_codes ? static_cast<uint8_t>(static_cast<int8_t>(shifted) >> 6)
                                 : static_cast<uint8_t>(shifted >> 6);
    }
    return;
  }
  unpack_codes(packed, bits, 0, count, out);
}

}  // namespace qdq::detail
