// The reciprocal quotient routes, which replace division by a multiply without changing a result.
// Dividing in float32 (quotient_route.hpp chooses per target, and these need a fused multiply-add):
// Markstein's corrected reciprocal, which equals the division bit for bit; for 8-bit and narrower
// integer outputs the rounding check; for the float8 types and FLOAT4E2M1 the rounding check on the
// code. Dividing in float16 or bfloat16 (every target): the product itself, which rounds to the same
// quotient in that type (HalfProduct). Used by quantize-inl.h and by the check unit
// markstein_check.cc.
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
#if QDQ_SIMD_HAS_KERNELS
namespace {

/// The scales of a group's four vectors.
struct GroupScales {
  VF s0, s1, s2, s3;
};

// A group's divisors (SameDivisors, VectorDivisors): each of its four vectors' RN(1/scale), r0..r3,
// and Scales(), which only Markstein's route and the fallback read: read from memory, in blocks,
// only on the rare path (loaded with the reciprocals, GCC 12 kept them on the stack every group).

/// One scale and its reciprocal for all four vectors of a group.
struct SameDivisors {
  SameDivisors(VF scale, VF reciprocal) : r0(reciprocal), r1(reciprocal), r2(reciprocal), r3(reciprocal), s(scale) {}
  VF r0, r1, r2, r3;
  HWY_INLINE GroupScales Scales() const { return {s, s, s, s}; }

 private:
  VF s;
};

/// Four quotients, as the fallback returns them.
struct GroupQuotients {
  VF q0, q1, q2, q3;
};

/// The fallback of a group that a reciprocal route cannot serve: four divisions, out of line. Being
/// a call, the rare branch cannot be if-converted: GCC 12 turned an inline `if (...) x = Div(x, s)`
/// at AVX3 into divisions masked by the condition's 0/1 value, which selects lane 0 only. Vectors go
/// in and out by value, so that the loop keeps its dividends in registers (passed by reference, or
/// in a struct of references, GCC 12 stored them to the stack every group).
HWY_NOINLINE GroupQuotients DivideGroup(VF x0, VF x1, VF x2, VF x3, VF s0, VF s1, VF s2, VF s3) {
  return {hn::Div(x0, s0), hn::Div(x1, s1), hn::Div(x2, s2), hn::Div(x3, s3)};
}

/// One vector's fallback, out of line for the same reason.
HWY_NOINLINE VF DivideVector(VF x, VF scale) { return hn::Div(x, scale); }

/// The end of a reciprocal route's group, its one branch: x0..x3 become the route's q0..q3 where
/// every lane of `taken` is set, else their four divisions (DivideGroup).
template <class Divisors>
HWY_INLINE void CommitGroup(hn::Mask<DF> taken, VF q0, VF q1, VF q2, VF q3, VF& x0, VF& x1, VF& x2, VF& x3,
                            const Divisors& d) {
  if (HWY_UNLIKELY(!hn::AllTrue(DF(), taken))) {
    const GroupScales s = d.Scales();
    const GroupQuotients divided = DivideGroup(x0, x1, x2, x3, s.s0, s.s1, s.s2, s.s3);
    q0 = divided.q0;
    q1 = divided.q1;
    q2 = divided.q2;
    q3 = divided.q3;
  }
  x0 = q0;
  x1 = q1;
  x2 = q2;
  x3 = q3;
}

/// Route (Markstein, RoundingCheck, CodeRoundingCheck or HalfProduct) with each vector's own scale and reciprocal,
/// both read from the loop's Params (Scale and Reciprocal): blocks along the last axis, and segments of blocks
/// along an outer axis read in place, whose every scale MarksteinReciprocal accepted (MarksteinReciprocals).
template <class Route>
struct PerVectorReciprocals {
  static constexpr bool kChecksCodes = requires { Route::kChecksCodes; };
  template <class Params>
  HWY_INLINE VF Quotient(VF x, const Params& params, int64_t k, size_t n) const {
    return Route::QuotientWith(x, params.Scale(k, n), params.Reciprocal(k, n));
  }
  /// The divisors of the group of four vectors at run element k: the reciprocals, and the scales
  /// read where they are asked for.
  template <class Params>
  struct VectorDivisors {
    VectorDivisors(const Params& params, int64_t k) : params_(params), k_(k) {
      r0 = params.Reciprocal(k, kFull);
      r1 = params.Reciprocal(k + kLanes, kFull);
      r2 = params.Reciprocal(k + 2 * kLanes, kFull);
      r3 = params.Reciprocal(k + 3 * kLanes, kFull);
    }
    VF r0, r1, r2, r3;
    HWY_INLINE GroupScales Scales() const {
      return {params_.Scale(k_, kFull), params_.Scale(k_ + kLanes, kFull), params_.Scale(k_ + 2 * kLanes, kFull),
              params_.Scale(k_ + 3 * kLanes, kFull)};
    }

