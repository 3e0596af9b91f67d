// Which Highway targets qdq compiles, and how a target bit names its compiled function. Included
// first by every SIMD translation unit so that all of them agree.
#pragma once

// SSSE3 adds nothing over SSE4 for these kernels and AVX3_DL nothing over AVX3: skipping them halves
// the build time.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
#endif

// Forces a lambda of a kernel's loop inline (HWY_INLINE's attribute, which lambdas cannot take as a
// prefix): GCC otherwise may keep a per-vector lambda out of line once its loop has several callers,
// which at AVX2 halved float8 quantize.
#if defined(__GNUC__) || defined(__clang__)
#define QDQ_INLINE_LAMBDA __attribute__((always_inline))
#else
#define QDQ_INLINE_LAMBDA
#endif

#include "hwy/detect_compiler_arch.h"  // HWY_ARCH_*; highway.h itself comes after foreach_target.h

// Highway's portable baseline (HWY_SCALAR, or EMU128) gets no kernels: the scalar reference kernels
// serve CPUs without a SIMD target. QDQ_SIMD_HAS_KERNELS tells the per-target code.
#define QDQ_SIMD_HAS_KERNELS (HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128)

// The function FUNC compiled for target bit TARGET, or nullptr when it is not compiled. qdq does its
// own CPU detection (targets.cc) instead of Highway's runtime (libhwy), so the library needs only
// Highway's headers.
#if HWY_ARCH_X86
#define QDQ_SIMD_CHOOSE(TARGET, FUNC)             \
  ((TARGET) == HWY_AVX3   ? HWY_CHOOSE_AVX3(FUNC) \
   : (TARGET) == HWY_AVX2 ? HWY_CHOOSE_AVX2(FUNC) \
   : (TARGET) == HWY_SSE4 ? HWY_CHOOSE_SSE4(FUNC) \
                          : nullptr)
#else
#define QDQ_SIMD_CHOOSE(TARGET, FUNC) ((TARGET) == HWY_STATIC_TARGET ? &HWY_STATIC_DISPATCH(FUNC) : nullptr)
#endif
