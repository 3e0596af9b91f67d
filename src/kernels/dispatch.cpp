// Kernel selection, done once per call: the vectorised kernel for this CPU where one covers the
// call's type combination, else the scalar reference.
#include "kernels/kernels.hpp"

#include "kernels/simd/quotient_route.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail {

QuantizeKernel select_quantize_kernel(const QuantizeCall& call, bool force_scalar) {
#if defined(QDQ_HAVE_SIMD)
  if (!force_scalar && simd::best_target() != 0) {
    if (const QuantizeKernel kernel = simd::quantize_kernel_for_target(simd::best_target(), call)) return kernel;
  }
#else
  (void)call;
  (void)force_scalar;
#endif
  return &quantize_scalar;
}

DequantizeKernel select_dequantize_kernel(const DequantizeCall& call, bool force_scalar) {
#if defined(QDQ_HAVE_SIMD)
  if (!force_scalar && simd::best_target() != 0) {
    if (const DequantizeKernel kernel = simd::dequantize_kernel_for_target(simd::best_target(), call)) return kernel;
  }
#else
  (void)call;
  (void)force_scalar;
#endif
  return &dequantize_scalar;
}

#if !defined(QDQ_HAVE_SIMD)
// Built without the SIMD kernels (QDQ_SIMD=OFF): no targets, so callers and tests fall back.
namespace simd {
const std::vector<Target>& available_targets() {
  static const std::vector<Target> none;
  return none;
}
int64_t best_target() { return 0; }
QuantizeKernel quantize_kernel_for_target(int64_t, const QuantizeCall&) { return nullptr; }
DequantizeKernel dequantize_kernel_for_target(int64_t, const DequantizeCall&) { return nullptr; }
void force_quotient_route(QuotientRoute) {}
QuotientRoute forced_quotient_route() { return QuotientRoute::kAuto; }
QuotientRoute quotient_route(int64_t) { return QuotientRoute::kDivide; }
const char* quotient_route_name(QuotientRoute) { return "division"; }
bool markstein_quotients(int64_t, float, const float*, float*, int64_t) { return false; }
}  // namespace simd
#endif

}  // namespace qdq::detail

namespace qdq {

const char* quantize_division_route() {
  return detail::simd::quotient_route_name(detail::simd::quotient_route(detail::simd::best_target()));
}

}  // namespace qdq