   private:
    static constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF()));
    static constexpr size_t kFull = hn::MaxLanes(DF());
    const Params& params_;
    int64_t k_;
  };
  template <class Params>
  HWY_INLINE VectorDivisors<Params> Divisors(const Params& params, int64_t k) const {
    return VectorDivisors<Params>(params, k);
  }
  template <class Params>
  HWY_INLINE void Group(VF& x0, VF& x1, VF& x2, VF& x3, const Params& params, int64_t k) const {
    Route::GroupWith(x0, x1, x2, x3, Divisors(params, k));
  }
};

/// True, with *reciprocal = RN(1/s), where the reciprocal routes apply to s: |s| in [2^-62, 2^62] (so
/// s and 1/s are normal, and the quotients Markstein's route keeps have normal dividends and remainders).
HWY_INLINE bool MarksteinReciprocal(float s, float* reciprocal) {
  const float magnitude = s < 0 ? -s : s;
  if (!(magnitude >= 0x1p-62f && magnitude <= 0x1p62f)) return false;
  *reciprocal = 1.0f / s;
  return true;
}

/// MarksteinReciprocal for scale[0, count): true, with reciprocal[k] = RN(1/scale[k]), where it applies
/// to every one of them. Reads scale[0, count) only (a caller's array, anywhere); writes whole
/// vectors: `reciprocal` has a vector of room past the count.
HWY_INLINE bool MarksteinReciprocals(const float* scale, float* reciprocal, int64_t count) {
  const DF df;
  const DU du;
  auto outside = hn::FirstN(df, 0);
  ForEachVector(count, [&](int64_t k, size_t n) QDQ_INLINE_LAMBDA {
    const VF s = LoadPartial(df, scale + k, n);
    // |s| in [2^-62, 2^62] as one unsigned compare of the magnitude's bits (NaN lies above +inf).
    const VU offset = hn::Sub(hn::BitCast(du, hn::Abs(s)), hn::Set(du, 0x20800000u));  // bits of 2^-62
    const auto in_range = hn::RebindMask(df, hn::Lt(offset, hn::Set(du, 0x5E800000u - 0x20800000u + 1)));  // 2^62
    outside = hn::Or(outside, hn::AndNot(in_range, hn::FirstN(df, n)));
    hn::StoreU(hn::Div(hn::Set(df, 1.0f), s), df, reciprocal + k);
  });
  return hn::AllFalse(df, outside);
}

