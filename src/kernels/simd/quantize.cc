// Vectorised QuantizeLinear kernels, compiled once per Highway target. Each kernel equals
// quantize_scalar bit for bit: the same two stages (the quotient in the division type P, then the
// output type's rule), evaluated lane-wise with exact vector forms of the scalar operations.
//
// Division: a true IEEE float32 division per lane (the same correctly rounded quotient as the
// scalar kernel). Measured on the reference machine (Zen 3, AVX2) the division loop runs at ~80% of
// a plain multiply loop in L1 and well above memory bandwidth, so no reciprocal shortcut is taken.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/quantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>

#include "hwy/highway.h"
#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "kernels/simd/common-inl.h"
#include "kernels/simd/simd_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
namespace {

using T = DataType;

constexpr int OutBits(T y) {
  switch (y) {
    case T::kUint16:
    case T::kInt16: return 16;
    case T::kUint4:
    case T::kInt4:
    case T::kFloat4E2M1: return 4;
    case T::kUint2:
    case T::kInt2: return 2;
    default: return 8;
  }
}

constexpr bool IsIntegerOut(T y) {
  return y == T::kUint8 || y == T::kInt8 || y == T::kUint16 || y == T::kInt16 || y == T::kUint4 || y == T::kInt4 ||
         y == T::kUint2 || y == T::kInt2;
}

constexpr bool IsSignedOut(T y) { return y == T::kInt8 || y == T::kInt16 || y == T::kInt4 || y == T::kInt2; }

constexpr int32_t OutMin(T y) {
  switch (y) {
    case T::kInt8: return -128;
    case T::kInt16: return -32768;
    case T::kInt4: return -8;
    case T::kInt2: return -2;
    default: return 0;
  }
}

constexpr int32_t OutMax(T y) {
  switch (y) {
    case T::kUint8: return 255;
    case T::kInt8: return 127;
    case T::kUint16: return 65535;
    case T::kInt16: return 32767;
    case T::kUint4: return 15;
    case T::kInt4: return 7;
    case T::kUint2: return 3;
    case T::kInt2: return 1;
    default: return 0;
  }
}

/// The scale at `index`, rounded once to the division type P (exact as float).
template <T P>
float ScalarScale(const QuantizeCall& c, int64_t index) {
  const double s = load_real(c.scale, c.scale_type, index);
  if constexpr (P == T::kFloat16) return round_to<Float16Format>(s);
  if constexpr (P == T::kBFloat16) return round_to<BFloat16Format>(s);
  return static_cast<float>(s);
}

template <T P>
HWY_INLINE VF RoundToP(VF v) {
  if constexpr (P == T::kFloat16) return RoundToF<Float16Format>(v);
  if constexpr (P == T::kBFloat16) return RoundToF<BFloat16Format>(v);
  return v;
}

/// Scales [index, index + n) rounded to P.
template <T P>
HWY_INLINE VF LoadScale(const QuantizeCall& c, int64_t index, size_t n) {
  switch (c.scale_type) {
    case T::kFloat16:
      return P == T::kFloat16 ? LoadFloat<T::kFloat16>(c.scale, index, n) : RoundToP<P>(LoadFloat<T::kFloat16>(c.scale, index, n));
    case T::kBFloat16:
      return P == T::kBFloat16 ? LoadFloat<T::kBFloat16>(c.scale, index, n) : RoundToP<P>(LoadFloat<T::kBFloat16>(c.scale, index, n));
    default:
      return RoundToP<P>(LoadFloat<T::kFloat>(c.scale, index, n));
  }
}

/// Integer zero points [index, index + n) of an integer output type Y as int32.
template <T Y>
HWY_INLINE VI LoadZeroPoint(const QuantizeCall& c, int64_t index, size_t n) {
  constexpr int kBits = OutBits(Y);
  if constexpr (kBits >= 8) {
    return LoadInt<kBits, IsSignedOut(Y)>(c.zero_point, index, n);
  } else {
    uint8_t codes[HWY_MAX_BYTES / 4] = {};
    unpack_codes(static_cast<const uint8_t*>(c.zero_point), kBits, index, static_cast<int64_t>(n), codes);
    return LoadInt<kBits, IsSignedOut(Y)>(codes, 0, n);
  }
}

/// The output rule of an integer type: round half to even, add the zero point, saturate; NaN → min.
template <T Y>
HWY_INLINE VI IntegerCodes(VF q, VI zero_point) {
  const DF df;
  const DI di;
  // Clamping to ±2^24 first keeps the conversion in range and changes no result: every zero point
  // is below 2^16 in magnitude, so such quotients saturate either way.
  const VF clamped = hn::Min(hn::Max(q, hn::Set(df, -16777216.0f)), hn::Set(df, 16777216.0f));
  VI v = hn::Add(hn::NearestInt(clamped), zero_point);
  // 16-bit outputs saturate in DemoteTo; 8-bit ones are clamped here because Highway 1.0.3's
  // int32 → uint8 DemoteTo on x86 goes through an unsigned 16-bit pack and maps 32768..65535 to 0.
  if constexpr (OutBits(Y) <= 8) {
    v = hn::Min(hn::Max(v, hn::Set(di, OutMin(Y))), hn::Set(di, OutMax(Y)));
  }
  return hn::IfThenElse(hn::RebindMask(di, hn::IsNaN(q)), hn::Set(di, OutMin(Y)), v);
}

template <T Y>
HWY_INLINE VU FloatCodes(VF q, bool saturate) {
  if constexpr (Y == T::kFloat8E4M3FN) return EncodeF<Float8E4M3FNFormat>(q, saturate);
  if constexpr (Y == T::kFloat8E4M3FNUZ) return EncodeF<Float8E4M3FNUZFormat>(q, saturate);
  if constexpr (Y == T::kFloat8E5M2) return EncodeF<Float8E5M2Format>(q, saturate);
  if constexpr (Y == T::kFloat8E5M2FNUZ) return EncodeF<Float8E5M2FNUZFormat>(q, saturate);
  return EncodeF<Float4E2M1Format>(q, true);
}

/// Writes n output values. Packed outputs go to a code buffer (one code per byte).
template <T Y>
HWY_INLINE void StoreOut(VI v, void* out, int64_t index, size_t n) {
  constexpr int kBits = OutBits(Y);
  const DI di;
  if constexpr (kBits == 16) {
    StoreInt16<IsSignedOut(Y)>(v, out, index, n);
  } else if constexpr (kBits == 8) {
    StoreInt8<IsSignedOut(Y) && IsIntegerOut(Y)>(v, out, index, n);
  } else {
    StoreInt8<false>(hn::And(v, hn::Set(di, (1 << kBits) - 1)), out, index, n);
  }
}

/// Elements [first, first + count) of one segment (its parameters start at `param`, step 0 or 1);
/// output element first + i goes to out[out_index + i].
template <T X, T P, T Y>
HWY_INLINE void QuantizeSegment(const QuantizeCall& c, int64_t first, int64_t count, int64_t param, int step, void* out,
                                int64_t out_index) {
  const DF df;
  const DI di;
  const size_t lanes = hn::Lanes(df);
  const bool has_zp = c.zero_point != nullptr;
  const VF scale0 = hn::Set(df, ScalarScale<P>(c, param));
  VI zp0 = hn::Zero(di);
  VF zpf0 = hn::Zero(df);
  if (has_zp && step == 0) {
    if constexpr (IsIntegerOut(Y)) zp0 = hn::Set(di, static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, param)));
    if constexpr (Y == T::kFloat4E2M1) zpf0 = hn::Set(df, static_cast<float>(load_real(c.zero_point, T::kFloat4E2M1, param)));
  }
  for (int64_t i = 0; i < count; i += static_cast<int64_t>(lanes)) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(lanes), count - i));
    const VF scale = step == 0 ? scale0 : LoadScale<P>(c, param + i, n);
    const VF q = RoundToP<P>(hn::Div(LoadFloat<X>(c.x, first + i, n), scale));
    if constexpr (IsIntegerOut(Y)) {
      const VI zp = (step == 0 || !has_zp) ? zp0 : LoadZeroPoint<Y>(c, param + i, n);
      StoreOut<Y>(IntegerCodes<Y>(q, zp), out, out_index + i, n);
    } else if constexpr (Y == T::kFloat4E2M1) {
      VF zpf = zpf0;
      if (step != 0 && has_zp) {
        uint8_t codes[HWY_MAX_BYTES / 4] = {};
        unpack_codes(static_cast<const uint8_t*>(c.zero_point), 4, param + i, static_cast<int64_t>(n), codes);
        zpf = DecodeF<Float4E2M1Format>(LoadCodes(codes, n));
      }
      // The zero point is added in float32 to the quotient (already a float32 value).
      const VF shifted = has_zp ? hn::Add(q, zpf) : q;
      StoreOut<Y>(hn::BitCast(di, FloatCodes<Y>(shifted, true)), out, out_index + i, n);
    } else {
      StoreOut<Y>(hn::BitCast(di, FloatCodes<Y>(q, c.saturate)), out, out_index + i, n);
    }
  }
}

