// The streaming and ceiling loops of reference_loops.hpp, one copy per Highway target.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)  // as qdq's kernels: they add nothing here
#endif

#include <cstring>

#include "reference_loops.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "reference_loops.cc"
#include "hwy/cache_control.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace qdq::bench {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Streaming: out = XOR of the input vectors that map to it (or in, plus 0..R-1, repeated), so that
// every input byte is loaded once and every output byte stored once, at the target's full width.

template <int R, bool kNonTemporal>
void StreamReduce(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t out_bytes) {
  const hn::ScalableTag<uint64_t> d;
  const size_t step = hn::Lanes(d) * 8;
  for (size_t j = 0; j < out_bytes; j += step) {
    auto acc = hn::Load(d, reinterpret_cast<const uint64_t*>(in + j * R));
    for (int t = 1; t < R; ++t)
      acc = hn::Xor(acc, hn::Load(d, reinterpret_cast<const uint64_t*>(in + j * R + t * step)));
    if constexpr (kNonTemporal) {
      hn::Stream(acc, d, reinterpret_cast<uint64_t*>(out + j));
    } else {
      hn::Store(acc, d, reinterpret_cast<uint64_t*>(out + j));
    }
  }
}

template <int R, bool kNonTemporal>
void StreamExpand(const uint8_t* HWY_RESTRICT in, uint8_t* HWY_RESTRICT out, size_t in_bytes) {
  const hn::ScalableTag<uint64_t> d;
  const size_t step = hn::Lanes(d) * 8;
  for (size_t j = 0; j < in_bytes; j += step) {
    const auto v = hn::Load(d, reinterpret_cast<const uint64_t*>(in + j));
    for (int t = 0; t < R; ++t) {
      const auto w = hn::Add(v, hn::Set(d, static_cast<uint64_t>(t)));
      if constexpr (kNonTemporal) {
        hn::Stream(w, d, reinterpret_cast<uint64_t*>(out + j * R + t * step));
      } else {
        hn::Store(w, d, reinterpret_cast<uint64_t*>(out + j * R + t * step));
      }
    }
  }
}

template <bool kNonTemporal>
void StreamRatio(const uint8_t* in, uint64_t in_bytes, uint8_t* out, uint64_t out_bytes) {
  if (in_bytes >= out_bytes) {
    switch (in_bytes / out_bytes) {
      case 1: StreamReduce<1, kNonTemporal>(in, out, out_bytes); break;
      case 2: StreamReduce<2, kNonTemporal>(in, out, out_bytes); break;
      case 4: StreamReduce<4, kNonTemporal>(in, out, out_bytes); break;
      case 8: StreamReduce<8, kNonTemporal>(in, out, out_bytes); break;
      default: StreamReduce<16, kNonTemporal>(in, out, out_bytes); break;
    }
  } else {
    switch (out_bytes / in_bytes) {
      case 2: StreamExpand<2, kNonTemporal>(in, out, in_bytes); break;
      case 4: StreamExpand<4, kNonTemporal>(in, out, in_bytes); break;
      case 8: StreamExpand<8, kNonTemporal>(in, out, in_bytes); break;
      default: StreamExpand<16, kNonTemporal>(in, out, in_bytes); break;
    }
  }
}

void StreamRange(const uint8_t* in, uint64_t in_bytes, uint8_t* out, uint64_t out_bytes, bool non_temporal) {
  if (non_temporal) {
    StreamRatio<true>(in, in_bytes, out, out_bytes);
    hwy::FlushStream();
  } else {
    StreamRatio<false>(in, in_bytes, out, out_bytes);
  }
}

// Reading: XOR of every input vector (four accumulators), nothing stored, optionally with each
// line asked for 1 KiB ahead into L1 and 4 KiB ahead into L2, as the kernels' loops ask for x's.

template <bool kPrefetch>
uint64_t ReadReduce(const uint8_t* HWY_RESTRICT in, size_t bytes) {
  const hn::ScalableTag<uint64_t> d;
  const size_t step = hn::Lanes(d) * 8;
  auto a = hn::Zero(d), b = a, c = a, e = a;
  for (size_t j = 0; j < bytes; j += 4 * step) {
    if constexpr (kPrefetch) {
      // Integer addresses: the requests run past the buffer's end, which pointers may not.
      const uintptr_t at = reinterpret_cast<uintptr_t>(in) + j;
      for (uintptr_t line = 0; line < 4 * step; line += 64) {
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(at + line + 1024));
#if defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(reinterpret_cast<const void*>(at + line + 4096), 0, 2);  // into L2 (prefetcht1)
#endif
      }
    }
    const auto* p = reinterpret_cast<const uint64_t*>(in + j);
    a = hn::Xor(a, hn::Load(d, p));
    b = hn::Xor(b, hn::Load(d, p + step / 8));
    c = hn::Xor(c, hn::Load(d, p + 2 * step / 8));
    e = hn::Xor(e, hn::Load(d, p + 3 * step / 8));
  }
  return hn::GetLane(hn::Xor(hn::Xor(a, b), hn::Xor(c, e)));
}

uint64_t ReadRange(const uint8_t* in, uint64_t bytes, bool prefetch) {
  return prefetch ? ReadReduce<true>(in, bytes) : ReadReduce<false>(in, bytes);
}