/// A 16-bit division type's quotient by multiplying: x and s are values of F (float16 or bfloat16),
/// the quotient is RN_F(x / s) (the kernels round RN(x / s) in float32 to F, exact since float32 has
/// more than twice F's precision plus two bits), and for s in [2^-62, 2^62], RN_F(RN(x·RN(1/s))) is
/// that same value wherever RN_F(x / s) is a normal F number or an overflow. Why: with r = RN(1/s)
/// and q0 = RN(x·r) normal float32 numbers, q0 = (x / s)(1 + d1)(1 + d2), |d1|, |d2| <= 2^-24, so
/// |q0 − x / s| <= (2^-23 + 2^-48)·|x / s|. A rounding boundary of F (a midpoint of neighbouring F
/// values, or the overflow boundary past the largest) is m = (2c + 1)·2^k with 2c + 1 < 2^(M+2)
/// (M: F's stored mantissa bits), and x / s = (a / b)·2^j with integers a, b < 2^(M+1). Then
/// x / s − m is 0, which needs 2c + 1 to divide a and so happens only at the boundaries of F's
/// subnormals, or at least |m| / (b·(2c + 1)) > |m|·2^-(2M+3) in magnitude: for float16,
/// |m| / (2047·4095) > 1.0007·2^-23·|m|, beyond q0's error; for bfloat16, about 2^-17·|m|. So no
/// boundary lies between x / s and q0, nor on x / s, and both round alike. The ranges: float16
/// products lie in [2^-40, 2^40], always normal; bfloat16 products at or beyond float32's overflow
/// mean quotients beyond F's overflow boundary too; bfloat16's subnormals are float32's, below every
/// output's least nonzero code. Below float16's least normal 2^-14, the product may round an exact tie
/// to the other neighbour, 2^-24 away: integer outputs are the zero point either way, and no narrow
/// float output tells the two apart (HalfProductTest.Float16SubnormalQuotientsEncodeAsTheDivisionsDo
/// checks every such pair for every output). NaN and ±inf x give the division's NaN and ±inf. No fused
/// multiply-add: every target takes it.
struct HalfProduct {
  VF reciprocal;

  static HWY_INLINE VF QuotientWith(VF x, VF, VF reciprocal) { return hn::Mul(x, reciprocal); }
  template <class Divisors>
  static HWY_INLINE void GroupWith(VF& x0, VF& x1, VF& x2, VF& x3, const Divisors& d) {
    x0 = hn::Mul(x0, d.r0);
    x1 = hn::Mul(x1, d.r1);
    x2 = hn::Mul(x2, d.r2);
    x3 = hn::Mul(x3, d.r3);
  }

  HWY_INLINE VF Quotient(VF x, VF scale) const { return QuotientWith(x, scale, reciprocal); }
  HWY_INLINE void Group(VF& x0, VF& x1, VF& x2, VF& x3, VF scale) const {
    GroupWith(x0, x1, x2, x3, SameDivisors(scale, reciprocal));
  }
};

#if HWY_NATIVE_FMA
/// RN(x / s) by Markstein's theorem: with r = RN(1/s), q0 = RN(x·r), e = fma(−q0, s, x) is exact and
/// q = RN(q0 + e·r) is the correctly rounded quotient, provided nothing over- or underflows. The
/// range check keeps that so: s is in [2^-62, 2^62] (MarksteinReciprocal), and a lane is taken only
/// where |q0| is in [2^-40, 2^40] (then |x| and the remainder are normal and far from overflow) or x
/// is ±0 (q0 is then the exact ±0 of x / s). Where any other lane occurs (NaN, ±inf, huge or tiny
/// quotients) the division is taken instead: per vector in Quotient, per group of four vectors in
/// Group, so that QuantizeLoop's main loop pays one branch per group. Needs a fused multiply-add.
/// `reciprocal` serves a run with one scale; PerVectorReciprocals gives each vector its own.
struct Markstein {
  VF reciprocal;

  /// The corrected quotient of one vector, and in *taken the lanes where it applies.
  static HWY_INLINE VF Corrected(VF x, VF scale, VF reciprocal, hn::Mask<DF>* taken) {
    const DF df;
    const DU du;
    const VF q0 = hn::Mul(x, reciprocal);
    // |q0| in [2^-40, 2^40] as one unsigned compare of the magnitude's bits (NaN lies above +inf).
    const VU offset = hn::Sub(hn::BitCast(du, hn::Abs(q0)), hn::Set(du, 0x2B800000u));  // bits of 2^-40
    const auto in_range = hn::RebindMask(df, hn::Lt(offset, hn::Set(du, 0x53800000u - 0x2B800000u + 1)));  // 2^40
    *taken = hn::Or(in_range, hn::Eq(x, hn::Zero(df)));
    return hn::IfThenElse(in_range, hn::MulAdd(hn::NegMulAdd(q0, scale, x), reciprocal, q0), q0);
  }