template <T X, T P, T Y>
void QuantizeKernelT(const QuantizeCall& c, void* y, int64_t begin, int64_t end) {
  constexpr int kBits = OutBits(Y);
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  for (int64_t chunk = begin; chunk < end; chunk += kChunk) {
    const int64_t chunk_end = std::min(end, chunk + kChunk);
    for (int64_t position = chunk; position < chunk_end;) {
      const Segment s = segment_at(c.plan, position, chunk_end);
      if constexpr (kBits < 8) {
        QuantizeSegment<X, P, Y>(c, position, s.count, s.param_index, s.param_step, codes, position - chunk);
      } else {
        QuantizeSegment<X, P, Y>(c, position, s.count, s.param_index, s.param_step, y, position);
      }
      position += s.count;
    }
    if constexpr (kBits < 8) {
      // `chunk` is a multiple of 4, so the chunk starts on a byte boundary.
      const int per_byte = 8 / kBits;
      const int64_t count = chunk_end - chunk;
      const int64_t whole = count / per_byte;
      uint8_t* packed = static_cast<uint8_t*>(y);
      PackWholeBytes(codes, kBits, whole, packed + chunk / per_byte);
      if (whole * per_byte < count) {
        pack_codes(codes + whole * per_byte, kBits, chunk + whole * per_byte, count - whole * per_byte, packed,
                   chunk_end == c.plan.elements);
      }
    }
  }
}

