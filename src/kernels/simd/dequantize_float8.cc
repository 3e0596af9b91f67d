// DequantizeLinear kernels of the Float8 family (the Float8 lines of dequantize_kernels.inc), compiled once per
// Highway target; the kernels are in dequantize-inl.h. One small unit per family keeps every unit's
// compile time short.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/dequantize_float8.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

#undef QDQ_SIMD_FAMILY
#define QDQ_SIMD_FAMILY DequantizeFamily::kFloat8
#include "kernels/simd/dequantize-inl.h"

// After the kernels, whose chooser it exports.
#include "kernels/simd/family_unit-inl.h"
