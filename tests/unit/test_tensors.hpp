// Small helpers shared by the unit tests: caller-owned tensors built from std::vector, views onto
// them for the public API, and readers for the results. The packing here is written independently
// of src/types/packing.hpp (element k at bit (k·bits) mod 8 of byte k·bits/8, padding zero), so the
// operator tests do not trust the library's own packer.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "qdq/qdq.hpp"
#include "types/type_traits.hpp"

namespace qdq_test {

using qdq::DataType;
using Shape = std::vector<int64_t>;

namespace qdq_detail = qdq::detail;

/// Storage bits of an element type, from the type list (type_lists_test.cpp checks the list against
/// types.md §1 by hand).
inline int type_bits(DataType t) { return qdq_detail::type_info(t).bits; }

/// A signed integer type (INT2 ... INT64).
inline bool is_signed_int(DataType t) {
  const qdq_detail::TypeInfo& info = qdq_detail::type_info(t);
  return info.kind == qdq_detail::TypeKind::kInteger && info.is_signed;
}

/// An integer type the operators read or write (INT64 and UINT32/64 have no operator role).
inline bool is_int_type(DataType t) {
  const qdq_detail::TypeInfo& info = qdq_detail::type_info(t);
  return info.kind == qdq_detail::TypeKind::kInteger &&
         (qdq_detail::role_since(t, qdq_detail::TypeRole::kQuantizeY) != 0 ||
          qdq_detail::role_since(t, qdq_detail::TypeRole::kDequantizeX) != 0);
}

/// A float8 format (its zero point only selects the type).
inline bool is_float8(DataType t) { return qdq_detail::is_float8(t); }

inline int64_t int_min(DataType t) { return is_signed_int(t) ? -(int64_t(1) << (type_bits(t) - 1)) : 0; }
inline int64_t int_max(DataType t) {
  return is_signed_int(t) ? (int64_t(1) << (type_bits(t) - 1)) - 1 : (int64_t(1) << type_bits(t)) - 1;
}

inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

inline size_t byte_size(DataType t, int64_t elements) { return static_cast<size_t>((elements * type_bits(t) + 7) / 8); }

/// Packs element codes into ONNX's layout (little-endian, sub-byte first element in the low bits).
inline std::vector<uint8_t> pack(DataType t, const std::vector<uint64_t>& codes) {
  const int bits = type_bits(t);
  std::vector<uint8_t> out(byte_size(t, static_cast<int64_t>(codes.size())), 0);
  for (size_t k = 0; k < codes.size(); ++k) {
    if (bits < 8) {
      const uint64_t mask = (uint64_t(1) << bits) - 1;
      const size_t bit = k * static_cast<size_t>(bits);
      out[bit / 8] = static_cast<uint8_t>(out[bit / 8] | ((codes[k] & mask) << (bit % 8)));
    } else {
      for (int b = 0; b < bits / 8; ++b) out[k * (bits / 8) + b] = static_cast<uint8_t>(codes[k] >> (8 * b));
    }
  }
  return out;
}

/// The inverse of pack: element codes (raw bits, no sign extension).
inline std::vector<uint64_t> unpack(DataType t, const std::vector<uint8_t>& bytes, int64_t count) {
  const int bits = type_bits(t);
  std::vector<uint64_t> out(static_cast<size_t>(count), 0);
  for (size_t k = 0; k < out.size(); ++k) {
    if (bits < 8) {
      const size_t bit = k * static_cast<size_t>(bits);
      out[k] = (bytes[bit / 8] >> (bit % 8)) & ((1u << bits) - 1);
    } else {
      uint64_t v = 0;
      for (int b = 0; b < bits / 8; ++b) v |= uint64_t(bytes[k * (bits / 8) + b]) << (8 * b);
      out[k] = v;
    }
  }
  return out;
}

/// A caller-owned tensor: element type, shape and bytes in ONNX's layout.
struct Tensor {
  DataType type = DataType::kUndefined;
  Shape shape;
  std::vector<uint8_t> bytes;

