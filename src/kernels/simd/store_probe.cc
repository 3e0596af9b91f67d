// The loops that store_policy.cpp times to learn whether non-temporal stores beat ordinary ones on
// this CPU: whole vectors of the target's width, the same stores the kernels' StreamBytes makes.
#include <cstring>

#include "kernels/simd/config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/simd/store_probe.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/simd/simd_kernels.hpp"
#include "kernels/simd/vectors-inl.h"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS
void FillLines(uint8_t* dst, size_t bytes, StoreMode stores) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  const auto v = hn::Set(d, uint8_t{0x5A});
  if (stores == StoreMode::kStream) {
    for (size_t i = 0; i + lanes <= bytes; i += lanes) hn::Stream(v, d, dst + i);
    hwy::FlushStream();
  } else {
    for (size_t i = 0; i + lanes <= bytes; i += lanes) hn::Store(v, d, dst + i);
  }
}

void WidenLines(const uint8_t* src, uint8_t* dst, size_t dst_bytes, StoreMode stores) {
  const hn::ScalableTag<uint32_t> d32;
  const hn::Rebind<uint8_t, decltype(d32)> d8;
  const size_t lanes = hn::Lanes(d32);
  const size_t words = dst_bytes / sizeof(uint32_t);
  uint32_t* const out = reinterpret_cast<uint32_t*>(dst);
  if (stores == StoreMode::kStream) {
    for (size_t i = 0; i + lanes <= words; i += lanes)
      hn::Stream(hn::PromoteTo(d32, hn::LoadU(d8, src + i)), d32, out + i);
    hwy::FlushStream();
  } else {
    for (size_t i = 0; i + lanes <= words; i += lanes)
      hn::Store(hn::PromoteTo(d32, hn::LoadU(d8, src + i)), d32, out + i);
  }
}
#else
void FillLines(uint8_t* dst, size_t bytes, StoreMode) {
  for (size_t i = 0; i < bytes; ++i) dst[i] = 0x5A;
}
void WidenLines(const uint8_t* src, uint8_t* dst, size_t dst_bytes, StoreMode) {
  for (size_t i = 0; i < dst_bytes / sizeof(uint32_t); ++i) {
    const uint32_t word = src[i];
    std::memcpy(dst + i * sizeof(uint32_t), &word, sizeof(word));
  }
}
#endif
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::detail::simd {

void fill_lines(int64_t target, uint8_t* dst, size_t bytes, StoreMode stores) {
  void (*const fill)(uint8_t*, size_t, StoreMode) = QDQ_SIMD_CHOOSE(target, FillLines);
  if (fill != nullptr) fill(dst, bytes, stores);
}

void widen_lines(int64_t target, const uint8_t* src, uint8_t* dst, size_t dst_bytes, StoreMode stores) {
  void (*const widen)(const uint8_t*, uint8_t*, size_t, StoreMode) = QDQ_SIMD_CHOOSE(target, WidenLines);
  if (widen != nullptr) widen(src, dst, dst_bytes, stores);
}

}  // namespace qdq::detail::simd
#endif