  static HWY_INLINE VF QuotientWith(VF x, VF scale, VF reciprocal) {
    hn::Mask<DF> taken;
    const VF q = Corrected(x, scale, reciprocal, &taken);
    if (HWY_UNLIKELY(!hn::AllTrue(DF(), taken))) return DivideVector(x, scale);
    return q;
  }

  /// The quotients of four vectors in place, dividing all four where any lane is out of range.
  template <class Divisors>
  static HWY_INLINE void GroupWith(VF& x0, VF& x1, VF& x2, VF& x3, const Divisors& d) {
    hn::Mask<DF> t0, t1, t2, t3;
    const GroupScales s = d.Scales();
    const VF q0 = Corrected(x0, s.s0, d.r0, &t0);
    const VF q1 = Corrected(x1, s.s1, d.r1, &t1);
    const VF q2 = Corrected(x2, s.s2, d.r2, &t2);
    const VF q3 = Corrected(x3, s.s3, d.r3, &t3);
    CommitGroup(hn::And(hn::And(t0, t1), hn::And(t2, t3)), q0, q1, q2, q3, x0, x1, x2, x3, d);
  }

  HWY_INLINE VF Quotient(VF x, VF scale) const { return QuotientWith(x, scale, reciprocal); }
  HWY_INLINE void Group(VF& x0, VF& x1, VF& x2, VF& x3, VF scale) const {
    GroupWith(x0, x1, x2, x3, SameDivisors(scale, reciprocal));
  }
};

/// The rounding check, for outputs whose codes are the quotient's nearest integer plus a zero point
/// with at most 8 bits, so that every |x / s| >= 384 saturates: with r = RN(1/s) and s in
/// [2^-62, 2^62], q0 = RN(x·r) is within |x / s|·(2^-23 + 2^-48) of x / s, under 2^-14 + 2^-39
/// where |x / s| < 512. Where q0 is further than 2^-13 from every half-integer, no half-integer lies
/// between q0 and x / s (nor on x / s), so both have the same nearest integer and q0 can stand for
/// the quotient. Where |q0| >= 512, |x / s| > 511.99 and both saturate alike; NaN and ±inf q0 are
/// those of x / s. Only a group of four vectors with a lane within 2^-13 of a half-integer (about
/// 64·2^-12 = 1.6 % of 512-bit groups for evenly spread fractions, and every group with a tie) or a
/// NaN or ±inf quotient is divided. The quotients it returns are not x / s, only their codes are.
struct RoundingCheck {
  VF reciprocal;

  /// q − nearest integer of q, in [−0.5, 0.5] for finite q (NaN for NaN and ±inf at most targets).
  static HWY_INLINE VF Fraction(VF q) {
#if HWY_TARGET == HWY_AVX3
    return VF{_mm512_reduce_ps(q.raw, _MM_FROUND_TO_NEAREST_INT)};
#else
    return hn::Sub(q, hn::Round(q));
#endif
  }

  /// The larger of |a| and |b|, never a number smaller than one of them: a NaN where both are NaN,
  /// and where one is, a NaN (the bits' maximum) or at AVX3 the other's magnitude (vrangeps). A float
  /// max (x86's maxps returns its second operand where either is NaN) would let a NaN lane of one
  /// vector hide a near-half lane of another, whose product then stood for a quotient it rounds
  /// unlike. A NaN fraction itself (of a NaN or ±inf product) needs no check: the quotient is then
  /// NaN, or beyond ±384 and saturating, either way.
  static HWY_INLINE VF AbsMax(VF a, VF b) {
#if HWY_TARGET == HWY_AVX3
    return VF{_mm512_range_ps(a.raw, b.raw, 0x0B)};  // imm 0b1011: larger magnitude, sign cleared
#else
    // Magnitudes' bits order as the magnitudes do, with NaN above +inf.
    const DF df;
    const DU du;
    return hn::BitCast(df, hn::Max(hn::BitCast(du, hn::Abs(a)), hn::BitCast(du, hn::Abs(b))));
#endif
  }

