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

/// The kernel of the family's unit for `target`, this call and these stores, or nullptr where the
/// family lists none for the call's types (or the target is not compiled). No allocation; thread-safe.
#define QDQ_QUANTIZE_FAMILY(FAMILY) \
  QuantizeKernel quantize_kernel_##FAMILY(int64_t target, const QuantizeCall& call, StoreMode stores);
#include "kernels/simd/quantize_kernels.inc"
#undef QDQ_QUANTIZE_FAMILY
#define QDQ_DEQUANTIZE_FAMILY(FAMILY) \
  DequantizeKernel dequantize_kernel_##FAMILY(int64_t target, const DequantizeCall& call, StoreMode stores);
#include "kernels/simd/dequantize_kernels.inc"
#undef QDQ_DEQUANTIZE_FAMILY

}  // namespace qdq::detail::simd
