// The store policy of the vectorised kernels (src/kernels/store_policy.hpp): QDQ_STREAM_STORES's
// values, the threshold's bounds, small calls never streaming under auto, and a call above the
// threshold (streamed wherever the probe found non-temporal stores faster) giving the scalar
// kernel's bytes through the thread pool. The kernels themselves are compared in both store modes by
// simd_kernels_test.cpp. No timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/store_policy.hpp"
#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;
using qdq::detail::StoreMode;
using qdq::detail::StorePolicy;

TEST(StorePolicy, ParsesTheEnvironmentValues) {
  EXPECT_EQ(qdq::detail::parse_store_policy(nullptr), StorePolicy::kAuto);
  EXPECT_EQ(qdq::detail::parse_store_policy(""), StorePolicy::kAuto);
  EXPECT_EQ(qdq::detail::parse_store_policy("auto"), StorePolicy::kAuto);
  EXPECT_EQ(qdq::detail::parse_store_policy("always"), StorePolicy::kAlways);
  EXPECT_EQ(qdq::detail::parse_store_policy("never"), StorePolicy::kNever);
  try {
    qdq::detail::parse_store_policy("Always");
    FAIL() << "a bad QDQ_STREAM_STORES was accepted";
  } catch (const qdq::Error& e) {
    EXPECT_NE(std::string(e.what()).find("QDQ_STREAM_STORES is 'Always'"), std::string::npos) << e.what();
  }
}

TEST(StorePolicy, ThresholdIsAboveTheCaches) { EXPECT_GE(qdq::detail::stream_threshold_bytes(), uint64_t{4} << 20); }

/// Whether this process runs with QDQ_STREAM_STORES at auto (the policy the next tests check).
bool environment_is_auto() {
  const char* env = std::getenv("QDQ_STREAM_STORES");
  return env == nullptr || env[0] == '\0' || std::string(env) == "auto";
}

TEST(StorePolicy, SmallOutputsNeverStreamUnderAuto) {
  if (!environment_is_auto()) GTEST_SKIP() << "QDQ_STREAM_STORES overrides the policy";
  for (uint64_t bytes : {uint64_t{0}, uint64_t{1}, uint64_t{64} << 10, uint64_t{4} << 20}) {
    if (bytes < qdq::detail::stream_threshold_bytes()) {
      EXPECT_EQ(qdq::detail::choose_store_mode(bytes), StoreMode::kNormal) << bytes;
    }
  }
}

TEST(StorePolicy, ProbeMeasuresBothStoresOnceWhereThereAreKernels) {
  const qdq::detail::StreamProbe& first = qdq::detail::stream_probe();
  const qdq::detail::StreamProbe& again = qdq::detail::stream_probe();
  std::printf(
      "[ probe    ] %llu MiB widened at %.1f GB/s (normal stores), %.1f GB/s (non-temporal), median gain %.3f: %s\n",
      static_cast<unsigned long long>(first.output_bytes >> 20), first.normal_gbps, first.stream_gbps, first.gain,
      first.stream_wins ? "streams" : "does not stream");
  EXPECT_EQ(&first, &again);
  EXPECT_GE(first.normal_gbps, 0.0);
  EXPECT_GE(first.stream_gbps, 0.0);
  if (first.stream_wins) {
    EXPECT_GT(first.gain, 1.0);
    EXPECT_GT(first.stream_gbps, first.normal_gbps);
  }
}

// A dequantize whose output reaches the threshold (streamed where the probe found that faster),
// on two threads, against the scalar kernel; odd length, so that the last task ends mid-line.
TEST(StorePolicy, CallAboveTheThresholdMatchesScalar) {
  const uint64_t threshold = qdq::detail::stream_threshold_bytes();
  if (threshold > (uint64_t{64} << 20))
    GTEST_SKIP() << "threshold " << threshold << " bytes: too large for a unit test";
  const auto n = static_cast<int64_t>(threshold / 4 + 77);
  std::vector<uint8_t> x(static_cast<size_t>(n));
  std::mt19937 rng(12);
  for (auto& v : x) v = static_cast<uint8_t>(rng());
  const float scale = 0.037f;
  const uint8_t zero_point = 131;
  const std::vector<int64_t> shape{n};
  const std::vector<int64_t> scalar_shape;
  const qdq::TensorView xv{DataType::kUint8, shape, x.data(), x.size()};
  const qdq::TensorView sv{DataType::kFloat, scalar_shape, &scale, 4};
  const qdq::TensorView zv{DataType::kUint8, scalar_shape, &zero_point, 1};
  std::vector<float> got(static_cast<size_t>(n), -1.0f);
  std::vector<float> expected(static_cast<size_t>(n), -2.0f);
  qdq::ExecutionOptions options;
  options.num_threads = 2;
  qdq::dequantize_linear({}, xv, sv, &zv, {DataType::kFloat, shape, got.data(), got.size() * 4}, options);
  options.force_scalar = true;
  qdq::dequantize_linear({}, xv, sv, &zv, {DataType::kFloat, shape, expected.data(), expected.size() * 4}, options);
  EXPECT_TRUE(got == expected);
}

// The same dequantize written in slices of rows, each call told the whole output's size
// (ExecutionOptions::whole_output_bytes: streamed as the whole call would be), against one scalar call.
TEST(StorePolicy, SlicesToldTheWholeOutputMatchOneCall) {
  const uint64_t threshold = qdq::detail::stream_threshold_bytes();
  if (threshold > (uint64_t{64} << 20))
    GTEST_SKIP() << "threshold " << threshold << " bytes: too large for a unit test";
  const int64_t cols = 1001;
  const auto rows = static_cast<int64_t>(threshold / 4 / cols + 3);
  std::vector<int8_t> x(static_cast<size_t>(rows * cols));
  std::mt19937 rng(13);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  std::vector<float> scale(static_cast<size_t>(cols));
  for (auto& s : scale) s = 0.01f + static_cast<float>(rng() % 1000) * 1e-4f;
  const std::vector<int64_t> shape{rows, cols};
  const std::vector<int64_t> scale_shape{cols};
  const qdq::TensorView sv{DataType::kFloat, scale_shape, scale.data(), scale.size() * 4};
  qdq::DequantizeLinearAttributes attributes;
  attributes.axis = 1;
  std::vector<float> expected(x.size(), -2.0f);
  qdq::ExecutionOptions scalar;
  scalar.force_scalar = true;
  qdq::dequantize_linear(attributes, {DataType::kInt8, shape, x.data(), x.size()}, sv, nullptr,
                         {DataType::kFloat, shape, expected.data(), expected.size() * 4}, scalar);
  std::vector<float> got(x.size(), -1.0f);
  qdq::ExecutionOptions options;
  options.num_threads = 2;
  options.whole_output_bytes = got.size() * 4;
  const int64_t step = rows / 3 + 1;
  for (int64_t r0 = 0; r0 < rows; r0 += step) {
    const int64_t r1 = std::min(rows, r0 + step);
    const std::vector<int64_t> slice{r1 - r0, cols};
    const auto n = static_cast<size_t>((r1 - r0) * cols);
    const auto offset = static_cast<size_t>(r0 * cols);
    qdq::dequantize_linear(attributes, {DataType::kInt8, slice, x.data() + offset, n}, sv, nullptr,
                           {DataType::kFloat, slice, got.data() + offset, n * 4}, options);
  }
  EXPECT_TRUE(got == expected);
}

}  // namespace
