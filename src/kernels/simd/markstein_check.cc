// markstein_quotients (quotient_route.hpp): the Markstein route's quotients of a whole array, per
// Highway target, so that the tests can compare them with IEEE division for sampled x and scales.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/markstein_check.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/simd/markstein-inl.h"
#include "kernels/simd/quotient_route.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS && HWY_NATIVE_FMA
bool MarksteinQuotients(float s, const float* x, float* q, int64_t n) {
  float reciprocal;
  if (!MarksteinReciprocal(s, &reciprocal)) return false;
  const DF df;
  const Markstein route{hn::Set(df, reciprocal)};
  const VF scale = hn::Set(df, s);
  ForEachVector(n, [&](int64_t k, size_t lanes) {
    StorePartial(df, route.Quotient(LoadPartial(df, x + k, lanes), scale), q + k, lanes);
  });
  return true;
}
#else
bool MarksteinQuotients(float, const float*, float*, int64_t) { return false; }
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

bool markstein_quotients(int64_t target, float s, const float* x, float* q, int64_t n) {
  bool (*const quotients)(float, const float*, float*, int64_t) = QDQ_SIMD_CHOOSE(target, MarksteinQuotients);
  return quotients != nullptr && quotients(s, x, q, n);
}

}  // namespace qdq::detail::simd
#endif
