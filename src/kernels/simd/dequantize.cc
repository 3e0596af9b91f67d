// Vectorised DequantizeLinear kernels, compiled once per Highway target. Each equals
// dequantize_scalar bit for bit: x − zero point exactly (int32; |difference| < 2^17 so its float32
// conversion is exact) or in float32 (FLOAT4E2M1), one float32 product with the scale, one rounding
// to the output type with the same encoder as the scalar kernel.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/dequantize.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <algorithm>

#include "hwy/highway.h"
#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "types/integer_types.hpp"
#include "kernels/simd/common-inl.h"
#include "kernels/simd/simd_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
namespace {

using T = DataType;

constexpr int InBits(T x) { return quantized_bits(x); }
constexpr bool IsIntegerIn(T x) { return is_quantized_integer(x); }
constexpr bool IsSignedIn(T x) { return is_signed_quantized_integer(x); }

/// Scales [index, index + n) as float32 (exact for every scale type covered).
HWY_INLINE VF LoadScale(const DequantizeCall& c, int64_t index, size_t n) {
  switch (c.scale_type) {
    case T::kFloat16: return LoadFloat<T::kFloat16>(c.scale, index, n);
    case T::kBFloat16: return LoadFloat<T::kBFloat16>(c.scale, index, n);
    case T::kFloat8E8M0: return LoadE8M0(c.scale, index, n);
    default: return LoadFloat<T::kFloat>(c.scale, index, n);
  }
}

template <T X>
HWY_INLINE VF DecodeX(VU codes) {
  if constexpr (X == T::kFloat8E4M3FN) return DecodeF<Float8E4M3FNFormat>(codes);
  if constexpr (X == T::kFloat8E4M3FNUZ) return DecodeF<Float8E4M3FNUZFormat>(codes);
  if constexpr (X == T::kFloat8E5M2) return DecodeF<Float8E5M2Format>(codes);
  if constexpr (X == T::kFloat8E5M2FNUZ) return DecodeF<Float8E5M2FNUZFormat>(codes);
  return DecodeF<Float4E2M1Format>(codes);
}

template <T Y>
HWY_INLINE void StoreY(VF v, void* y, int64_t index, size_t n) {
  const DF df;
  if constexpr (Y == T::kFloat16) {
    StoreHalf<Float16Format>(v, static_cast<uint16_t*>(y) + index, n);
  } else if constexpr (Y == T::kBFloat16) {
    StoreHalf<BFloat16Format>(v, static_cast<uint16_t*>(y) + index, n);
  } else {
    StorePartial(df, v, static_cast<float*>(y) + index, n);
  }
}

/// Elements [first, first + count) of one segment; x element first + i is read from src at
/// src_index + i (src is x itself, or a buffer of unpacked codes for 2/4-bit x).
template <T X, T Y>
HWY_INLINE void DequantizeSegment(const DequantizeCall& c, const void* src, int64_t src_index, int64_t first, int64_t count,
                                  int64_t param, int step, void* y) {
  const DF df;
  const DI di;
  const size_t lanes = hn::Lanes(df);
  constexpr int kBits = InBits(X);
  const bool has_zp = c.zero_point != nullptr;
  const VF scale0 = hn::Set(df, static_cast<float>(load_real(c.scale, c.scale_type, param)));
  VI zp0 = hn::Zero(di);
  VF zpf0 = hn::Zero(df);
  if (has_zp && step == 0) {
    if constexpr (IsIntegerIn(X)) zp0 = hn::Set(di, static_cast<int32_t>(load_integer(c.zero_point, c.zero_point_type, param)));
    if constexpr (X == T::kFloat4E2M1) zpf0 = hn::Set(df, static_cast<float>(load_real(c.zero_point, T::kFloat4E2M1, param)));
  }
  int64_t i = 0;
  if (step == 0) {
    // One scale and zero point for the whole run: four whole vectors per iteration, no partial
    // vectors and no per-iteration branches.
    const int64_t L = static_cast<int64_t>(lanes);
    const auto value = [&](int64_t k) -> VF {
      if constexpr (IsIntegerIn(X)) {
        return hn::ConvertTo(df, hn::Sub(LoadInt<kBits, IsSignedIn(X)>(src, src_index + k, lanes), zp0));
      } else {
        const VF d = DecodeX<X>(LoadCodes(static_cast<const uint8_t*>(src) + src_index + k, lanes));
        if constexpr (X == T::kFloat4E2M1) return has_zp ? hn::Sub(d, zpf0) : d;
        return d;
      }
    };
    for (; i + 4 * L <= count; i += 4 * L) {
      const VF d0 = value(i);
      const VF d1 = value(i + L);
      const VF d2 = value(i + 2 * L);
      const VF d3 = value(i + 3 * L);
      StoreY<Y>(hn::Mul(d0, scale0), y, first + i, lanes);
      StoreY<Y>(hn::Mul(d1, scale0), y, first + i + L, lanes);
      StoreY<Y>(hn::Mul(d2, scale0), y, first + i + 2 * L, lanes);
      StoreY<Y>(hn::Mul(d3, scale0), y, first + i + 3 * L, lanes);
    }
  }
  for (; i < count; i += static_cast<int64_t>(lanes)) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(lanes), count - i));
    VF d;
    if constexpr (IsIntegerIn(X)) {
      VI v = LoadInt<kBits, IsSignedIn(X)>(src, src_index + i, n);
      if (has_zp) {
        VI zp = zp0;
        if (step != 0) {
          if constexpr (kBits >= 8) {
            zp = LoadInt<kBits, IsSignedIn(X)>(c.zero_point, param + i, n);
          } else {
            uint8_t codes[HWY_MAX_BYTES / 4] = {};
            unpack_codes(static_cast<const uint8_t*>(c.zero_point), kBits, param + i, static_cast<int64_t>(n), codes);
            zp = LoadInt<kBits, IsSignedIn(X)>(codes, 0, n);
          }
        }
        v = hn::Sub(v, zp);
      }
      d = hn::ConvertTo(df, v);
    } else {
      d = DecodeX<X>(LoadCodes(static_cast<const uint8_t*>(src) + src_index + i, n));
      if constexpr (X == T::kFloat4E2M1) {
        if (has_zp) {
          VF zpf = zpf0;
          if (step != 0) {
            uint8_t codes[HWY_MAX_BYTES / 4] = {};
            unpack_codes(static_cast<const uint8_t*>(c.zero_point), 4, param + i, static_cast<int64_t>(n), codes);
            zpf = DecodeF<Float4E2M1Format>(LoadCodes(codes, n));
          }
          d = hn::Sub(d, zpf);
        }
      }
    }
    const VF scale = step == 0 ? scale0 : LoadScale(c, param + i, n);
    StoreY<Y>(hn::Mul(d, scale), y, first + i, n);
  }
}