void CeilingQuantizeInt8(const float* HWY_RESTRICT x, int8_t* HWY_RESTRICT y, int64_t n, float inverse_scale,
                         int32_t zero_point) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const auto vinv = hn::Set(df, inverse_scale);
  const auto vzp = hn::Set(di, zero_point);
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto code = [&](int64_t i) { return hn::Add(hn::NearestInt(hn::Mul(hn::LoadU(df, x + i), vinv)), vzp); };
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  // Four vectors to one with two levels of saturating packs and one lane permute: a quarter of the
  // shuffles of four separate demotions, as a tuned kernel would pack.
#if HWY_TARGET == HWY_AVX3
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int64_t i = 0; i < n; i += 4 * lanes) {
    const __m512i ab = _mm512_packs_epi32(code(i).raw, code(i + lanes).raw);
    const __m512i cd = _mm512_packs_epi32(code(i + 2 * lanes).raw, code(i + 3 * lanes).raw);
    _mm512_storeu_si512(y + i, _mm512_permutexvar_epi32(order, _mm512_packs_epi16(ab, cd)));
  }
#else
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t i = 0; i < n; i += 4 * lanes) {
    const __m256i ab = _mm256_packs_epi32(code(i).raw, code(i + lanes).raw);
    const __m256i cd = _mm256_packs_epi32(code(i + 2 * lanes).raw, code(i + 3 * lanes).raw);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), order));
  }
#endif
#else
  const hn::Rebind<int8_t, decltype(di)> d8;
  for (int64_t i = 0; i < n; i += lanes) hn::StoreU(hn::DemoteTo(d8, code(i)), d8, y + i);
#endif
}

void CeilingDequantizeUint8(const uint8_t* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t n, float scale,
                            float offset) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(di)> d8;
  const auto vscale = hn::Set(df, scale);
  const auto voffset = hn::Set(df, offset);
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  const auto decode = [&](int64_t i) {
    hn::StoreU(hn::MulAdd(hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, x + i))), vscale, voffset), df, y + i);
  };
  // Four vectors per iteration, as the kernels unroll (n is a multiple of 64, so of 4 vectors).
  for (int64_t i = 0; i < n; i += 4 * lanes) {
    decode(i);
    decode(i + lanes);
    decode(i + 2 * lanes);
    decode(i + 3 * lanes);
  }
}

int64_t Target() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace qdq::bench
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qdq::bench {
namespace {

/// The loops of one Highway target.
struct Loops {
  decltype(&HWY_STATIC_DISPATCH(StreamRange)) stream_range;
  decltype(&HWY_STATIC_DISPATCH(ReadRange)) read_range;
  decltype(&HWY_STATIC_DISPATCH(CeilingQuantizeInt8)) ceiling_quantize_int8;
  decltype(&HWY_STATIC_DISPATCH(CeilingDequantizeUint8)) ceiling_dequantize_uint8;
  int64_t target;
};

#define QDQ_BENCH_LOOPS(N) \
  Loops { &N::StreamRange, &N::ReadRange, &N::CeilingQuantizeInt8, &N::CeilingDequantizeUint8, N::Target() }

/// The best compiled target this CPU runs, chosen here rather than by libhwy's dispatch so that
/// the qdq CLI, which links the bench core, needs Highway's headers only, as the library does.
/// (The feature names are those GCC and clang both accept; every AVX2 CPU also has F16C.)
const Loops& best_loops() {
  static const Loops chosen = [] {
#if HWY_ARCH_X86 && (defined(__GNUC__) || defined(__clang__))
#if HWY_TARGETS & HWY_AVX3
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl")) {
      return QDQ_BENCH_LOOPS(N_AVX3);
    }
#endif
#if HWY_TARGETS & HWY_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2")) {
      return QDQ_BENCH_LOOPS(N_AVX2);
    }
#endif
#endif
    return QDQ_BENCH_LOOPS(HWY_NAMESPACE);  // the static target: what the compiler flags allow
  }();
  return chosen;
}

const Loops* chosen_loops = nullptr;  // use_reference_target's choice; null = best_loops()

const Loops& loops() { return chosen_loops != nullptr ? *chosen_loops : best_loops(); }

}  // namespace

bool use_reference_target(const std::string& name) {
  static const Loops compiled[] = {
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX3)
    QDQ_BENCH_LOOPS(N_AVX3),
#endif
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_AVX2)
    QDQ_BENCH_LOOPS(N_AVX2),
#endif
#if HWY_ARCH_X86 && (HWY_TARGETS & HWY_SSE4)
    QDQ_BENCH_LOOPS(N_SSE4),
#endif
    QDQ_BENCH_LOOPS(HWY_NAMESPACE),
  };
  if (name.empty()) {
    chosen_loops = nullptr;
    return true;
  }
  for (const Loops& l : compiled) {
    if (name == hwy::TargetName(l.target)) {
      chosen_loops = &l;
      return true;
    }
  }
  return false;
}

void stream_range(const uint8_t* in, uint64_t in_bytes, uint8_t* out, uint64_t out_bytes, bool non_temporal) {
  loops().stream_range(in, in_bytes, out, out_bytes, non_temporal);
}

uint64_t read_range(const uint8_t* in, uint64_t bytes, bool prefetch) {
  return loops().read_range(in, bytes, prefetch);
}

void ceiling_quantize_int8(const float* x, int8_t* y, int64_t n, float inverse_scale, int32_t zero_point) {
  loops().ceiling_quantize_int8(x, y, n, inverse_scale, zero_point);
}

void ceiling_dequantize_uint8(const uint8_t* x, float* y, int64_t n, float scale, float offset) {
  loops().ceiling_dequantize_uint8(x, y, n, scale, offset);
}

std::string reference_target() { return hwy::TargetName(loops().target); }

}  // namespace qdq::bench
#endif
