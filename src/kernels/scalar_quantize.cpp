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
#include "types/type_traits.hpp"

namespace qdq::detail {
namespace {

using T = DataType;
constexpr int64_t kChunk = 256;

/// Rounds an exact value once to the division type P (returned exactly, as double).
template <T P>
double to_division_type(double v) {
  using Traits = TypeTraits<P>;
  static_assert(is_division_type(P));
  if constexpr (Traits::kKind == TypeKind::kMiniFloat) return round_to<typename Traits::Format>(v);
  if constexpr (Traits::kBits == 32) return static_cast<float>(v);
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

template <T X, T P>
void quotients(const QuantizeCall& c, int64_t first, int64_t count, int64_t param_index, int step, double* q) {
  double scale = to_division_type<P>(load_real(c.scale, c.scale_type, param_index));
  for (int64_t i = 0; i < count; ++i) {
    if (step != 0) scale = to_division_type<P>(load_real(c.scale, c.scale_type, param_index + i));
    q[i] = divide<P>(to_division_type<P>(load_real_of<TypeTraits<X>>(c.x, first + i)), scale);
  }
}

using QuotientFn = void (*)(const QuantizeCall&, int64_t, int64_t, int64_t, int, double*);

/// The quotient stage for x of type `x` divided in `p`; nullptr for pairs validation never lets
/// through (x not a QuantizeLinear input, p not a division type).
QuotientFn quotient_fn(T x, T p) {
  return visit_type(x, [&](auto x_traits) -> QuotientFn {
    using X = decltype(x_traits);
    if constexpr (X::kSince[static_cast<int>(TypeRole::kQuantizeX)] == 0) {
      return nullptr;
    } else {
      return visit_type(p, [&](auto p_traits) -> QuotientFn {
        if constexpr (is_division_type(decltype(p_traits)::value))
          return &quotients<X::value, decltype(p_traits)::value>;
        return nullptr;
      });
    }
  });
}

/// Writes the output codes of elements [first, first + count) of y (type Y) from their quotients.
template <class Y>
void store_as(const QuantizeCall& c, void* y, int64_t first, int64_t count, int64_t param_index, int step,
              const double* q) {
  constexpr int kBits = Y::kBits;
  uint8_t codes[kChunk];
  if constexpr (Y::kKind == TypeKind::kMiniFloat && kBits <= 8) {
    using F = typename Y::Format;
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (has_float_zero_point(Y::value)) {
        if (c.zero_point != nullptr) {
          // The zero point is added in float32, after rounding the quotient to float32.
          const float zp = static_cast<float>(load_real_of<Y>(c.zero_point, param_index + i * step));
          codes[i] = static_cast<uint8_t>(encode<F>(static_cast<float>(q[i]) + zp, true));
        } else {
          codes[i] = static_cast<uint8_t>(encode<F>(q[i], true));
        }
      } else {
        codes[i] = static_cast<uint8_t>(encode<F>(q[i], c.saturate));
      }
    }
  } else if constexpr (is_quantized_integer(Y::value)) {
    const double range_min = integer_min(Y::value);
    const double range_max = integer_max(Y::value);
    for (int64_t i = 0; i < count; ++i) {
      double v;
      if (std::isnan(q[i])) {
        v = range_min;  // NaN has no integer: the type's minimum, whatever the zero point
      } else {
        v = std::nearbyint(q[i]);
        if (c.zero_point != nullptr) v += static_cast<double>(load_integer_of<Y>(c.zero_point, param_index + i * step));
        v = std::clamp(v, range_min, range_max);
      }
      const auto value = static_cast<int32_t>(v);
      if constexpr (kBits == 16) {
        const auto u = static_cast<uint16_t>(value);
        std::memcpy(static_cast<uint8_t*>(y) + (first + i) * 2, &u, 2);
      } else {
        codes[i] = static_cast<uint8_t>(value);
      }
    }
    if constexpr (kBits == 16) return;
  } else {
    return;  // not a QuantizeLinear output: validation never lets it through
  }
  pack_codes(codes, kBits, first, count, static_cast<uint8_t*>(y), first + count == c.plan.elements);
}

using StoreFn = void (*)(const QuantizeCall&, void*, int64_t, int64_t, int64_t, int, const double*);

StoreFn store_fn(T y) {
  return visit_type(y, [](auto traits) -> StoreFn { return &store_as<decltype(traits)>; });
}

}  // namespace

void quantize_scalar(const QuantizeCall& call, void* y, int64_t begin, int64_t end) {
  const QuotientFn compute = quotient_fn(call.x_type, call.division_type);
  const StoreFn store = store_fn(call.y_type);
  double q[kChunk];
  const auto run = [&](int64_t first, int64_t last) {
    for_each_piece(call.plan, first, last, kChunk, [&](int64_t at, int64_t count, int64_t param_index, int step) {
      compute(call, at, count, param_index, step, q);
      store(call, y, at, count, param_index, step, q);
    });
  };
  for_each_task_range(call.plan, begin, end, call.columns, run);
}

FloatRange range_scalar(const float* x, int64_t begin, int64_t end, int64_t /*elements*/) {
  FloatRange r;
  for (int64_t i = begin; i < end; ++i) {
    const float v = x[i];
    if (std::isnan(v)) {
      r.nan = true;
    } else {
      r.lo = std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    }
  }
  return r;
}

}  // namespace qdq::detail
