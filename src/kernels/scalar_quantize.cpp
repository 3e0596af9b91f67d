// The scalar reference QuantizeLinear kernel: written for obviousness, not speed. It is the portable
// fallback and the oracle every vectorised kernel is tested against.
//
// Two stages per run of elements: quotients in the division type P (x and the scale each rounded to
// P once, divided, the quotient rounded to P once), then the output rule of the output type.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "types/integer_types.hpp"

namespace qdq::detail {
namespace {

using T = DataType;
constexpr int64_t kChunk = 256;

/// Rounds an exact value once to the division type P (returned exactly, as double).
template <T P>
double to_division_type(double v) {
  if constexpr (P == T::kFloat) return static_cast<float>(v);
  if constexpr (P == T::kFloat16) return round_to<Float16Format>(v);
  if constexpr (P == T::kBFloat16) return round_to<BFloat16Format>(v);
  return v;
}

/// a / b correctly rounded in P. A 16-bit division done in float32 and rounded once to the 16-bit
/// type equals the native 16-bit division (2p + 2 <= 24), so float32 serves all three float types.
template <T P>
double divide(double a, double b) {
  if constexpr (P == T::kDouble) {
    return a / b;
  } else {
    const float q = static_cast<float>(a) / static_cast<float>(b);
    return to_division_type<P>(q);
  }
}

template <T X>
double load_x(const void* x, int64_t index) {
  if constexpr (X == T::kFloat) return load_le<float>(x, index);
  if constexpr (X == T::kFloat16) return half_to_float(load_le<uint16_t>(x, index));
  if constexpr (X == T::kBFloat16) return bfloat16_to_float(load_le<uint16_t>(x, index));
  if constexpr (X == T::kInt32) return load_le<int32_t>(x, index);
  return 0.0;
}

template <T X, T P>
void quotients(const QuantizeCall& c, int64_t first, int64_t count, int64_t param_index, int step, double* q) {
  double scale = to_division_type<P>(load_real(c.scale, c.scale_type, param_index));
  for (int64_t i = 0; i < count; ++i) {
    if (step != 0) scale = to_division_type<P>(load_real(c.scale, c.scale_type, param_index + i));
    q[i] = divide<P>(to_division_type<P>(load_x<X>(c.x, first + i)), scale);
  }
}

using QuotientFn = void (*)(const QuantizeCall&, int64_t, int64_t, int64_t, int, double*);

template <T X>
QuotientFn quotient_fn_for(T p) {
  switch (p) {
    case T::kFloat16: return &quotients<X, T::kFloat16>;
    case T::kBFloat16: return &quotients<X, T::kBFloat16>;
    case T::kDouble: return &quotients<X, T::kDouble>;
    default: return &quotients<X, T::kFloat>;
  }
}

QuotientFn quotient_fn(T x, T p) {
  switch (x) {
    case T::kFloat16: return quotient_fn_for<T::kFloat16>(p);
    case T::kBFloat16: return quotient_fn_for<T::kBFloat16>(p);
    case T::kInt32: return quotient_fn_for<T::kInt32>(p);
    default: return quotient_fn_for<T::kFloat>(p);
  }
}

/// Writes the output codes of elements [first, first + count) of y from their quotients.
void store(const QuantizeCall& c, void* y, int64_t first, int64_t count, int64_t param_index, int step, const double* q) {
  const T type = c.y_type;
  const int bits = bit_width(type);
  uint8_t codes[kChunk];
  switch (type) {
    case T::kFloat8E4M3FN:
      for (int64_t i = 0; i < count; ++i) codes[i] = static_cast<uint8_t>(encode<Float8E4M3FNFormat>(q[i], c.saturate));
      break;
    case T::kFloat8E4M3FNUZ:
      for (int64_t i = 0; i < count; ++i) codes[i] = static_cast<uint8_t>(encode<Float8E4M3FNUZFormat>(q[i], c.saturate));
      break;
    case T::kFloat8E5M2:
      for (int64_t i = 0; i < count; ++i) codes[i] = static_cast<uint8_t>(encode<Float8E5M2Format>(q[i], c.saturate));
      break;
    case T::kFloat8E5M2FNUZ:
      for (int64_t i = 0; i < count; ++i) codes[i] = static_cast<uint8_t>(encode<Float8E5M2FNUZFormat>(q[i], c.saturate));
      break;
    case T::kFloat4E2M1:
      for (int64_t i = 0; i < count; ++i) {
        if (c.zero_point != nullptr) {
          // The zero point is added in float32, after rounding the quotient to float32.
          const float zp = static_cast<float>(load_real(c.zero_point, T::kFloat4E2M1, param_index + i * step));
          codes[i] = static_cast<uint8_t>(encode<Float4E2M1Format>(static_cast<float>(q[i]) + zp, true));
        } else {
          codes[i] = static_cast<uint8_t>(encode<Float4E2M1Format>(q[i], true));
        }
      }
      break;
    default: {
      const double range_min = integer_min(type);
      const double range_max = integer_max(type);
      for (int64_t i = 0; i < count; ++i) {
        double v;
        if (std::isnan(q[i])) {
          v = range_min;  // NaN has no integer: the type's minimum, whatever the zero point
        } else {
          v = std::nearbyint(q[i]);
          if (c.zero_point != nullptr) v += static_cast<double>(load_integer(c.zero_point, c.zero_point_type, param_index + i * step));
          v = std::clamp(v, range_min, range_max);
        }
        const auto value = static_cast<int32_t>(v);
        if (bits == 16) {
          const auto u = static_cast<uint16_t>(value);
          std::memcpy(static_cast<uint8_t*>(y) + (first + i) * 2, &u, 2);
        } else {
          codes[i] = static_cast<uint8_t>(value);
        }
      }
      if (bits == 16) return;
      break;
    }
  }
  pack_codes(codes, bits, first, count, static_cast<uint8_t*>(y), first + count == c.plan.elements);
}

}  // namespace

void quantize_scalar(const QuantizeCall& call, void* y, int64_t begin, int64_t end) {
  const QuotientFn compute = quotient_fn(call.x_type, call.division_type);
  double q[kChunk];
  for_each_piece(call.plan, begin, end, kChunk, [&](int64_t first, int64_t count, int64_t param_index, int step) {
    compute(call, first, count, param_index, step, q);
    store(call, y, first, count, param_index, step, q);
  });
}

}  // namespace qdq::detail
