// Kernel selection, done once per call: the vectorised kernel for this CPU where one covers the
// call's type combination, else the scalar reference.
#include "kernels/kernels.hpp"

#include <cstring>

#include "kernels/simd/simd_kernels.hpp"
#include "kernels/store_policy.hpp"

namespace qdq::detail {

QuantizeKernel select_quantize_kernel(const QuantizeCall& call, bool force_scalar) {
#if defined(QDQ_HAVE_SIMD)
  if (!force_scalar && simd::best_target() != 0) {
    if (const QuantizeKernel kernel =
            simd::quantize_kernel_for_target(simd::best_target(), call, choose_store_mode(call.y_bytes)))
      return kernel;
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
    if (const DequantizeKernel kernel =
            simd::dequantize_kernel_for_target(simd::best_target(), call, choose_store_mode(call.y_bytes)))
      return kernel;
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
QuantizeKernel quantize_kernel_for_target(int64_t, const QuantizeCall&, StoreMode) { return nullptr; }
DequantizeKernel dequantize_kernel_for_target(int64_t, const DequantizeCall&, StoreMode) { return nullptr; }
void fill_lines(int64_t, uint8_t* dst, size_t bytes, StoreMode) { std::memset(dst, 0x5A, bytes); }
}  // namespace simd
#endif

}  // namespace qdq::detail