template <T X, T Y>
void DequantizeKernelT(const DequantizeCall& c, void* y, int64_t begin, int64_t end) {
  constexpr int kBits = InBits(X);
  HWY_ALIGN uint8_t codes[kBits < 8 ? kChunk : 1];
  for (int64_t chunk = begin; chunk < end; chunk += kChunk) {
    const int64_t chunk_end = std::min(end, chunk + kChunk);
    if constexpr (kBits < 8) {
      // `chunk` is a multiple of 4: the chunk starts on a byte boundary.
      const int per_byte = 8 / kBits;
      const int64_t count = chunk_end - chunk;
      const int64_t whole = count / per_byte;
      const auto* packed = static_cast<const uint8_t*>(c.x);
      UnpackWholeBytes(packed + chunk / per_byte, kBits, whole, codes);
      if (whole * per_byte < count) {
        unpack_codes(packed, kBits, chunk + whole * per_byte, count - whole * per_byte, codes + whole * per_byte);
      }
    }
    for (int64_t position = chunk; position < chunk_end;) {
      const Segment s = segment_at(c.plan, position, chunk_end);
      if constexpr (kBits < 8) {
        DequantizeSegment<X, Y>(c, codes, position - chunk, position, s.count, s.param_index, s.param_step, y);
      } else {
        DequantizeSegment<X, Y>(c, c.x, position, position, s.count, s.param_index, s.param_step, y);
      }
      position += s.count;
    }
  }
}

template <T X>
DequantizeKernel ChooseForY(T y) {
  switch (y) {
    case T::kFloat: return &DequantizeKernelT<X, T::kFloat>;
    case T::kFloat16: return &DequantizeKernelT<X, T::kFloat16>;
    case T::kBFloat16: return &DequantizeKernelT<X, T::kBFloat16>;
    default: return nullptr;
  }
}

}  // namespace

DequantizeKernel ChooseDequantize(const DequantizeCall& c) {
  if (c.scale_type != T::kFloat && c.scale_type != T::kFloat16 && c.scale_type != T::kBFloat16 &&
      c.scale_type != T::kFloat8E8M0) {
    return nullptr;
  }
  const bool zero_point_used = IsIntegerIn(c.x_type) || c.x_type == T::kFloat4E2M1;
  if (c.zero_point != nullptr && zero_point_used && c.zero_point_type != c.x_type) return nullptr;
  switch (c.x_type) {
    case T::kUint8: return ChooseForY<T::kUint8>(c.y_type);
    case T::kInt8: return ChooseForY<T::kInt8>(c.y_type);
    case T::kUint16: return ChooseForY<T::kUint16>(c.y_type);
    case T::kInt16: return ChooseForY<T::kInt16>(c.y_type);
    case T::kUint4: return ChooseForY<T::kUint4>(c.y_type);
    case T::kInt4: return ChooseForY<T::kInt4>(c.y_type);
    case T::kUint2: return ChooseForY<T::kUint2>(c.y_type);
    case T::kInt2: return ChooseForY<T::kInt2>(c.y_type);
    case T::kFloat8E4M3FN: return ChooseForY<T::kFloat8E4M3FN>(c.y_type);
    case T::kFloat8E4M3FNUZ: return ChooseForY<T::kFloat8E4M3FNUZ>(c.y_type);
    case T::kFloat8E5M2: return ChooseForY<T::kFloat8E5M2>(c.y_type);
    case T::kFloat8E5M2FNUZ: return ChooseForY<T::kFloat8E5M2FNUZ>(c.y_type);
    case T::kFloat4E2M1: return ChooseForY<T::kFloat4E2M1>(c.y_type);
    default: return nullptr;
  }
}

#else
DequantizeKernel ChooseDequantize(const DequantizeCall&) { return nullptr; }
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

DequantizeKernel dequantize_kernel_for_target(int64_t target, const DequantizeCall& call) {
  DequantizeKernel (*const choose)(const DequantizeCall&) = QDQ_SIMD_CHOOSE(target, ChooseDequantize);
  return choose == nullptr ? nullptr : choose(call);
}

}  // namespace qdq::detail::simd
#endif
