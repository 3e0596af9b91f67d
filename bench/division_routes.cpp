// Why qdq's quantize kernels divide: the exact routes that replace the division by a reciprocal
// multiply, each in the same minimal AVX2 loop as the division (load, quotient, clamp, convert, add
// the zero point, pack to uint8, store), timed side by side in cache; "avx512/..." are the same
// routes at 512 bits, where the CPU has AVX-512. Every route is checked against
// the division on the benchmark's data (counter `mismatches`, which must be 0 for the exact routes).
//
//   qdq_division_routes --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Routes (y = RN(1/s), the float32 reciprocal):
//   divide        q = x / s                                   (what qdq does)
//   multiply      q = x · y                                   (not exact: the speed of light)
//   markstein1    q0 = x·y, q = fma(fma(-q0, s, x), y, q0)     (Markstein's correction)
//   markstein2    the correction twice
//   codes_fma     markstein1 with q0 clamped to ±2^24 instead of the range check (integer outputs
//                 only: float8 would lose −0; a NaN or ±inf x still comes out NaN or ±inf)
//   tie_check     q0 = x·y rounded, with the division redone for a vector holding a quotient within
//                 2^-12 of a half-integer
// The Markstein routes keep q0 where |q0| is outside [2^-40, 2^40] (such quotients round to ±0 or
// saturate in every output format; q0 is also NaN/inf exactly where x / s is), so they also need
// |s| in [2^-62, 2^62]. `--exhaustive` compares markstein1 with the division over all 2^32 float32 x
// (at 256 bits, and at 512 bits too where the CPU has AVX-512).
//
//   qdq_division_routes --exhaustive 0.0173 0.1
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace {

enum class Route { kDivide, kMultiply, kMarkstein1, kMarkstein2, kCodesFma, kTieCheck };

template <Route R>
__attribute__((target("avx2,fma"), noinline)) void quantize_uint8(const float* x, uint8_t* y, int64_t n, float s,
                                                                  uint8_t zero_point) {
  const __m256 vs = _mm256_set1_ps(s);
  const __m256 vy = _mm256_set1_ps(1.0f / s);
  const __m256 lo = _mm256_set1_ps(-16777216.0f);
  const __m256 hi = _mm256_set1_ps(16777216.0f);
  const __m256 q_min = _mm256_set1_ps(0x1p-40f);
  const __m256 q_max = _mm256_set1_ps(0x1p40f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 near_half = _mm256_set1_ps(0.5f - 0x1p-12f);
  const __m256i zp = _mm256_set1_epi32(zero_point);
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    __m256i codes[4];
    for (int k = 0; k < 4; ++k) {
      const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
      __m256 q;
      if constexpr (R == Route::kDivide) {
        q = _mm256_div_ps(v, vs);
      } else if constexpr (R == Route::kMultiply) {
        q = _mm256_mul_ps(v, vy);
      } else if constexpr (R == Route::kMarkstein1 || R == Route::kMarkstein2) {
        const __m256 q0 = _mm256_mul_ps(v, vy);
        __m256 q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, vs, v), vy, q0);
        if constexpr (R == Route::kMarkstein2) q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q1, vs, v), vy, q1);
        const __m256 a = _mm256_and_ps(q0, abs_mask);
        const __m256 in_range = _mm256_and_ps(_mm256_cmp_ps(a, q_min, _CMP_GE_OQ), _mm256_cmp_ps(a, q_max, _CMP_LE_OQ));
        q = _mm256_blendv_ps(q0, q1, in_range);
      } else if constexpr (R == Route::kCodesFma) {
        const __m256 q0 = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, vy), lo), hi);
        q = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, vs, v), vy, q0);
      } else {
        const __m256 q0 = _mm256_mul_ps(v, vy);
        q = _mm256_round_ps(q0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 distance = _mm256_and_ps(_mm256_sub_ps(q0, q), abs_mask);
        const __m256 near = _mm256_cmp_ps(distance, near_half, _CMP_GT_OQ);
        if (!_mm256_testz_ps(near, near)) q = _mm256_div_ps(v, vs);
      }
      q = _mm256_min_ps(_mm256_max_ps(q, lo), hi);  // NaN → −2^24 (max_ps returns its second operand)
      codes[k] = _mm256_add_epi32(_mm256_cvtps_epi32(q), zp);
    }
    const __m256i ab = _mm256_packs_epi32(codes[0], codes[1]);
    const __m256i cd = _mm256_packs_epi32(codes[2], codes[3]);
    const __m256i bytes =
        _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), bytes);
  }
}

