// QuantizeLinear kernels of the Int2 family (the Int2 lines of quantize_kernels.inc), compiled once per
// Highway target; the kernels are in quantize-inl.h. One small unit per family keeps every unit's
// compile time short.
#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/quantize_int2.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"

#undef QDQ_SIMD_FAMILY
#define QDQ_SIMD_FAMILY QuantizeFamily::kInt2
#include "kernels/simd/quantize-inl.h"

// After the kernels, whose chooser it exports.
#include "kernels/simd/family_unit-inl.h"
