// The body of every quantize_<family>.cc and dequantize_<family>.cc (written from family_unit.cc.in):
// the family's chooser per Highway target, and (once) the family's family_kernel<> specialisation
// (families.hpp). No include guard: it is meant to be included once per target by a unit that has
// included its direction's -inl.h and defined QDQ_SIMD_FAMILY as its family, e.g. QuantizeFamily::kInt8.
#ifndef QDQ_SIMD_FAMILY
#error "define QDQ_SIMD_FAMILY (a family of quantize_kernels.inc or dequantize_kernels.inc) first"
#endif

#include "kernels/simd/families.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
namespace {
// Internal linkage, so that every unit may name its chooser alike; the targets QDQ_SIMD_CHOOSE does
// not pick leave it unused.
[[maybe_unused]] FamilyKernel<QDQ_SIMD_FAMILY> ChooseUnitKernel(const FamilyCall<QDQ_SIMD_FAMILY>& call,
                                                                StoreMode stores) {
#if QDQ_SIMD_HAS_KERNELS
  return ChooseFamilyKernel<QDQ_SIMD_FAMILY>(call, stores);
#else
  (void)call;
  (void)stores;
  return nullptr;
#endif
}
}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

template <>
FamilyKernel<QDQ_SIMD_FAMILY> family_kernel<QDQ_SIMD_FAMILY>(int64_t target, const FamilyCall<QDQ_SIMD_FAMILY>& call,
                                                             StoreMode stores) {
  FamilyKernel<QDQ_SIMD_FAMILY> (*const choose)(const FamilyCall<QDQ_SIMD_FAMILY>&, StoreMode) =
      QDQ_SIMD_CHOOSE(target, ChooseUnitKernel);
  return choose == nullptr ? nullptr : choose(call, stores);
}

}  // namespace qdq::detail::simd
#endif