  Tensor() { bytes.reserve(1); }
  Tensor(DataType t, Shape s, std::vector<uint8_t> b) : type(t), shape(std::move(s)), bytes(std::move(b)) {
    bytes.reserve(1);  // a non-null data pointer even for empty tensors
  }

  int64_t elements() const { return numel(shape); }
  qdq::TensorView view() const {
    return qdq::TensorView{type, std::span<const int64_t>(shape), bytes.data(), bytes.size()};
  }
  qdq::MutableTensorView mut() {
    return qdq::MutableTensorView{type, std::span<const int64_t>(shape), bytes.data(), bytes.size()};
  }
  std::vector<uint64_t> codes() const { return unpack(type, bytes, elements()); }
  /// Integer values (sign-extended for signed types).
  std::vector<int64_t> ints() const {
    std::vector<int64_t> out;
    const int bits = type_bits(type);
    for (uint64_t c : codes()) {
      int64_t v = static_cast<int64_t>(c);
      if (is_signed_int(type) && bits < 64 && (c >> (bits - 1)) & 1) v -= int64_t(1) << bits;
      out.push_back(v);
    }
    return out;
  }
  std::vector<float> floats() const {
    std::vector<float> out;
    for (uint64_t c : codes()) out.push_back(std::bit_cast<float>(static_cast<uint32_t>(c)));
    return out;
  }
};

/// A tensor from raw element codes (float8/float4/16-bit patterns, or integer bits).
inline Tensor from_codes(DataType t, Shape shape, const std::vector<uint64_t>& codes) {
  EXPECT_EQ(numel(shape), static_cast<int64_t>(codes.size())) << "test bug: shape/code count";
  return Tensor(t, std::move(shape), pack(t, codes));
}

/// A tensor from integer values (two's complement, masked to the type's width).
inline Tensor from_ints(DataType t, Shape shape, const std::vector<int64_t>& values) {
  std::vector<uint64_t> codes;
  const int bits = type_bits(t);
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  for (int64_t v : values) codes.push_back(static_cast<uint64_t>(v) & mask);
  return from_codes(t, std::move(shape), codes);
}

inline Tensor f32(Shape shape, const std::vector<float>& values) {
  std::vector<uint64_t> codes;
  for (float v : values) codes.push_back(std::bit_cast<uint32_t>(v));
  return from_codes(DataType::kFloat, std::move(shape), codes);
}

inline Tensor scalar_f32(float v) { return f32({}, {v}); }

/// An output buffer of the right size, filled with a sentinel byte.
inline Tensor output(DataType t, Shape shape, uint8_t fill = 0xCD) {
  const size_t n = byte_size(t, numel(shape));
  return Tensor(t, std::move(shape), std::vector<uint8_t>(n, fill));
}

inline uint32_t bits_of(float v) { return std::bit_cast<uint32_t>(v); }

/// Runs `fn`, expects a qdq::Error, and checks that its message contains, for every group, at least
/// one of the group's alternatives (e.g. {{"QuantizeLinear-25"}, {"y_scale"}, {"INT8", "3"}}).
inline void expect_error(const std::function<void()>& fn, const std::vector<std::vector<std::string>>& must_mention,
                         const std::string& what = "") {
  try {
    fn();
  } catch (const qdq::Error& e) {
    const std::string msg = e.what();
    for (const auto& group : must_mention) {
      bool found = false;
      for (const auto& alt : group) found = found || msg.find(alt) != std::string::npos;
      std::string alts;
      for (const auto& alt : group) alts += (alts.empty() ? "\"" : " or \"") + alt + "\"";
      EXPECT_TRUE(found) << what << ": message lacks " << alts << "\n  message: " << msg;
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": expected qdq::Error, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << what << ": expected qdq::Error, nothing was thrown";
}

inline qdq::ExecutionOptions single_thread() {
  qdq::ExecutionOptions o;
  o.num_threads = 1;
  return o;
}

}  // namespace qdq_test
