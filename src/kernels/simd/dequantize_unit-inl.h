// The body of every dequantize_<family>.cc: the family's chooser per Highway target, and (once) the
// exported dequantize_kernel_<family>. No include guard: it is meant to be included once per target by
// a unit that has defined QDQ_SIMD_FAMILY.
#ifndef QDQ_SIMD_FAMILY
#error "define QDQ_SIMD_FAMILY (a family of dequantize_kernels.inc) before including dequantize_unit-inl.h"
#endif

#include "kernels/simd/dequantize-inl.h"
#include "kernels/simd/families.hpp"

#define QDQ_SIMD_PASTE_(A, B) A##B
#define QDQ_SIMD_PASTE(A, B) QDQ_SIMD_PASTE_(A, B)

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
// Named per family: every family unit defines one per target, and they must not collide.
#if QDQ_SIMD_HAS_KERNELS
DequantizeKernel QDQ_SIMD_PASTE(ChooseDequantize, QDQ_SIMD_FAMILY)(const DequantizeCall& c, StoreMode stores) {
  return ChooseDequantize<QDQ_SIMD_PASTE(DequantizeFamily::k, QDQ_SIMD_FAMILY)>(c, stores);
}
#else
DequantizeKernel QDQ_SIMD_PASTE(ChooseDequantize, QDQ_SIMD_FAMILY)(const DequantizeCall&, StoreMode) { return nullptr; }
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

DequantizeKernel QDQ_SIMD_PASTE(dequantize_kernel_, QDQ_SIMD_FAMILY)(int64_t target, const DequantizeCall& call,
                                                                     StoreMode stores) {
  DequantizeKernel (*const choose)(const DequantizeCall&, StoreMode) =
      QDQ_SIMD_CHOOSE(target, QDQ_SIMD_PASTE(ChooseDequantize, QDQ_SIMD_FAMILY));
  return choose == nullptr ? nullptr : choose(call, stores);
}

}  // namespace qdq::detail::simd
#endif
