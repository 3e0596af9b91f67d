// The stack a call needs, as qdq.hpp states it: calls of every type family (integer, packed, float8,
// float4 outputs and inputs; float32, float16, bfloat16 and float8e8m0 scales; per-tensor, per-axis
// and blocked; DynamicQuantizeLinear) run on a thread whose stack was painted with a pattern first;
// the deepest byte no longer holding it is the high-water mark. Measured in the SIMD and in the
// scalar path (QDQ_FORCE_SCALAR's option), one thread, so that the whole call runs on that stack.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "qdq/qdq.hpp"
#include "types/type_lists.hpp"

namespace {

using qdq::DataType;
using T = DataType;

// The bound qdq.hpp documents for one call's stack (its own frames and scratch, beyond the caller's).
constexpr size_t kDocumentedStackBytes = 64 * 1024;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& v : b) v = static_cast<uint8_t>(rng());
  return b;
}

/// float32 bytes of n values in [-300, 300).
std::vector<uint8_t> float_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-300.0f, 300.0f);
  std::vector<uint8_t> b(n * 4);
  for (size_t i = 0; i < n; ++i) {
    const float v = d(rng);
    std::memcpy(&b[i * 4], &v, 4);
  }
  return b;
}

/// 16-bit float bytes of n finite values (the upper halves of float32 values, which are bfloat16; for
/// float16, small exponents), little endian.
std::vector<uint8_t> half_bytes(T type, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> b(n * 2);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = static_cast<uint16_t>(rng());
    h = type == T::kFloat16 ? static_cast<uint16_t>((h & 0x83FF) | 0x3C00)
                            : static_cast<uint16_t>((h & 0x807F) | 0x4000);
    b[2 * i] = static_cast<uint8_t>(h & 0xFF);
    b[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
  return b;
}

/// One scale value of `type` (0.5: exact in all of them; e8m0 code 126 is 2^-1), `count` times.
std::vector<uint8_t> scale_bytes(T type, size_t count) {
  std::vector<uint8_t> one;
  if (type == T::kFloat) {
    const float v = 0.5f;
    one.resize(4);
    std::memcpy(one.data(), &v, 4);
  } else if (type == T::kFloat16) {
    one = {0x00, 0x38};
  } else if (type == T::kBFloat16) {
    one = {0x00, 0x3F};
  } else {
    one = {126};
  }
  std::vector<uint8_t> out;
  for (size_t i = 0; i < count; ++i) out.insert(out.end(), one.begin(), one.end());
  return out;
}

struct Layout {
  std::vector<int64_t> x_shape;
  std::vector<int64_t> scale_shape;
  int64_t axis;
  int64_t block;
};

// Per tensor, per axis (last axis), blocked (32 along the last axis, and along axis 0).
const Layout kLayouts[] = {
    {{32, 256}, {}, 1, 0}, {{32, 256}, {256}, 1, 0}, {{32, 256}, {32, 8}, 1, 32}, {{32, 256}, {1, 256}, 0, 32}};

int64_t count_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Every type family through the three operators, with `options`.
void run_every_family(const qdq::ExecutionOptions& options) {
  constexpr qdq::detail::TypeList quantized = qdq::detail::kQuantizedTypes;
  for (const Layout& layout : kLayouts) {
    const size_t n = static_cast<size_t>(count_of(layout.x_shape));
    const size_t scales = static_cast<size_t>(count_of(layout.scale_shape));
    for (T x_type : {T::kFloat, T::kFloat16, T::kBFloat16}) {
      const std::vector<uint8_t> x = x_type == T::kFloat ? float_bytes(n, 1) : half_bytes(x_type, n, 1);
      for (T scale_type : {T::kFloat, x_type, T::kFloat8E8M0}) {
        const std::vector<uint8_t> s = scale_bytes(scale_type, scales);
        for (T y_type : quantized) {
          qdq::QuantizeLinearAttributes a;
          a.axis = layout.axis;
          if (layout.block > 0) a.block_size = layout.block;
          a.output_dtype = static_cast<int64_t>(y_type);
          const qdq::TensorView xv{x_type, layout.x_shape, x.data(), x.size()};
          const qdq::TensorView sv{scale_type, layout.scale_shape, s.data(), s.size()};
          const qdq::TensorSpec spec = qdq::quantize_linear_output(a, xv, sv, nullptr);
          std::vector<uint8_t> y(spec.size_bytes);
          qdq::quantize_linear(a, xv, sv, nullptr, {spec.type, spec.shape, y.data(), y.size()}, options);
        }
      }
    }
    for (T x_type : quantized) {
      const std::vector<int64_t>& shape = layout.x_shape;
      const qdq::TensorSpec x_spec{x_type, shape, qdq::storage_bytes(x_type, n)};
      std::vector<uint8_t> x = random_bytes(x_spec.size_bytes, 2);
      for (T scale_type : {T::kFloat, T::kFloat16, T::kBFloat16, T::kFloat8E8M0}) {
        const std::vector<uint8_t> s = scale_bytes(scale_type, scales);
        for (T y_type : {T::kFloat, T::kFloat16, T::kBFloat16}) {
          qdq::DequantizeLinearAttributes a;
          a.axis = layout.axis;
          if (layout.block > 0) a.block_size = layout.block;
          a.output_dtype = static_cast<int64_t>(y_type);
          const qdq::TensorView xv{x_type, shape, x.data(), x.size()};
          const qdq::TensorView sv{scale_type, layout.scale_shape, s.data(), s.size()};
          const qdq::TensorSpec spec = qdq::dequantize_linear_output(a, xv, sv, nullptr);
          std::vector<uint8_t> y(spec.size_bytes);
          qdq::dequantize_linear(a, xv, sv, nullptr, {spec.type, spec.shape, y.data(), y.size()}, options);
        }
      }
    }
  }
  const std::vector<int64_t> shape = {32, 256};
  const std::vector<uint8_t> x = float_bytes(32 * 256, 3);
  std::vector<uint8_t> y(32 * 256);
  qdq::dynamic_quantize_linear({T::kFloat, shape, x.data(), x.size()}, {T::kUint8, shape, y.data(), y.size()}, options);
}

struct Job {
  void (*body)(const qdq::ExecutionOptions&);
  qdq::ExecutionOptions options;
  bool threw = false;
};

void* run_job(void* arg) {
  auto* job = static_cast<Job*>(arg);
  try {
    if (job->body != nullptr) job->body(job->options);
  } catch (...) {
    job->threw = true;
  }
  return nullptr;
}

constexpr uint8_t kPaint = 0xA5;
constexpr size_t kStackBytes = size_t{4} << 20;  // far more than needed: the mark is what counts

/// Runs `body(options)` on a thread of a painted kStackBytes stack; returns the bytes of it that were
/// written (glibc's thread descriptor and static TLS at its top included).
size_t stack_high_water(void (*body)(const qdq::ExecutionOptions&), const qdq::ExecutionOptions& options) {
  void* stack = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(stack, MAP_FAILED);
  if (stack == MAP_FAILED) return 0;
  std::memset(stack, kPaint, kStackBytes);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  EXPECT_EQ(pthread_attr_setstack(&attr, stack, kStackBytes), 0);
  Job job{body, options};
  pthread_t thread;
  EXPECT_EQ(pthread_create(&thread, &attr, run_job, &job), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  EXPECT_FALSE(job.threw);
  // The stack grows down: the lowest byte that lost the paint is the deepest one used.
  const auto* bytes = static_cast<const uint8_t*>(stack);
  size_t untouched = 0;
  while (untouched < kStackBytes && bytes[untouched] == kPaint) ++untouched;
  munmap(stack, kStackBytes);
  return kStackBytes - untouched;
}

TEST(StackUse, EveryTypeFamilyStaysWithinTheDocumentedBound) {
  qdq::ExecutionOptions simd;
  simd.num_threads = 1;
  qdq::ExecutionOptions scalar = simd;
  scalar.force_scalar = true;
  const size_t baseline = stack_high_water(nullptr, simd);
  const size_t simd_bytes = stack_high_water(run_every_family, simd) - baseline;
  const size_t scalar_bytes = stack_high_water(run_every_family, scalar) - baseline;
  std::printf("[ stack    ] one call: %zu bytes (SIMD path), %zu bytes (scalar path); thread baseline %zu\n",
              simd_bytes, scalar_bytes, baseline);
#if defined(NDEBUG)
  if (kSanitized) GTEST_SKIP() << "sanitizer build: instrumented frames are larger than the documented bound";
  EXPECT_LE(simd_bytes, kDocumentedStackBytes);
  EXPECT_LE(scalar_bytes, kDocumentedStackBytes);
#else
  GTEST_SKIP() << "unoptimised build: its frames are larger than the documented (Release) bound";
#endif
}

}  // namespace