template <T X, T P>
QuantizeKernel ChooseForY(T y) {
  switch (y) {
    case T::kUint8: return &QuantizeKernelT<X, P, T::kUint8>;
    case T::kInt8: return &QuantizeKernelT<X, P, T::kInt8>;
    case T::kUint16: return &QuantizeKernelT<X, P, T::kUint16>;
    case T::kInt16: return &QuantizeKernelT<X, P, T::kInt16>;
    case T::kUint4: return &QuantizeKernelT<X, P, T::kUint4>;
    case T::kInt4: return &QuantizeKernelT<X, P, T::kInt4>;
    case T::kUint2: return &QuantizeKernelT<X, P, T::kUint2>;
    case T::kInt2: return &QuantizeKernelT<X, P, T::kInt2>;
    case T::kFloat8E4M3FN: return &QuantizeKernelT<X, P, T::kFloat8E4M3FN>;
    case T::kFloat8E4M3FNUZ: return &QuantizeKernelT<X, P, T::kFloat8E4M3FNUZ>;
    case T::kFloat8E5M2: return &QuantizeKernelT<X, P, T::kFloat8E5M2>;
    case T::kFloat8E5M2FNUZ: return &QuantizeKernelT<X, P, T::kFloat8E5M2FNUZ>;
    case T::kFloat4E2M1: return &QuantizeKernelT<X, P, T::kFloat4E2M1>;
    default: return nullptr;
  }
}

}  // namespace

QuantizeKernel ChooseQuantize(const QuantizeCall& c) {
  if (c.scale_type != T::kFloat && c.scale_type != T::kFloat16 && c.scale_type != T::kBFloat16) return nullptr;
  // A zero point must be of the output type (float8 zero points only select the type).
  if (c.zero_point != nullptr && IsIntegerOut(c.y_type) && c.zero_point_type != c.y_type) return nullptr;
  if (c.zero_point != nullptr && c.y_type == T::kFloat4E2M1 && c.zero_point_type != T::kFloat4E2M1) return nullptr;
  switch (c.x_type) {
    case T::kFloat:
      if (c.division_type == T::kFloat) return ChooseForY<T::kFloat, T::kFloat>(c.y_type);
      return nullptr;
    case T::kFloat16:
      if (c.division_type == T::kFloat) return ChooseForY<T::kFloat16, T::kFloat>(c.y_type);
      if (c.division_type == T::kFloat16) return ChooseForY<T::kFloat16, T::kFloat16>(c.y_type);
      return nullptr;
    case T::kBFloat16:
      if (c.division_type == T::kFloat) return ChooseForY<T::kBFloat16, T::kFloat>(c.y_type);
      if (c.division_type == T::kBFloat16) return ChooseForY<T::kBFloat16, T::kBFloat16>(c.y_type);
      return nullptr;
    default: return nullptr;
  }
}

#else
QuantizeKernel ChooseQuantize(const QuantizeCall&) { return nullptr; }
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

QuantizeKernel quantize_kernel_for_target(int64_t target, const QuantizeCall& call) {
  QuantizeKernel (*const choose)(const QuantizeCall&) = QDQ_SIMD_CHOOSE(target, ChooseQuantize);
  return choose == nullptr ? nullptr : choose(call);
}

}  // namespace qdq::detail::simd
#endif
