// Whole-tensor packing and unpacking at memory speed, for callers that convert between one code per
// byte and ONNX's packed layout around a library call (the Python module). The layout is the one
// packing.hpp defines (element k in byte k·bits/8 at bit (k·bits) mod 8, first element in the low
// bits, the last byte zero-padded); these are the same functions as pack_codes / unpack_codes over a
// whole tensor, written as loops without carried state so that compilers vectorise them. Kept apart
// from packing.hpp so that the library's kernels, which include that, do not depend on this file.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

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

// The codes of `whole` packed bytes, one per byte (sign-extended when Signed): each packed byte
// becomes one 16-bit (4-bit codes) or 32-bit (2-bit codes) word holding its codes in its bytes, first
// code lowest, made with shifts and masks (and a multiply that sign-extends within each byte). A loop
// storing out[2 * i] and out[2 * i + 1] instead is vectorised with byte shuffles, or for unsigned 2-bit
// codes not at all; this one widens and stores whole words (qdq.unpack of 64 Ki uint2 codes: 53 ->
// 4 µs; int2 2.5x, int4 1.8x faster). Little-endian only.
template <int Bits, bool Signed>
inline void unpack_whole_bytes(const uint8_t* packed, int64_t whole, uint8_t* out) {
  for (int64_t i = 0; i < whole; ++i) {
    const uint32_t b = packed[i];
    if constexpr (Bits == 4) {
      auto word = static_cast<uint16_t>((b & 0x0Fu) | ((b & 0xF0u) << 4));
      if constexpr (Signed) word = static_cast<uint16_t>(word | (word & 0x0808u) * 0x1Eu);  // 0x08 -> 0xF8
      std::memcpy(out + 2 * i, &word, 2);
    } else {
      uint32_t word = (b | b << 6 | b << 12 | b << 18) & 0x03030303u;
      if constexpr (Signed) word |= (word & 0x02020202u) * 0x7Eu;  // 0x02 -> 0xFE, within each byte
      std::memcpy(out + 4 * i, &word, 4);
    }
  }
}

/// Unpacks a whole tensor of `count` `bits`-bit elements (2, 4 or 8) into one byte each: the code
/// (0 .. 2^bits - 1), or with `sign_extend_codes` the two's complement value as an int8 byte. Loops
/// that compilers vectorise (memory speed). No allocation; single-threaded.
inline void unpack_all_codes(const uint8_t* packed, int bits, int64_t count, bool sign_extend_codes, uint8_t* out) {
  if constexpr (std::endian::native == std::endian::little) {
    if (bits == 4 || bits == 2) {  // whole bytes word by word; the loops below do the last codes
      const int64_t per_byte = 8 / bits;
      const int64_t whole = count / per_byte;
      if (bits == 4) {
        sign_extend_codes ? unpack_whole_bytes<4, true>(packed, whole, out)
                          : unpack_whole_bytes<4, false>(packed, whole, out);
      } else {
        sign_extend_codes ? unpack_whole_bytes<2, true>(packed, whole, out)
                          : unpack_whole_bytes<2, false>(packed, whole, out);
      }
      packed += whole;
      out += whole * per_byte;
      count -= whole * per_byte;
    }
  }
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
