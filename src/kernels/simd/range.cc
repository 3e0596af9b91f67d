// DynamicQuantizeLinear's range pass: the min and max of float32 values with 0 included, and whether
// any is NaN, four vectors of accumulators at a time (a single one would chain every min and max on
// the last). Each lane keeps range_scalar's rule, std::min(lo, v) and std::max(hi, v): a NaN v and a
// -0 v leave the accumulator as it is, so lanes and tasks combine in any order to the same result.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/range.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/simd/simd_kernels.hpp"
#include "kernels/simd/vectors-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
namespace {

/// std::min(acc, v) lane-wise: v where v < acc, else acc (NaN v and -0 against +0 keep acc). x86's
/// min instruction is that, with v first: it returns its second operand unless the first is less.
HWY_INLINE VF MinInto(VF acc, VF v) {
#if HWY_ARCH_X86
  return hn::Min(v, acc);
#else
  return hn::IfThenElse(hn::Lt(v, acc), v, acc);
#endif
}

/// std::max(acc, v) lane-wise, as MinInto.
HWY_INLINE VF MaxInto(VF acc, VF v) {
#if HWY_ARCH_X86
  return hn::Max(v, acc);
#else
  return hn::IfThenElse(hn::Gt(v, acc), v, acc);
#endif
}

}  // namespace

FloatRange Range(const float* x, int64_t begin, int64_t end, int64_t elements) {
  const DF df;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  VF lo0 = hn::Zero(df), lo1 = lo0, lo2 = lo0, lo3 = lo0;
  VF hi0 = lo0, hi1 = lo0, hi2 = lo0, hi3 = lo0;
  auto nan = hn::Ne(lo0, lo0);  // all false
  // Each group asks for the lines below it (PrefetchBehind), into L2 too where x is large.
  constexpr uintptr_t kGroupBytes = 4 * hn::MaxLanes(DF()) * sizeof(float);
  const uint64_t x_bytes = static_cast<uint64_t>(elements) * sizeof(float);
  const LineAhead ahead = LineAheadFor(line_requests(ReadingLoop::kRange, x_bytes), x_bytes, {true, false});
  // Downwards, from end: DynamicQuantizeLinear hands out its chunks from the last one down (so that
  // its second pass finds the chunks read last in the cache), and chunks read upwards made one
  // stream restart at each chunk.
  int64_t i = end;
  for (; i - 4 * lanes >= begin; i -= 4 * lanes) {
    const float* const p = x + i - 4 * lanes;
    PrefetchBehind(reinterpret_cast<uintptr_t>(p), kGroupBytes, ahead);
    const VF v0 = hn::LoadU(df, p);
    const VF v1 = hn::LoadU(df, p + lanes);
    const VF v2 = hn::LoadU(df, p + 2 * lanes);
    const VF v3 = hn::LoadU(df, p + 3 * lanes);
    nan = hn::Or(nan, hn::Or(hn::Or(hn::IsNaN(v0), hn::IsNaN(v1)), hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
    lo0 = MinInto(lo0, v0);
    lo1 = MinInto(lo1, v1);
    lo2 = MinInto(lo2, v2);
    lo3 = MinInto(lo3, v3);
    hi0 = MaxInto(hi0, v0);
    hi1 = MaxInto(hi1, v1);
    hi2 = MaxInto(hi2, v2);
    hi3 = MaxInto(hi3, v3);
  }
  for (; i > begin; i -= lanes) {
    const size_t n = static_cast<size_t>(std::min(lanes, i - begin));
    const VF v =
        LoadPartial(df, x + i - static_cast<int64_t>(n), n);  // lanes past n are 0, which the range holds already
    nan = hn::Or(nan, hn::IsNaN(v));
    lo0 = MinInto(lo0, v);
    hi0 = MaxInto(hi0, v);
  }
  const VF lo = MinInto(MinInto(lo0, lo1), MinInto(lo2, lo3));
  const VF hi = MaxInto(MaxInto(hi0, hi1), MaxInto(hi2, hi3));
  FloatRange r;
  r.nan = !hn::AllFalse(df, nan);
  alignas(64) float lo_lanes[hn::MaxLanes(df)];
  alignas(64) float hi_lanes[hn::MaxLanes(df)];
  hn::Store(lo, df, lo_lanes);
  hn::Store(hi, df, hi_lanes);
  for (int64_t k = 0; k < lanes; ++k) {
    r.lo = std::min(r.lo, lo_lanes[k]);
    r.hi = std::max(r.hi, hi_lanes[k]);
  }
  return r;
}
#else
FloatRange Range(const float* x, int64_t begin, int64_t end, int64_t elements) {
  return range_scalar(x, begin, end, elements);
}
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

RangeKernel range_kernel_for_target(int64_t target) { return QDQ_SIMD_CHOOSE(target, Range); }

}  // namespace qdq::detail::simd
#endif
