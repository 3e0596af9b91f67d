// The line requests of the vectorised loops (src/kernels/prefetch_policy.hpp): every choice gives the
// same bytes (quantize, dequantize, DynamicQuantizeLinear's range pass, on an x large enough to take
// the measured choice, through the thread pool); the reported names by size; the probe measuring
// both choices once. QDQ_PREFETCH's values are checked through the CLI (tests/cli/cli_test.sh),
// since it is read once per process. No timing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/prefetch_policy.hpp"
#include "qdq/qdq.hpp"

namespace {

using qdq::DataType;
using qdq::detail::LineRequests;
using qdq::detail::ReadingLoop;

/// x of this many float32 elements is past kMeasuredFromBytes; odd, so that the last task ends
/// mid-vector.
constexpr int64_t kLargeElements = static_cast<int64_t>(qdq::detail::kMeasuredFromBytes / 4) + 77;

constexpr LineRequests kChoices[] = {LineRequests::kNone, LineRequests::kL1, LineRequests::kL1AndL2};

/// Forces `loop`'s requests for the scope.
class ForcedRequests {
 public:
  ForcedRequests(ReadingLoop loop, LineRequests requests) : loop_(loop) {
    qdq::detail::force_line_requests(loop, &requests);
  }
  ~ForcedRequests() { qdq::detail::force_line_requests(loop_, nullptr); }
  ForcedRequests(const ForcedRequests&) = delete;
  ForcedRequests& operator=(const ForcedRequests&) = delete;

 private:
  ReadingLoop loop_;
};

std::vector<float> random_floats(int64_t n, uint32_t seed) {
  std::vector<float> x(static_cast<size_t>(n));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-40.0f, 40.0f);
  for (float& v : x) v = value(rng);
  return x;
}

qdq::ExecutionOptions two_threads() {
  qdq::ExecutionOptions options;
  options.num_threads = 2;
  return options;
}

TEST(PrefetchPolicy, QuantizeGivesTheSameBytesWithEveryChoice) {
  const std::vector<float> x = random_floats(kLargeElements, 7);
  const std::vector<int64_t> shape{kLargeElements};
  const float scale = 0.173f;
  const uint8_t zero_point = 119;
  const int64_t scalar_shape[1] = {1};
  std::optional<std::vector<uint8_t>> first;
  for (const LineRequests choice : kChoices) {
    const ForcedRequests forced(ReadingLoop::kQuantize, choice);
    std::vector<uint8_t> y(x.size());
    const qdq::TensorView zp{DataType::kUint8, scalar_shape, &zero_point, 1};
    qdq::quantize_linear(qdq::QuantizeLinearAttributes{}, {DataType::kFloat, shape, x.data(), x.size() * 4},
                         {DataType::kFloat, {}, &scale, 4}, &zp, {DataType::kUint8, shape, y.data(), y.size()},
                         two_threads());
    if (!first) {
      first = y;
    } else {
      EXPECT_TRUE(y == *first) << qdq::detail::line_requests_name(choice);
    }
  }
}

TEST(PrefetchPolicy, DequantizeGivesTheSameBytesWithEveryChoice) {
  const auto n = kLargeElements / 2;  // int16: past the size at 2 bytes per element
  std::vector<int16_t> x(static_cast<size_t>(n));
  std::mt19937 rng(8);
  for (int16_t& v : x) v = static_cast<int16_t>(rng());
  const std::vector<int64_t> shape{n};
  const float scale = 0.0071f;
  std::optional<std::vector<float>> first;
  for (const LineRequests choice : kChoices) {
    const ForcedRequests forced(ReadingLoop::kDequantize, choice);
    std::vector<float> y(x.size());
    qdq::dequantize_linear(qdq::DequantizeLinearAttributes{}, {DataType::kInt16, shape, x.data(), x.size() * 2},
                           {DataType::kFloat, {}, &scale, 4}, nullptr,
                           {DataType::kFloat, shape, y.data(), y.size() * 4}, two_threads());
    if (!first) {
      first = y;
    } else {
      EXPECT_EQ(std::memcmp(y.data(), first->data(), y.size() * 4), 0) << qdq::detail::line_requests_name(choice);
    }
  }
}