/// The same routes at 512 bits (AVX-512F/BW: the Intel machines where vdivps is slowest): 64
/// elements per iteration, packed with two saturating packs and one lane permute.
template <Route R>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"), noinline)) void quantize_uint8_avx512(
    const float* x, uint8_t* y, int64_t n, float s, uint8_t zero_point) {
  const __m512 vs = _mm512_set1_ps(s);
  const __m512 vy = _mm512_set1_ps(1.0f / s);
  const __m512 lo = _mm512_set1_ps(-16777216.0f);
  const __m512 hi = _mm512_set1_ps(16777216.0f);
  const __m512 q_min = _mm512_set1_ps(0x1p-40f);
  const __m512 q_max = _mm512_set1_ps(0x1p40f);
  const __m512 near_half = _mm512_set1_ps(0.5f - 0x1p-12f);
  const __m512i zp = _mm512_set1_epi32(zero_point);
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    __m512i codes[4];
    for (int k = 0; k < 4; ++k) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      __m512 q;
      if constexpr (R == Route::kDivide) {
        q = _mm512_div_ps(v, vs);
      } else if constexpr (R == Route::kMultiply) {
        q = _mm512_mul_ps(v, vy);
      } else if constexpr (R == Route::kMarkstein1 || R == Route::kMarkstein2) {
        const __m512 q0 = _mm512_mul_ps(v, vy);
        __m512 q1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, vs, v), vy, q0);
        if constexpr (R == Route::kMarkstein2) q1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(q1, vs, v), vy, q1);
        const __m512 a = _mm512_abs_ps(q0);
        const __mmask16 in_range = _mm512_cmp_ps_mask(a, q_min, _CMP_GE_OQ) & _mm512_cmp_ps_mask(a, q_max, _CMP_LE_OQ);
        q = _mm512_mask_blend_ps(in_range, q0, q1);
      } else if constexpr (R == Route::kCodesFma) {
        const __m512 q0 = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, vy), lo), hi);
        q = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, vs, v), vy, q0);
      } else {
        const __m512 q0 = _mm512_mul_ps(v, vy);
        q = _mm512_roundscale_ps(q0, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512 distance = _mm512_abs_ps(_mm512_sub_ps(q0, q));
        if (_mm512_cmp_ps_mask(distance, near_half, _CMP_GT_OQ) != 0) q = _mm512_div_ps(v, vs);
      }
      q = _mm512_min_ps(_mm512_max_ps(q, lo), hi);  // NaN → −2^24 (max_ps returns its second operand)
      codes[k] = _mm512_add_epi32(_mm512_cvtps_epi32(q), zp);
    }
    const __m512i ab = _mm512_packs_epi32(codes[0], codes[1]);
    const __m512i cd = _mm512_packs_epi32(codes[2], codes[3]);
    _mm512_storeu_si512(y + i, _mm512_permutexvar_epi32(order, _mm512_packus_epi16(ab, cd)));
  }
}

constexpr int64_t kElements = 8192;  // 32 KiB in, 8 KiB out: L1 and L2 on every x86 of the last decade
constexpr float kScale = 0.0173f;
constexpr uint8_t kZeroPoint = 3;

/// Normal(0, 2) data, with ±0, ±inf, NaN, exact ties (k + 0.5)·s and a quotient that the multiply
/// route rounds the wrong way (x = 0x1.7bc504p+1: x / s rounds to 172, x · y to 171) sprinkled in.
const std::vector<float>& input() {
  static const std::vector<float> x = [] {
    std::vector<float> v(kElements);
    std::mt19937 generator(1);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    for (float& e : v) e = normal(generator);
    const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 2.5f * kScale, -0.5f * kScale, 0x1.7bc504p+1f};
    constexpr size_t kSpecials = sizeof specials / sizeof specials[0];
    for (size_t i = 0; i < v.size(); i += 97) v[i] = specials[(i / 97) % kSpecials];
    return v;
  }();
  return x;
}

bool has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}

template <Route R, int kBits>
void BM_Route(benchmark::State& state) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("this CPU has no AVX2/FMA");
    return;
  }
  if (kBits == 512 && !has_avx512()) {
    state.SkipWithError("this CPU has no AVX-512");
    return;
  }
  const auto route = kBits == 512 ? quantize_uint8_avx512<R> : quantize_uint8<R>;
  const std::vector<float>& x = input();
  std::vector<uint8_t> reference(kElements), y(kElements);
  quantize_uint8<Route::kDivide>(x.data(), reference.data(), kElements, kScale, kZeroPoint);
  for (auto _ : state) {
    route(x.data(), y.data(), kElements, kScale, kZeroPoint);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  int64_t mismatches = 0;
  for (int64_t i = 0; i < kElements; ++i) mismatches += y[i] != reference[i];
  state.counters["mismatches"] = static_cast<double>(mismatches);
  state.counters["G_elem_per_s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kElements) / 1e9, benchmark::Counter::kIsRate);
}

/// Compares markstein1 with vdivps over all 2^32 float32 x for each scale (about 1.3 s per scale
/// here); returns the number of differing quotients where the route keeps its corrected result.
__attribute__((target("avx2,fma"))) int64_t markstein1_exhaustive(float s) {
  const __m256 vs = _mm256_set1_ps(s);
  const __m256 vy = _mm256_set1_ps(1.0f / s);
  const __m256 q_min = _mm256_set1_ps(0x1p-40f);
  const __m256 q_max = _mm256_set1_ps(0x1p40f);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  int64_t wrong = 0, kept = 0;
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += 8) {
    const __m256 v = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(first)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    const __m256 q0 = _mm256_mul_ps(v, vy);
    const __m256 q1 = _mm256_fmadd_ps(_mm256_fnmadd_ps(q0, vs, v), vy, q0);
    const __m256 a = _mm256_and_ps(q0, abs_mask);
    const int in_range =
        _mm256_movemask_ps(_mm256_and_ps(_mm256_cmp_ps(a, q_min, _CMP_GE_OQ), _mm256_cmp_ps(a, q_max, _CMP_LE_OQ)));
    const __m256i same = _mm256_cmpeq_epi32(_mm256_castps_si256(q1), _mm256_castps_si256(_mm256_div_ps(v, vs)));
    wrong += __builtin_popcount(in_range & ~_mm256_movemask_ps(_mm256_castsi256_ps(same)));
    kept += __builtin_popcount(in_range);
  }
  std::printf("scale %a: %lld of 2^32 x corrected, %lld differ from the division\n", static_cast<double>(s),
              static_cast<long long>(kept), static_cast<long long>(wrong));
  return wrong;
}

