// The families of vectorised kernels (quantize_kernels.inc, dequantize_kernels.inc): each is one
// translation unit, compiled once per Highway target, that exports the kernel it offers for a call.
// Plain C++: no SIMD types.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace qdq::detail::simd {

enum class QuantizeFamily {
#define QDQ_QUANTIZE_FAMILY(FAMILY) k##FAMILY,
#include "kernels/simd/quantize_kernels.inc"
#undef QDQ_QUANTIZE_FAMILY
};

enum class DequantizeFamily {
#define QDQ_DEQUANTIZE_FAMILY(FAMILY) k##FAMILY,
#include "kernels/simd/dequantize_kernels.inc"
#undef QDQ_DEQUANTIZE_FAMILY
};

/// The call and kernel types of a family's direction (FamilyCall<QuantizeFamily::kInt8> is QuantizeCall).
template <class Family>
struct FamilyDirection;
template <>
struct FamilyDirection<QuantizeFamily> {
  using Call = QuantizeCall;
  using Kernel = QuantizeKernel;
};
template <>
struct FamilyDirection<DequantizeFamily> {
  using Call = DequantizeCall;
  using Kernel = DequantizeKernel;
};
template <auto kFamily>
using FamilyCall = typename FamilyDirection<decltype(kFamily)>::Call;
template <auto kFamily>
using FamilyKernel = typename FamilyDirection<decltype(kFamily)>::Kernel;

/// The kernel of family kFamily's unit for `target`, this call and these stores, or nullptr where the family lists
/// none for the call's types (or the target is not compiled). Each family's unit defines its
/// specialisation (family_unit-inl.h). No allocation; thread-safe.
template <auto kFamily>
FamilyKernel<kFamily> family_kernel(int64_t target, const FamilyCall<kFamily>& call, StoreMode stores);
#define QDQ_QUANTIZE_FAMILY(FAMILY) \
  template <>                       \
  QuantizeKernel family_kernel<QuantizeFamily::k##FAMILY>(int64_t target, const QuantizeCall& call, StoreMode stores);
#include "kernels/simd/quantize_kernels.inc"
#undef QDQ_QUANTIZE_FAMILY
#define QDQ_DEQUANTIZE_FAMILY(FAMILY)                                                                     \
  template <>                                                                                             \
  DequantizeKernel family_kernel<DequantizeFamily::k##FAMILY>(int64_t target, const DequantizeCall& call, \
                                                              StoreMode stores);
#include "kernels/simd/dequantize_kernels.inc"
#undef QDQ_DEQUANTIZE_FAMILY

}  // namespace qdq::detail::simd
