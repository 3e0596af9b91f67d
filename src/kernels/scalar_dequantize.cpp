// The scalar reference DequantizeLinear kernel: the portable fallback and the oracle for the
// vectorised kernels. y = round_to_output(float32(x − zero_point) · float32(scale)): the difference
// exact (integers) or in float32 (FLOAT4E2M1), one float32 product, one rounding to the output type.
#include <algorithm>

#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "types/type_traits.hpp"

namespace qdq::detail {
namespace {

using T = DataType;
constexpr int64_t kChunk = 256;

/// The code of element `index` of x of type X, zero-extended: packed, or one per byte (masked).
template <class X>
uint32_t x_code(const DequantizeCall& c, int64_t index) {
  if constexpr (X::kBits < 8) {
    if (c.x_one_per_byte) return static_cast<const uint8_t*>(c.x)[index] & ((1u << X::kBits) - 1);
  }
  return static_cast<uint32_t>(load_code_of<X>(c.x, index));
}

/// Element `index` of an integer x of type X, sign-extended as it says.
template <class X>
int64_t x_integer(const DequantizeCall& c, int64_t index) {
  if constexpr (X::kBits < 8) {
    const uint32_t code = x_code<X>(c, index);
    return X::kSigned ? sign_extend(code, X::kBits) : static_cast<int64_t>(code);
  }
  return load_integer_of<X>(c.x, index);
}

/// float32(x − zero point) of elements [first, first + count) of x of type X.
template <class X>
void differences(const DequantizeCall& c, int64_t first, int64_t count, int64_t param_index, int step, float* d) {
  if constexpr (X::kKind == TypeKind::kMiniFloat) {
    using F = typename X::Format;
    for (int64_t i = 0; i < count; ++i) {
      float v = decode<F>(x_code<X>(c, first + i));
      if constexpr (has_float_zero_point(X::value)) {
        if (c.zero_point != nullptr)
          v -= decode<F>(static_cast<uint32_t>(load_code_of<X>(c.zero_point, param_index + i * step)));
      }
      d[i] = v;
    }
  } else if constexpr (X::kKind == TypeKind::kInteger && X::kBits <= 32) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t v = x_integer<X>(c, first + i);
      if (c.zero_point != nullptr) v -= load_integer(c.zero_point, c.zero_point_type, param_index + i * step);
      d[i] = static_cast<float>(v);  // one rounding (RNE); exact below 2^24
    }
  }
  // Other types are not DequantizeLinear inputs: validation never lets them through.
}

using DifferencesFn = void (*)(const DequantizeCall&, int64_t, int64_t, int64_t, int, float*);

DifferencesFn differences_fn(T x) {
  return visit_type(x, [](auto traits) -> DifferencesFn { return &differences<decltype(traits)>; });
}

/// Stores the products of elements [first, first + count) as y of type Y.
template <class Y>
void store(void* y, int64_t first, int64_t count, const float* p) {
  if constexpr (Y::kKind == TypeKind::kMiniFloat && Y::kBits == 16) {
    for (int64_t i = 0; i < count; ++i) {
      const auto code = static_cast<uint16_t>(encode<typename Y::Format>(p[i], false));
      std::memcpy(static_cast<uint8_t*>(y) + (first + i) * 2, &code, 2);
    }
  } else if constexpr (Y::kKind == TypeKind::kFloat && Y::kBits == 32) {
    std::memcpy(static_cast<uint8_t*>(y) + first * 4, p, static_cast<size_t>(count) * 4);
  }
  // Other types are not DequantizeLinear outputs: validation never lets them through.
}

using StoreFn = void (*)(void*, int64_t, int64_t, const float*);

StoreFn store_fn(T y) {
  return visit_type(y, [](auto traits) -> StoreFn { return &store<decltype(traits)>; });
}

}  // namespace

void dequantize_scalar(const DequantizeCall& call, void* y, int64_t begin, int64_t end) {
  const DifferencesFn compute = differences_fn(call.x_type);
  const StoreFn store = store_fn(call.y_type);
  float d[kChunk];
  const auto run = [&](int64_t first, int64_t last) {
    for_each_piece(call.plan, first, last, kChunk, [&](int64_t at, int64_t count, int64_t param_index, int step) {
      compute(call, at, count, param_index, step, d);
      float scale = static_cast<float>(load_real(call.scale, call.scale_type, param_index));
      for (int64_t i = 0; i < count; ++i) {
        if (step != 0) scale = static_cast<float>(load_real(call.scale, call.scale_type, param_index + i));
        d[i] = d[i] * scale;
      }
      store(y, at, count, d);
    });
  };
  for_each_task_range(call.plan, begin, end, call.columns, run);
}

}  // namespace qdq::detail