/// markstein1_exhaustive at 512 bits: the AVX-512 route's own instructions (mask compares and
/// blend), against the 512-bit vdivps.
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma"))) int64_t markstein1_exhaustive_avx512(float s) {
  const __m512 vs = _mm512_set1_ps(s);
  const __m512 vy = _mm512_set1_ps(1.0f / s);
  const __m512 q_min = _mm512_set1_ps(0x1p-40f);
  const __m512 q_max = _mm512_set1_ps(0x1p40f);
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t wrong = 0, kept = 0;
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += 16) {
    const __m512 v = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_set1_epi32(static_cast<int32_t>(first)), lane));
    const __m512 q0 = _mm512_mul_ps(v, vy);
    const __m512 q1 = _mm512_fmadd_ps(_mm512_fnmadd_ps(q0, vs, v), vy, q0);
    const __m512 a = _mm512_abs_ps(q0);
    const __mmask16 in_range = _mm512_cmp_ps_mask(a, q_min, _CMP_GE_OQ) & _mm512_cmp_ps_mask(a, q_max, _CMP_LE_OQ);
    const __m512 q = _mm512_mask_blend_ps(in_range, q0, q1);
    const __mmask16 same = _mm512_cmpeq_epi32_mask(_mm512_castps_si512(q), _mm512_castps_si512(_mm512_div_ps(v, vs)));
    wrong += __builtin_popcount(in_range & ~same & 0xFFFF);
    kept += __builtin_popcount(in_range);
  }
  std::printf("avx512 scale %a: %lld of 2^32 x corrected, %lld differ from the division\n", static_cast<double>(s),
              static_cast<long long>(kept), static_cast<long long>(wrong));
  return wrong;
}

BENCHMARK(BM_Route<Route::kDivide, 256>)->Name("divide");
BENCHMARK(BM_Route<Route::kMultiply, 256>)->Name("multiply");
BENCHMARK(BM_Route<Route::kMarkstein1, 256>)->Name("markstein1");
BENCHMARK(BM_Route<Route::kMarkstein2, 256>)->Name("markstein2");
BENCHMARK(BM_Route<Route::kCodesFma, 256>)->Name("codes_fma");
BENCHMARK(BM_Route<Route::kTieCheck, 256>)->Name("tie_check");
BENCHMARK(BM_Route<Route::kDivide, 512>)->Name("avx512/divide");
BENCHMARK(BM_Route<Route::kMultiply, 512>)->Name("avx512/multiply");
BENCHMARK(BM_Route<Route::kMarkstein1, 512>)->Name("avx512/markstein1");
BENCHMARK(BM_Route<Route::kMarkstein2, 512>)->Name("avx512/markstein2");
BENCHMARK(BM_Route<Route::kCodesFma, 512>)->Name("avx512/codes_fma");
BENCHMARK(BM_Route<Route::kTieCheck, 512>)->Name("avx512/tie_check");

}  // namespace

/// `qdq_division_routes --exhaustive [SCALE...]`: the exactness check of markstein1 (default scales:
/// those quoted in docs/performance.md); anything else: the benchmarks.
int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--exhaustive") {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
      std::puts("qdq_division_routes: this CPU has no AVX2/FMA");
      return 0;
    }
    std::vector<float> scales;
    for (int i = 2; i < argc; ++i) scales.push_back(std::strtof(argv[i], nullptr));
    if (scales.empty()) scales = {0.0173f, 1.0f / 3, 0.1f, 3.0f, 0x1.fffffep+0f, 0x1.000002p+0f, 0x1.fffffep-1f, 7e-5f};
    int64_t wrong = 0;
    for (float s : scales) wrong += markstein1_exhaustive(s);
    if (has_avx512()) {
      for (float s : scales) wrong += markstein1_exhaustive_avx512(s);
    }
    return wrong == 0 ? 0 : 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
#else
int main() {
  std::puts("qdq_division_routes: x86-64 only (the routes are written with AVX2 intrinsics)");
  return 0;
}
#endif