TEST(PrefetchPolicy, DynamicQuantizeGivesTheSameResultWithEveryChoice) {
  std::vector<float> x = random_floats(kLargeElements, 9);
  x[static_cast<size_t>(kLargeElements) - 1] = 97.5f;  // the maximum in the ragged last task
  x[3] = -61.25f;                                      // the minimum in the first
  const std::vector<int64_t> shape{kLargeElements};
  std::optional<std::vector<uint8_t>> first;
  std::optional<qdq::DynamicQuantizationParameters> first_params;
  for (const LineRequests choice : kChoices) {
    const ForcedRequests range(ReadingLoop::kRange, choice);
    const ForcedRequests quantize(ReadingLoop::kQuantize, choice);
    std::vector<uint8_t> y(x.size());
    const qdq::DynamicQuantizationParameters params =
        qdq::dynamic_quantize_linear({DataType::kFloat, shape, x.data(), x.size() * 4},
                                     {DataType::kUint8, shape, y.data(), y.size()}, two_threads());
    EXPECT_EQ(params.y_scale, (97.5f + 61.25f) / 255.0f) << qdq::detail::line_requests_name(choice);
    if (!first) {
      first = y;
      first_params = params;
    } else {
      EXPECT_TRUE(y == *first) << qdq::detail::line_requests_name(choice);
      EXPECT_EQ(params.y_zero_point, first_params->y_zero_point);
    }
  }
}

/// Whether this process measures the requests (QDQ_PREFETCH unset or auto) and has vectorised kernels.
bool measures() {
  const char* env = std::getenv("QDQ_PREFETCH");
  const bool automatic = env == nullptr || env[0] == '\0' || std::string(env) == "auto";
  return automatic && std::string(qdq::x_line_requests("quantize", DataType::kFloat, 1024)) != "none";
}

TEST(PrefetchPolicy, ReportsTheRequestsBySize) {
  if (!measures()) GTEST_SKIP() << "QDQ_PREFETCH is set, or no vectorised kernels";
  // In cache: L1 requests where the loop makes any; 2/4-bit x is unpacked first.
  EXPECT_STREQ(qdq::x_line_requests("quantize", DataType::kFloat, 65536), "L1");
  EXPECT_STREQ(qdq::x_line_requests("range", DataType::kFloat, 65536), "L1");
  EXPECT_STREQ(qdq::x_line_requests("dequantize", DataType::kUint8, 65536), "none");
  EXPECT_STREQ(qdq::x_line_requests("dequantize", DataType::kInt4, uint64_t{1} << 28), "none");
  // From 1 MiB to kMeasuredFromBytes: both.
  EXPECT_STREQ(qdq::x_line_requests("quantize", DataType::kFloat, uint64_t{1} << 20), "L1+L2");
  EXPECT_STREQ(qdq::x_line_requests("dequantize", DataType::kUint8, uint64_t{2} << 20), "L1+L2");
  EXPECT_THROW(qdq::x_line_requests("transpose", DataType::kFloat, 1024), qdq::Error);
}

TEST(PrefetchPolicy, ProbeMeasuresBothChoicesOnce) {
  if (!measures()) GTEST_SKIP() << "QDQ_PREFETCH is set, or no vectorised kernels";
  const std::string chosen = qdq::x_line_requests("range", DataType::kFloat, static_cast<uint64_t>(kLargeElements));
  const qdq::detail::LineRequestProbe probe = qdq::detail::line_request_probe(ReadingLoop::kRange);
  std::printf("[ probe    ] range pass over 32 MiB: %.3f ms with L1 requests, %.3f ms with L1 and L2: %s\n",
              probe.l1_seconds * 1e3, probe.l1_and_l2_seconds * 1e3, chosen.c_str());
  EXPECT_GT(probe.l1_seconds, 0.0);
  EXPECT_GT(probe.l1_and_l2_seconds, 0.0);
  EXPECT_EQ(chosen, probe.l1_seconds < 0.97 * probe.l1_and_l2_seconds ? "L1" : "L1+L2");
  // Once: the same figures again.
  EXPECT_STREQ(qdq::x_line_requests("range", DataType::kFloat, static_cast<uint64_t>(kLargeElements)), chosen.c_str());
  EXPECT_EQ(qdq::detail::line_request_probe(ReadingLoop::kRange).l1_seconds, probe.l1_seconds);
}

}  // namespace
