// The body of every quantize_<family>.cc: the family's chooser per Highway target, and (once) the
// exported quantize_kernel_<family>. No include guard: it is meant to be included once per target by
// a unit that has defined QDQ_SIMD_FAMILY.
#ifndef QDQ_SIMD_FAMILY
#error "define QDQ_SIMD_FAMILY (a family of quantize_kernels.inc) before including quantize_unit-inl.h"
#endif

#include "kernels/simd/families.hpp"
#include "kernels/simd/quantize-inl.h"

#define QDQ_SIMD_PASTE_(A, B) A##B
#define QDQ_SIMD_PASTE(A, B) QDQ_SIMD_PASTE_(A, B)

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
// Named per family: every family unit defines one per target, and they must not collide.
#if QDQ_SIMD_HAS_KERNELS
QuantizeKernel QDQ_SIMD_PASTE(ChooseQuantize, QDQ_SIMD_FAMILY)(const QuantizeCall& c, StoreMode stores) {
  return ChooseQuantize<QDQ_SIMD_PASTE(QuantizeFamily::k, QDQ_SIMD_FAMILY)>(c, stores);
}
#else
QuantizeKernel QDQ_SIMD_PASTE(ChooseQuantize, QDQ_SIMD_FAMILY)(const QuantizeCall&, StoreMode) { return nullptr; }
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

QuantizeKernel QDQ_SIMD_PASTE(quantize_kernel_, QDQ_SIMD_FAMILY)(int64_t target, const QuantizeCall& call,
                                                                 StoreMode stores) {
  QuantizeKernel (*const choose)(const QuantizeCall&, StoreMode) =
      QDQ_SIMD_CHOOSE(target, QDQ_SIMD_PASTE(ChooseQuantize, QDQ_SIMD_FAMILY));
  return choose == nullptr ? nullptr : choose(call, stores);
}

}  // namespace qdq::detail::simd
#endif