  /// Per vector (the loop's partial rest): the division.
  static HWY_INLINE VF QuotientWith(VF x, VF scale, VF) { return hn::Div(x, scale); }

  template <class Divisors>
  static HWY_INLINE void GroupWith(VF& x0, VF& x1, VF& x2, VF& x3, const Divisors& d) {
    const DF df;
    const VF q0 = hn::Mul(x0, d.r0);
    const VF q1 = hn::Mul(x1, d.r1);
    const VF q2 = hn::Mul(x2, d.r2);
    const VF q3 = hn::Mul(x3, d.r3);
    const VF nearest = AbsMax(AbsMax(Fraction(q0), Fraction(q1)), AbsMax(Fraction(q2), Fraction(q3)));
    // Lt, not Ge's negation: where AbsMax returns a NaN, the group divides.
    CommitGroup(hn::Lt(nearest, hn::Set(df, 0.5f - 0x1p-13f)), q0, q1, q2, q3, x0, x1, x2, x3, d);
  }

  HWY_INLINE VF Quotient(VF x, VF scale) const { return QuotientWith(x, scale, reciprocal); }
  HWY_INLINE void Group(VF& x0, VF& x1, VF& x2, VF& x3, VF scale) const {
    GroupWith(x0, x1, x2, x3, SameDivisors(scale, reciprocal));
  }
};

/// The rounding check on the code, for the float8 types and FLOAT4E2M1 without a zero point, whose
/// encoders (EncodeNarrowMagnitude) round one scaled value t = |q|·2^(M-k) to the code's low part
/// (k = max(e, emin), e the exponent of q, M the mantissa bits): the code is RNE of a continuous,
/// monotone function of |q| with slope 2^(M-k), clamped where saturation clamps. With r = RN(1/s),
/// s in [2^-62, 2^62], q0 = RN(x·r) and RN(x / s) both lie within (2^-23 + 2^-24 + 2^-48)·|x / s|
/// of x / s, so their scaled values lie within 1.5·2^(M-22)·(1 + 2^-20) < 2^-18 of each other (M <= 3;
/// a binade boundary between them changes the slope, not the bound). Where q0's scaled value is
/// further than 2^-16 from every half-integer, no half-integer lies between the two and both round
/// to the same code. Quotients beyond the float32 range or below its normal range change nothing:
/// NaN q0 is exactly NaN x / s; float32 subnormals give code 0 either way; an overflow to ±inf on one
/// side only gives the same code where ±inf and finite overflow do, which is every format and mode
/// but FNUZ saturating (±inf → NaN, finite → largest value): there |q0| >= 2^127 takes the division.
/// QuantizeLoop's group loop encodes q0, checks, and divides the whole group (DivideGroup) where a
/// lane fails; the partial rest divides. About 2·2^-16 of lanes fall back: 0.2 % of 512-bit groups.
struct CodeRoundingCheck {
  static constexpr bool kChecksCodes = true;
  VF reciprocal;

  static HWY_INLINE VF QuotientWith(VF x, VF scale, VF) { return hn::Div(x, scale); }

  /// Whether four vectors' codes from q0 stand for those of x / s: every scaled value further than
  /// the margin from a half-integer (where AbsMax returns a NaN, it fails).
  static HWY_INLINE hn::Mask<DF> Keeps(VF t0, VF t1, VF t2, VF t3) {
    const VF nearest =
        RoundingCheck::AbsMax(RoundingCheck::AbsMax(RoundingCheck::Fraction(t0), RoundingCheck::Fraction(t1)),
                              RoundingCheck::AbsMax(RoundingCheck::Fraction(t2), RoundingCheck::Fraction(t3)));
    return hn::Lt(nearest, hn::Set(DF(), 0.5f - 0x1p-16f));
  }

  HWY_INLINE VF Quotient(VF x, VF scale) const { return QuotientWith(x, scale, reciprocal); }
  HWY_INLINE SameDivisors Divisors(VF scale) const { return SameDivisors(scale, reciprocal); }
};

#endif  // HWY_NATIVE_FMA

}  // namespace
#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_MARKSTEIN_INL_H_
