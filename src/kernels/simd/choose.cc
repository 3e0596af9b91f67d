// The kernel-selection API of simd_kernels.hpp: a call's kernel is the one the family units offer
// (at most one family lists any type combination); none means the scalar kernel.
#include "kernels/simd/families.hpp"
#include "kernels/simd/simd_kernels.hpp"

namespace qdq::detail::simd {

QuantizeKernel quantize_kernel_for_target(int64_t target, const QuantizeCall& call, StoreMode stores) {
#define QDQ_QUANTIZE_FAMILY(FAMILY) \
  if (const QuantizeKernel kernel = family_kernel<QuantizeFamily::k##FAMILY>(target, call, stores)) return kernel;
#include "kernels/simd/quantize_kernels.inc"
#undef QDQ_QUANTIZE_FAMILY
  return nullptr;
}

DequantizeKernel dequantize_kernel_for_target(int64_t target, const DequantizeCall& call, StoreMode stores) {
#define QDQ_DEQUANTIZE_FAMILY(FAMILY) \
  if (const DequantizeKernel kernel = family_kernel<DequantizeFamily::k##FAMILY>(target, call, stores)) return kernel;
#include "kernels/simd/dequantize_kernels.inc"
#undef QDQ_DEQUANTIZE_FAMILY
  return nullptr;
}

}  // namespace qdq::detail::simd
