// markstein_quotients (quotient_route.hpp): the Markstein route's quotients of a whole array, per
// Highway target, a vector or a group of four at a time, so that the tests can compare them with IEEE
// division for sampled x and scales.
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
bool MarksteinQuotients(float s, const float* x, float* q, int64_t n, bool grouped) {
  float reciprocal;
  if (!MarksteinReciprocal(s, &reciprocal)) return false;
  const DF df;
  const Markstein route{hn::Set(df, reciprocal)};
  const VF scale = hn::Set(df, s);
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; grouped && i + 4 * lanes <= n; i += 4 * lanes) {
    VF v0 = hn::LoadU(df, x + i), v1 = hn::LoadU(df, x + i + lanes);
    VF v2 = hn::LoadU(df, x + i + 2 * lanes), v3 = hn::LoadU(df, x + i + 3 * lanes);
    route.Group(v0, v1, v2, v3, scale);
    hn::StoreU(v0, df, q + i);
    hn::StoreU(v1, df, q + i + lanes);
    hn::StoreU(v2, df, q + i + 2 * lanes);
    hn::StoreU(v3, df, q + i + 3 * lanes);
  }
  ForEachVector(n - i, [&](int64_t k, size_t count) {
    StorePartial(df, route.Quotient(LoadPartial(df, x + i + k, count), scale), q + i + k, count);
  });
  return true;
}
#else
bool MarksteinQuotients(float, const float*, float*, int64_t, bool) { return false; }
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

bool markstein_quotients(int64_t target, float s, const float* x, float* q, int64_t n, bool grouped) {
  bool (*const quotients)(float, const float*, float*, int64_t, bool) = QDQ_SIMD_CHOOSE(target, MarksteinQuotients);
  return quotients != nullptr && quotients(s, x, q, n, grouped);
}

}  // namespace qdq::detail::simd
#endif
