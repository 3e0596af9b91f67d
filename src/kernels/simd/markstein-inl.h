// Markstein's corrected reciprocal, the quotient route that equals float32 division bit for bit at
// multiply speed (quotient_route.hpp chooses it per target). Used by quantize-inl.h and by the check
// unit markstein_check.cc.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_MARKSTEIN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_MARKSTEIN_INL_H_
#undef QDQ_SIMD_MARKSTEIN_INL_H_
#else
#define QDQ_SIMD_MARKSTEIN_INL_H_
#endif

#include "hwy/highway.h"
#include "kernels/simd/vectors-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS && HWY_NATIVE_FMA
namespace {

/// RN(x / s) by Markstein's theorem: with r = RN(1/s), q0 = RN(x·r), e = fma(−q0, s, x) is exact and
/// q = RN(q0 + e·r) is the correctly rounded quotient, provided nothing over- or underflows. The
/// range check keeps that so: s is in [2^-62, 2^62] (MarksteinReciprocal), and a lane is taken only
/// where |q0| is in [2^-40, 2^40] (then |x| and the remainder are normal and far from overflow) or x
/// is ±0 (q0 is then the exact ±0 of x / s). A vector with any other lane (NaN, ±inf, huge or tiny
/// quotients) is divided instead. Needs a fused multiply-add (HWY_NATIVE_FMA).
struct Markstein {
  VF reciprocal;
  HWY_INLINE VF Quotient(VF x, VF scale) const {
    const DF df;
    const VF q0 = hn::Mul(x, reciprocal);
    const VF q = hn::MulAdd(hn::NegMulAdd(q0, scale, x), reciprocal, q0);
    const VF magnitude = hn::Abs(q0);
    const auto in_range = hn::And(hn::Ge(magnitude, hn::Set(df, 0x1p-40f)), hn::Le(magnitude, hn::Set(df, 0x1p40f)));
    if (HWY_UNLIKELY(!hn::AllTrue(df, hn::Or(in_range, hn::Eq(x, hn::Zero(df)))))) return hn::Div(x, scale);
    return hn::IfThenElse(in_range, q, q0);
  }
};

/// True, with *reciprocal = RN(1/s), where the Markstein route applies to s: |s| in [2^-62, 2^62]
/// (so s and 1/s are normal, and the quotients it keeps have normal dividends and remainders).
HWY_INLINE bool MarksteinReciprocal(float s, float* reciprocal) {
  const float magnitude = s < 0 ? -s : s;
  if (!(magnitude >= 0x1p-62f && magnitude <= 0x1p62f)) return false;
  *reciprocal = 1.0f / s;
  return true;
}

}  // namespace
#endif  // QDQ_SIMD_HAS_KERNELS && HWY_NATIVE_FMA
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_MARKSTEIN_INL_H_
