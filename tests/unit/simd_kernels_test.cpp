// The vectorised kernels against the scalar reference, bit for bit, one test per Highway target
// (SimdKernelsTest.<case>/AVX3, /AVX2, /SSE4; a target compiled in that this CPU cannot run, or a
// build without SIMD kernels, shows as a skipped test that says so): every covered type
// combination, lengths around every vector width, packed outputs and inputs with segment edges
// inside bytes, tasks starting at unaligned (multiple-of-4) offsets, and the special values (NaN,
// ±inf, ±0, subnormals, exact ties, saturation, huge values).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/params.hpp"
#include "plan.hpp"
#include "qdq/qdq.hpp"
#include "types/float_formats.hpp"
#include "types/packing.hpp"
#include "types/type_lists.hpp"

#include "kernels/simd/quotient_route.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "kernels/simd/staged_stores.hpp"

namespace qdq::detail {
namespace {

using T = DataType;
using Shape = std::vector<int64_t>;

int64_t count_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Caller-owned bytes of a tensor of `type` holding `values` (float-valued types) or integer codes.
std::vector<uint8_t> make_float_tensor(T type, const std::vector<float>& values) {
  std::vector<uint8_t> out;
  for (float v : values) {
    if (type == T::kFloat) {
      uint8_t b[4];
      std::memcpy(b, &v, 4);
      out.insert(out.end(), b, b + 4);
    } else {
      const uint16_t h = type == T::kFloat16 ? float_to_half(v) : float_to_bfloat16(v);
      out.push_back(static_cast<uint8_t>(h & 0xFF));
      out.push_back(static_cast<uint8_t>(h >> 8));
    }
  }
  return out;
}

/// Random raw bytes for `elements` elements of `type` (any code is a valid element).
std::vector<uint8_t> random_bytes(T type, int64_t elements, std::mt19937& rng) {
  const uint64_t bytes = storage_bytes(type, static_cast<uint64_t>(elements));
  std::vector<uint8_t> out(bytes);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  // ONNX pads the last byte of a packed tensor with zero bits.
  const int bits = bit_width(type);
  if (bits < 8 && (elements * bits) % 8 != 0) out.back() &= static_cast<uint8_t>((1u << ((elements * bits) % 8)) - 1);
  return out;
}

/// Interesting float32 inputs: specials, ties and boundaries relative to `scale`, random values.
std::vector<float> interesting_values(int64_t n, float scale, std::mt19937& rng) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> specials = {0.0f,
                                       -0.0f,
                                       inf,
                                       -inf,
                                       nan,
                                       -nan,
                                       std::bit_cast<float>(0x7F800001u),
                                       std::bit_cast<float>(0xFFA00000u),
                                       std::numeric_limits<float>::denorm_min(),
                                       -std::numeric_limits<float>::denorm_min(),
                                       1e-40f,
                                       -3e-39f,
                                       std::numeric_limits<float>::min(),
                                       std::numeric_limits<float>::max(),
                                       -std::numeric_limits<float>::max(),
                                       0.5f * scale,
                                       1.5f * scale,
                                       2.5f * scale,
                                       -0.5f * scale,
                                       -2.5f * scale,
                                       127.5f * scale,
                                       128.5f * scale,
                                       -128.5f * scale,
                                       255.5f * scale,
                                       256.0f * scale,
                                       7.5f * scale,
                                       -8.5f * scale,
                                       65535.5f * scale,
                                       1e30f,
                                       -1e30f,
                                       448.0f * scale,
                                       464.0f * scale,
                                       480.0f * scale,
                                       57344.0f * scale,
                                       61440.0f * scale,
                                       6.0f * scale,
                                       7.0f * scale,
                                       0.25f * scale,
                                       0.75f * scale,
                                       1.75f * scale,
                                       1e-3f * scale,
                                       0x1.0p-10f * scale,
                                       0x1.8p-9f * scale};
  std::uniform_real_distribution<float> small(-300.0f, 300.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const int k = pick(rng);
    if (k == 0) {
      x = specials[rng() % specials.size()];
    } else if (k == 1) {
      x = std::bit_cast<float>(static_cast<uint32_t>(rng()));  // any bit pattern
    } else if (k == 2) {
      // exact half-integers times the scale (ties after division when the product is exact)
      x = (static_cast<float>(static_cast<int>(rng() % 600) - 300) + 0.5f) * scale;
    } else if (k == 3) {
      x = std::ldexp(small(rng), -static_cast<int>(rng() % 20)) * scale;
    } else {
      x = small(rng) * scale;
    }
  }
  return v;
}

struct Tensor {
  T type;
  Shape shape;
  std::vector<uint8_t> bytes;
  TensorView view() const { return TensorView{type, shape, bytes.data(), bytes.size()}; }
};

/// Splits [0, elements) into tasks with begins at multiples of 4, as parallel_ranges does but with
/// irregular sizes (multiples of 4 up to `longest`), so that kernels start at unaligned offsets and
/// inside segments.
std::vector<int64_t> task_bounds(int64_t elements, std::mt19937& rng, int64_t longest = 160) {
  std::vector<int64_t> bounds = {0};
  while (bounds.back() < elements) {
    const int64_t step = 4 * (1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(longest / 4)));
    bounds.push_back(std::min(elements, bounds.back() + step));
  }
  return bounds;
}

/// The operator's row-tile tasks for `plan` (RowTileTasks with qdq's grain), or none where they do not apply.
std::vector<RowTileTasks::Task> row_tile_tasks(const Plan& plan, int64_t grain = 32768) {
  std::vector<RowTileTasks::Task> tasks;
  if (!RowTileTasks::applies(plan)) return tasks;
  const RowTileTasks tiles(plan, grain);
  for (int64_t t = 0; t < tiles.count(); ++t) tasks.push_back(tiles.task(t));
  return tasks;
}

std::string describe(T x, T scale, T y, const Shape& shape, int64_t axis, int64_t block, bool sat, bool zp) {
  return "x=" + data_type_name(x) + " scale=" + data_type_name(scale) + " y=" + data_type_name(y) +
         " shape=" + shape_to_string(shape) + " axis=" + std::to_string(axis) + " block=" + std::to_string(block) +
         " saturate=" + std::to_string(sat) + " zp=" + std::to_string(zp);
}

/// The index of the first differing byte, or -1.
int64_t first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<int64_t>(a.size());
}

bool is_float8(T t) { return qdq::detail::is_float8(t); }

/// A failure description built from stream output.
template <class Fn>
std::string describe_stream(Fn&& fn) {
  std::ostringstream o;
  fn(o);
  return o.str();
}

void run_scalar(const QuantizeCall& call, void* y, int64_t begin, int64_t end) { quantize_scalar(call, y, begin, end); }
void run_scalar(const DequantizeCall& call, void* y, int64_t begin, int64_t end) {
  dequantize_scalar(call, y, begin, end);
}
QuantizeKernel kernel_for(int64_t target, const QuantizeCall& call, StoreMode stores = StoreMode::kNormal) {
  return simd::quantize_kernel_for_target(target, call, stores);
}
DequantizeKernel kernel_for(int64_t target, const DequantizeCall& call, StoreMode stores = StoreMode::kNormal) {
  return simd::dequantize_kernel_for_target(target, call, stores);
}

/// The Highway targets this test compares: those compiled in (QDQ_TEST_SIMD_TARGETS, set by
/// tests/CMakeLists.txt from QDQ_SIMD and QDQ_SIMD_TARGETS) and any other this CPU runs, so that
/// no runnable target goes untested if that list is out of date. A build without SIMD kernels gets
/// the one entry "NoSimd", which skips.
std::vector<std::string> compared_target_names() {
  std::vector<std::string> names;
  std::istringstream compiled(QDQ_TEST_SIMD_TARGETS);
  for (std::string name; std::getline(compiled, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  for (const simd::Target& t : simd::available_targets()) {
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  }
  if (names.empty()) names.push_back("NoSimd");
  return names;
}

/// One target's kernels against the scalar reference. Each test counts its comparisons, so that a
/// test whose calls all fell back (no vectorised kernel compared) fails instead of passing.
class SimdKernelsTest : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "NoSimd") GTEST_SKIP() << "built without SIMD kernels (QDQ_SIMD=OFF): nothing to compare";
    for (const simd::Target& t : simd::available_targets()) {
      if (t.name == GetParam()) target_ = t;
    }
    if (target_.bit == 0) GTEST_SKIP() << GetParam() << " is compiled in but this CPU cannot run it";
  }

  /// Expects that this test compared at least `at_least` kernel calls on its target: each test's
  /// count as written (8928 in all, where the test this replaced asked for more than 5000).
  void expect_compared(int64_t at_least) {
    std::printf("[ compared ] %lld kernel calls on %s against the scalar reference\n",
                static_cast<long long>(compared_), target_.name.c_str());
    EXPECT_GE(compared_, at_least) << target_.name;
  }

  /// The target's kernel over tasks [bounds[t], bounds[t + 1]), or over row-tile tasks (`tiles`: then
  /// bounds is unused) against the scalar kernel in one flat task; with tiles, the scalar kernel over
  /// them too.
  template <class Call>
  void expect_target_matches_scalar(const Call& call, int64_t n, const std::vector<int64_t>& bounds,
                                    const std::string& what, const std::vector<RowTileTasks::Task>* tiles = nullptr);
  void expect_per_tensor_matches_scalar(const std::vector<float>& xs, float scale, T y_type, bool with_zp,
                                        std::mt19937& rng, const std::string& what);
  void check_quantize(T x_type, T scale_type, T y_type, const Shape& shape, int64_t axis, int64_t block, bool saturate,
                      bool with_zp, std::mt19937& rng, bool one_task = false);
  void check_dequantize(T x_type, T scale_type, T y_type, const Shape& shape, int64_t axis, int64_t block, bool with_zp,
                        std::mt19937& rng, bool one_task = false, bool one_per_byte = false);
  void check_quantize_with(T x_type, T scale_type, T y_type, const Shape& shape, const Shape& scale_shape, int64_t axis,
                           int64_t block, bool saturate, const std::vector<float>& scales,
                           const std::vector<float>& x_values, std::mt19937& rng);
  void check_quantize_e8m0(T x_type, T y_type, const Shape& shape, const Shape& scale_shape, int64_t axis,
                           int64_t block, bool saturate, const std::vector<uint8_t>& codes, int64_t precision,
                           std::mt19937& rng);
  void check_dequantize_e8m0(T x_type, T y_type, const Shape& shape, const Shape& scale_shape, int64_t axis,
                             int64_t block, bool with_zp, const std::vector<uint8_t>& codes, std::mt19937& rng);

  simd::Target target_{0, ""};
  int64_t compared_ = 0;
};

INSTANTIATE_TEST_SUITE_P(, SimdKernelsTest, testing::ValuesIn(compared_target_names()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

/// Runs the scalar kernel on all n elements and this test's target's kernel task by task (tasks
/// split at `bounds`), once with each StoreMode; expects the same bytes, padding and untouched fill
/// included. The non-temporal run writes y at an address that no cache line aligns (a different
/// one each call), so that the partial lines at both ends of every streamed chunk are exercised.
template <class Call>
void SimdKernelsTest::expect_target_matches_scalar(const Call& call, int64_t n, const std::vector<int64_t>& bounds,
                                                   const std::string& what,
                                                   const std::vector<RowTileTasks::Task>* tiles) {
  std::vector<uint8_t> expected(call.y_bytes, 0xA5);
  run_scalar(call, expected.data(), 0, n);
  // Runs `kernel` over the tasks into y.
  const auto run = [&](auto kernel, uint8_t* y) {
    if (tiles != nullptr) {
      for (const RowTileTasks::Task& task : *tiles) {
        Call tile_call = call;
        tile_call.columns = task.columns;
        kernel(tile_call, y, task.begin, task.end);
      }
      return;
    }
    for (size_t t = 0; t + 1 < bounds.size(); ++t) kernel(call, y, bounds[t], bounds[t + 1]);
  };
  // Each row-tile task writes no byte that holds none of its elements (a task that wrote its
  // neighbours' elements as well would still give the right bytes, racing with them).
  const auto expect_tasks_write_only_their_elements = [&](auto kernel, const std::string& who) {
    const int bits = bit_width(call.y_type);
    const int64_t inner = call.plan.inner;
    for (const RowTileTasks::Task& task : *tiles) {
      std::vector<uint8_t> y(call.y_bytes, 0xA5);
      Call tile_call = call;
      tile_call.columns = task.columns;
      kernel(tile_call, y.data(), task.begin, task.end);
      for (size_t b = 0; b < y.size(); ++b) {
        if (y[b] == 0xA5) continue;
        const int64_t first = bits < 8 ? static_cast<int64_t>(b) * 8 / bits : static_cast<int64_t>(b) / (bits / 8);
        const int64_t last = bits < 8 ? first + 8 / bits : first + 1;
        bool owned = false;
        for (int64_t e = first; e < last && !owned; ++e) {
          owned = e >= task.begin && e < task.end && e % inner >= task.columns.begin && e % inner < task.columns.end;
        }
        ASSERT_TRUE(owned) << who << " " << what << ": the task [" << task.begin << ", " << task.end << ") columns ["
                           << task.columns.begin << ", " << task.columns.end << ") wrote byte " << b;
      }
    }
  };
  if (tiles != nullptr) {
    std::vector<uint8_t> scalar(call.y_bytes, 0xA5);
    const auto scalar_kernel = [](const Call& c, void* y, int64_t begin, int64_t end) { run_scalar(c, y, begin, end); };
    run(scalar_kernel, scalar.data());
    ASSERT_EQ(first_difference(scalar, expected), -1) << "the scalar kernel over row-tile tasks: " << what;
    expect_tasks_write_only_their_elements(scalar_kernel, "the scalar kernel");
  }
  for (const StoreMode stores : {StoreMode::kNormal, StoreMode::kStream}) {
    const bool stream = stores == StoreMode::kStream;
    const auto kernel = kernel_for(target_.bit, call, stores);
    ASSERT_NE(kernel, nullptr) << "no vectorised kernel on " << target_.name << " for " << what;
    // y at every whole-element offset into a line in turn (the loops put their stores on whole
    // vectors, and streaming on whole lines, from wherever y starts): whole elements for 8-bit and
    // wider y, whose stores may assume the element's alignment.
    const size_t element = static_cast<size_t>(std::max(1, bit_width(call.y_type) / 8));
    const size_t shift = element * ((stream ? 1 : 0) + static_cast<size_t>(compared_) % (64 / element - 1));
    std::vector<uint8_t> buffer(call.y_bytes + 128, 0xA5);
    uint8_t* const line = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
    uint8_t* const y = line + shift;
    run(kernel, y);
    if (tiles != nullptr) expect_tasks_write_only_their_elements(kernel, target_.name);
    ++compared_;
    const std::vector<uint8_t> got(y, y + call.y_bytes);
    const int64_t at = first_difference(got, expected);
    ASSERT_EQ(at, -1) << target_.name << " " << what << (stream ? " (non-temporal stores" : " (normal stores")
                      << ", y at line + " << shift << "): at byte " << at << " got "
                      << (at >= 0 && static_cast<size_t>(at) < got.size() ? int{got[static_cast<size_t>(at)]} : -1)
                      << " expected "
                      << (at >= 0 && static_cast<size_t>(at) < expected.size() ? int{expected[static_cast<size_t>(at)]}
                                                                               : -1);
    // Nothing outside y is written.
    ASSERT_TRUE(std::all_of(buffer.data(), y, [](uint8_t b) { return b == 0xA5; })) << what;
    ASSERT_TRUE(std::all_of(y + call.y_bytes, buffer.data() + buffer.size(), [](uint8_t b) { return b == 0xA5; }))
        << what;
  }
}

/// Float32 x quantized per tensor by `scale` to y_type (with a random zero point if with_zp), the
/// target's kernel against the scalar one in random tasks.
void SimdKernelsTest::expect_per_tensor_matches_scalar(const std::vector<float>& xs, float scale, T y_type,
                                                       bool with_zp, std::mt19937& rng, const std::string& what) {
  const auto n = static_cast<int64_t>(xs.size());
  const Shape shape{n};
  const Tensor x{T::kFloat, shape, make_float_tensor(T::kFloat, xs)};
  const Tensor s{T::kFloat, {}, make_float_tensor(T::kFloat, {scale})};
  const Tensor zp{y_type, {}, random_bytes(y_type, 1, rng)};
  QuantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.output_dtype = static_cast<int64_t>(y_type);
  const TensorView xv = x.view();
  const TensorView sv = s.view();
  const TensorView zv = zp.view();
  const QuantizeCall call = plan_quantize(attributes, xv, sv, with_zp ? &zv : nullptr);
  expect_target_matches_scalar(call, n, task_bounds(n, rng),
                               describe(T::kFloat, T::kFloat, y_type, shape, -1, 0, true, with_zp) +
                                   " scale=" + std::to_string(scale) + " " + what);
}

/// Runs the scalar kernel and the target's kernel on one QuantizeLinear call; expects equal bytes.
void SimdKernelsTest::check_quantize(T x_type, T scale_type, T y_type, const Shape& shape, int64_t axis, int64_t block,
                                     bool saturate, bool with_zp, std::mt19937& rng, bool one_task) {
  const int64_t n = count_of(shape);
  Shape scale_shape;
  if (block > 0) {
    scale_shape = shape;
    scale_shape[static_cast<size_t>(axis)] = (shape[static_cast<size_t>(axis)] + block - 1) / block;
  } else if (axis >= 0) {
    scale_shape = {shape[static_cast<size_t>(axis)]};
  }
  const int64_t scale_count = count_of(scale_shape);
  std::vector<float> scales(static_cast<size_t>(scale_count));
  std::uniform_real_distribution<float> sd(0.01f, 3.0f);
  for (auto& s : scales) s = sd(rng);
  if (scale_count > 3) {
    scales[1] = 1.0f;
    scales[2] = -0.37f;  // negative scales are not forbidden
    scales[3] = 3e-5f;
  }
  if (scale_count > 5) scales[5] = 1e-41f;  // subnormal (flushes to 0 in 16-bit scale types)
  Tensor x{x_type, shape, make_float_tensor(x_type, interesting_values(n, scales[0], rng))};
  Tensor s{scale_type, scale_shape, make_float_tensor(scale_type, scales)};
  Tensor zp{y_type, scale_shape, {}};
  const bool is_float8 = qdq::detail::is_float8(y_type);
  if (with_zp) {
    zp.bytes = random_bytes(y_type, scale_count, rng);
    if (is_float8) std::fill(zp.bytes.begin(), zp.bytes.end(), 0);
  }
  QuantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis < 0 ? 0 : axis;
  if (block > 0) attributes.block_size = block;
  if (is_float8) attributes.saturate = saturate ? 1 : 0;
  if (!with_zp) attributes.output_dtype = static_cast<int64_t>(y_type);
  const TensorView xv = x.view();
  const TensorView sv = s.view();
  const TensorView zv = zp.view();
  const QuantizeCall call = plan_quantize(attributes, xv, sv, with_zp ? &zv : nullptr);

  // Both quotient routes on every target, whichever the target measured faster.
  const std::vector<int64_t> bounds = one_task ? std::vector<int64_t>{0, n} : task_bounds(n, rng);
  for (const simd::QuotientRoute route : {simd::QuotientRoute::kDivide, simd::QuotientRoute::kReciprocal}) {
    const simd::ScopedQuotientRoute forced(route);
    expect_target_matches_scalar(call, n, bounds,
                                 describe(x_type, scale_type, y_type, shape, axis, block, saturate, with_zp) +
                                     (one_task ? " one task" : "") + " route " + simd::quotient_route_name(route));
    // And in row-tile tasks, where they apply: a grain of 8192 cuts rows of 2052 into runs of 1024
    // columns (qdq's, 32768, takes 4096).
    const std::vector<RowTileTasks::Task> tiles = row_tile_tasks(call.plan, 8192);
    if (!tiles.empty()) {
      expect_target_matches_scalar(call, n, bounds,
                                   describe(x_type, scale_type, y_type, shape, axis, block, saturate, with_zp) +
                                       " row-tile tasks route " + simd::quotient_route_name(route),
                                   &tiles);
    }
  }
}

void SimdKernelsTest::check_dequantize(T x_type, T scale_type, T y_type, const Shape& shape, int64_t axis,
                                       int64_t block, bool with_zp, std::mt19937& rng, bool one_task,
                                       bool one_per_byte) {
  const int64_t n = count_of(shape);
  Shape scale_shape;
  if (block > 0) {
    scale_shape = shape;
    scale_shape[static_cast<size_t>(axis)] = (shape[static_cast<size_t>(axis)] + block - 1) / block;
  } else if (axis >= 0) {
    scale_shape = {shape[static_cast<size_t>(axis)]};
  }
  const int64_t scale_count = count_of(scale_shape);
  std::vector<float> scales(static_cast<size_t>(scale_count));
  std::uniform_real_distribution<float> sd(-3.0f, 3.0f);
  for (auto& s : scales) s = sd(rng);
  // Includes NaNs with payloads (one signalling), whose payload 16-bit outputs keep.
  const float special_scales[] = {1e-40f,
                                  3e38f,
                                  std::numeric_limits<float>::infinity(),
                                  0.0f,
                                  1.0f,
                                  1e-30f,
                                  70000.0f,
                                  std::bit_cast<float>(0x7FA12345u),
                                  std::bit_cast<float>(0xFFC0A000u)};
  for (size_t k = 1; k < scales.size() && k <= 9; ++k) scales[k] = special_scales[k - 1];
  // And in the last blocks, which a large call's kernels reach in a later piece than the first.
  for (size_t k = 1; scales.size() > 64 && k <= 9; ++k) scales[scales.size() - k] = special_scales[k - 1];
  if (is_float8(x_type)) {
    // NaN × NaN keeps one of the two payloads, and which one the scalar kernel keeps depends on how
    // the compiler ordered its multiply operands: not a defined result, so not compared.
    for (float& v : scales) {
      if (std::isnan(v)) v = 2.0f;
    }
  }
  Tensor x{x_type, shape, random_bytes(x_type, n, rng)};
  Tensor s{scale_type, scale_shape, make_float_tensor(scale_type, scales)};
  Tensor zp{x_type, scale_shape, {}};
  if (with_zp) zp.bytes = random_bytes(x_type, scale_count, rng);
  DequantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis < 0 ? 0 : axis;
  if (block > 0) attributes.block_size = block;
  attributes.output_dtype = static_cast<int64_t>(y_type);
  TensorView xv = x.view();
  const TensorView sv = s.view();
  const TensorView zv = zp.view();
  // x's codes one per byte (CodeLayout::kOnePerByte), each byte's unused high bits random: the scalar
  // kernel must read the same values as from the packed codes, and every target as the scalar one.
  std::vector<uint8_t> items;
  const int bits = bit_width(x_type);
  if (one_per_byte) {
    items.resize(static_cast<size_t>(n));
    qdq::detail::unpack_codes(x.bytes.data(), bits, 0, n, items.data());
    for (uint8_t& item : items) item = static_cast<uint8_t>(item | (rng() << bits));
    const DequantizeCall packed_call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
    xv = TensorView{x_type, shape, items.data(), items.size(), qdq::CodeLayout::kOnePerByte};
    const DequantizeCall call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
    std::vector<uint8_t> from_packed(packed_call.y_bytes, 0xA5), from_items(call.y_bytes, 0xA5);
    run_scalar(packed_call, from_packed.data(), 0, n);
    run_scalar(call, from_items.data(), 0, n);
    ASSERT_EQ(first_difference(from_items, from_packed), -1)
        << "the scalar kernel, codes one per byte against packed: "
        << describe(x_type, scale_type, y_type, shape, axis, block, false, with_zp);
  }
  const DequantizeCall call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
  const std::string layout = one_per_byte ? " one code per byte" : "";

  expect_target_matches_scalar(call, n, one_task ? std::vector<int64_t>{0, n} : task_bounds(n, rng),
                               describe(x_type, scale_type, y_type, shape, axis, block, false, with_zp) + layout +
                                   (one_task ? " one task" : ""));
  // And in row-tile tasks, where they apply: a grain of 8192 cuts rows of 2052 into runs of 1024
  // columns (qdq's, 32768, takes 4096).
  const std::vector<RowTileTasks::Task> tiles = row_tile_tasks(call.plan, 8192);
  if (!tiles.empty()) {
    expect_target_matches_scalar(
        call, n, {0, n},
        describe(x_type, scale_type, y_type, shape, axis, block, false, with_zp) + layout + " row-tile tasks", &tiles);
  }
}

constexpr qdq::detail::TypeList kQuantizedTypes = qdq::detail::kQuantizedTypes;
// The float types QuantizeLinear's x may be (FLOAT, FLOAT16, BFLOAT16).
constexpr qdq::detail::TypeList kFloatTypes = qdq::detail::types_where([](const qdq::detail::TypeInfo& info) {
  return qdq::detail::is_division_type(info.type) &&
         info.since[static_cast<int>(qdq::detail::TypeRole::kQuantizeX)] != 0;
});

/// Row-tile tasks pay for short rows only where the chosen kernel shares a tile's reciprocals between
/// its rows (operators.cpp asks quantize_shares_row_reciprocals): float32 division by float32 scales
/// into integers of at most 8 bits, on a target whose measured route is the reciprocal one.
TEST(SimdTargetsTest, RowReciprocalsAreSharedOnlyWhereTheKernelKeepsThem) {
  const auto shares = [](T x_type, T scale_type, T y_type, bool force_scalar) {
    const Shape shape{64, 64}, scale_shape{2, 64};
    const Tensor x{x_type, shape, make_float_tensor(x_type, std::vector<float>(64 * 64, 1.5f))};
    const Tensor s{scale_type, scale_shape, make_float_tensor(scale_type, std::vector<float>(2 * 64, 0.3f))};
    QuantizeLinearAttributes attributes;
    attributes.axis = 0;
    attributes.block_size = 32;
    attributes.output_dtype = static_cast<int64_t>(y_type);
    const TensorView xv = x.view(), sv = s.view();
    return quantize_shares_row_reciprocals(plan_quantize(attributes, xv, sv, nullptr), force_scalar);
  };
  const bool reciprocal =
      simd::best_target() != 0 && simd::quotient_route(simd::best_target(), simd::ReciprocalKind::kRoundingCheck) ==
                                      simd::QuotientRoute::kReciprocal;
  for (T y : {T::kInt8, T::kUint8, T::kInt4, T::kUint4, T::kInt2, T::kUint2}) {
    EXPECT_EQ(shares(T::kFloat, T::kFloat, y, false), reciprocal) << data_type_name(y);
    EXPECT_EQ(shares(T::kFloat16, T::kFloat, y, false), reciprocal) << data_type_name(y);  // divides in float32
    EXPECT_FALSE(shares(T::kFloat, T::kFloat, y, true)) << data_type_name(y);              // the scalar kernel
    EXPECT_FALSE(shares(T::kFloat, T::kFloat16, y, false)) << data_type_name(y);           // divides in float16
    EXPECT_FALSE(shares(T::kBFloat16, T::kBFloat16, y, false)) << data_type_name(y);
  }
  for (T y : {T::kInt16, T::kUint16, T::kFloat8E4M3FN, T::kFloat4E2M1})
    EXPECT_FALSE(shares(T::kFloat, T::kFloat, y, false)) << data_type_name(y);
}

TEST(SimdTargetsTest, TargetsAreListed) {
  for (const simd::Target& t : simd::available_targets()) std::printf("[ target   ] %s\n", t.name.c_str());
  if (simd::available_targets().empty()) GTEST_SKIP() << "no SIMD target on this CPU";
  EXPECT_EQ(simd::best_target(), simd::available_targets().front().bit);
}

TEST_P(SimdKernelsTest, QuantizePerTensorEveryLength) {
  std::mt19937 rng(1);
  for (T y : kQuantizedTypes) {
    for (int64_t len = 1; len <= 130; ++len) {
      check_quantize(T::kFloat, T::kFloat, y, {len}, -1, 0, true, len % 2 == 0, rng);
    }
    for (int64_t len : {1000, 4099, 2 * 1024 + 3})
      check_quantize(T::kFloat, T::kFloat, y, {len}, -1, 0, true, true, rng);
  }
  expect_compared(1729);
}

TEST_P(SimdKernelsTest, QuantizeEveryTypeCombinationAndGranularity) {
  std::mt19937 rng(2);
  for (T x : kFloatTypes) {
    for (T s : kFloatTypes) {
      // The vectorised kernels cover division in float32, in x's own 16-bit type, and in either
      // 16-bit type for float32 x (x rounded to it first).
      if (!(s == T::kFloat || s == x || x == T::kFloat)) continue;
      for (T y : kQuantizedTypes) {
        for (int sat = 0; sat <= (is_float8(y) ? 1 : 0); ++sat) {
          const bool saturate = is_float8(y) ? sat == 1 : true;
          for (int64_t len : {1, 7, 9, 17, 33, 67, 131})
            check_quantize(x, s, y, {len}, -1, 0, saturate, len % 3 != 0, rng);
          check_quantize(x, s, y, {5, 37}, 0, 0, saturate, true, rng);   // per-axis, inner 37 (step 0)
          check_quantize(x, s, y, {3, 43}, 1, 0, saturate, true, rng);   // per-axis, axis last (step 1)
          check_quantize(x, s, y, {4, 39}, 1, 3, saturate, true, rng);   // blocked, last axis, odd block
          check_quantize(x, s, y, {3, 64}, 1, 32, saturate, true, rng);  // blocked, last axis, 32
          // Blocks that tile the rows (whole groups of four vectors on every target, or on some).
          check_quantize(x, s, y, {4, 128}, 1, 64, saturate, true, rng);
          check_quantize(x, s, y, {3, 192}, 1, 96, saturate, false, rng);
          check_quantize(x, s, y, {7, 21}, 0, 2, saturate, true, rng);      // blocked along axis 0 (step 1)
          check_quantize(x, s, y, {2, 5, 13}, 1, 3, saturate, false, rng);  // blocked, middle axis
        }
      }
    }
  }
  expect_compared(1275);
}

/// 2/4-bit x in runs long enough for the unpacking at the target's full width (UnpackWholeBytesWide: 256 packed bytes
/// and more), with and without the byte lookup (signed codes, and codes less a per-tensor zero point, take it), and the
/// 128-bit and scalar rests after them: per tensor in one task and in many, blocked along the last axis and along axis
/// 0.
TEST_P(SimdKernelsTest, LongRunsOfPackedCodes) {
  std::mt19937 rng(41);
  int64_t calls = 0;
  for (const T x : {T::kInt4, T::kUint4, T::kInt2, T::kUint2}) {
    for (const bool zp : {false, true}) {
      for (const int64_t n : {int64_t{4099}, int64_t{8192 + 52}}) {
        check_dequantize(x, T::kFloat, T::kFloat, {n}, -1, 0, zp, rng, true);
        ++calls;
      }
      check_dequantize(x, T::kFloat, T::kFloat16, {3, 5000}, -1, 0, zp, rng);
      check_dequantize(x, T::kFloat, T::kFloat16, {6, 4096}, 1, 32, zp, rng, true);
      check_dequantize(x, T::kFloat, T::kFloat, {64, 2048}, 0, 32, zp, rng, true);
      calls += 3;
    }
  }
  expect_compared(calls);
}

TEST_P(SimdKernelsTest, LargePerAxisAndBlocked) {
  std::mt19937 rng(3);
  for (T y : {T::kUint8, T::kInt8, T::kInt4, T::kUint4, T::kFloat8E4M3FN, T::kInt2}) {
    check_quantize(T::kFloat, T::kFloat, y, {3, 1500}, 1, 0, true, true, rng);
    check_quantize(T::kFloat, T::kFloat, y, {2, 3001}, 1, 32, true, true, rng);
    check_quantize(T::kFloat, T::kFloat, y, {65, 77}, 0, 32, true, true, rng);
    check_quantize(T::kFloat, T::kFloat, y, {40, 256}, 1, 64, true, true,
                   rng);  // uniform blocks, tasks cut inside blocks
  }
  // One task, so that whole chunks lie in one segment whose scales step by one (read in place), or
  // hold long such segments next to short ones (expanded); per-axis along the last axis too.
  for (T y : kQuantizedTypes) {
    for (T x : {T::kFloat, T::kBFloat16}) {
      const bool with_zp = !is_float8(y);
      check_quantize(x, T::kFloat, y, {70, 2101}, 0, 32, false, with_zp, rng, true);
      check_quantize(x, T::kFloat, y, {40, 300}, 0, 7, true, with_zp, rng, true);
      check_quantize(x, T::kFloat, y, {5, 701}, 1, 0, true, false, rng, true);
    }
  }
  check_quantize(T::kFloat16, T::kFloat16, T::kInt8, {70, 2101}, 0, 32, false, true, rng, true);  // divides in float16
  // float32 x rounded to the 16-bit scale type, which it divides in.
  check_quantize(T::kFloat, T::kFloat16, T::kInt4, {70, 2101}, 0, 32, true, true, rng, true);
  check_quantize(T::kFloat, T::kBFloat16, T::kFloat8E4M3FN, {70, 2101}, 0, 32, false, false, rng, true);
  // Rows a multiple of 4 long and past a tile: row-tile tasks as well, here 1024 columns of up to 8
  // rows of a block (a ragged last block of rows and column run; blocks along a middle axis, longer
  // than it).
  for (T y : kQuantizedTypes) {
    check_quantize(T::kFloat, T::kFloat, y, {37, 2052}, 0, 32, true, !is_float8(y), rng);
    check_quantize(T::kBFloat16, T::kFloat, y, {2, 9, 1500}, 1, 40, false, !is_float8(y), rng);
  }
  check_quantize(T::kFloat16, T::kFloat16, T::kUint4, {37, 2052}, 0, 32, true, true, rng);
  for (T x : {T::kUint8, T::kInt8, T::kInt4, T::kUint4, T::kFloat8E4M3FN, T::kInt2}) {
    for (T y : {T::kFloat, T::kFloat16}) {
      check_dequantize(x, T::kFloat, y, {40, 256}, 1, 64, !is_float8(x), rng);
      check_dequantize(x, T::kFloat, y, {65, 77}, 0, 32, !is_float8(x), rng);
      check_dequantize(x, T::kFloat, y, {3, 1500}, 1, 0, !is_float8(x), rng);
    }
    // One task, so that whole chunks lie in one segment whose scales step by one (read in place),
    // or hold long such segments next to short ones (expanded); per-axis along the last axis too.
    for (T y : {T::kFloat, T::kFloat16, T::kBFloat16}) {
      check_dequantize(x, T::kFloat, y, {70, 2101}, 0, 32, !is_float8(x), rng, true);
      check_dequantize(x, T::kFloat, y, {40, 300}, 0, 7, !is_float8(x), rng, true);
      check_dequantize(x, T::kFloat, y, {5, 701}, 1, 0, !is_float8(x), rng, true);
    }
  }
  // Rows a multiple of 4 long and past a tile: the operator's row-tile tasks as well.
  for (T x : kQuantizedTypes) {
    check_dequantize(x, T::kFloat, T::kFloat, {37, 2052}, 0, 32, !is_float8(x), rng);
    check_dequantize(x, T::kFloat, T::kBFloat16, {2, 9, 1500}, 1, 40, !is_float8(x), rng);
  }
  check_dequantize(T::kInt4, T::kFloat16, T::kFloat16, {37, 2052}, 0, 32, true, rng);
  for (T x : {T::kFloat4E2M1, T::kInt16, T::kUint16, T::kUint2, T::kFloat8E5M2}) {
    check_dequantize(x, T::kFloat, T::kFloat, {70, 2101}, 0, 32, !is_float8(x), rng, true);
    check_dequantize(x, T::kFloat, T::kBFloat16, {40, 300}, 0, 7, !is_float8(x), rng, true);
    check_dequantize(x, T::kFloat, T::kFloat16, {5, 701}, 1, 0, false, rng, true);
  }
  expect_compared(208);
}

const T kDequantizedTypes[] = {T::kFloat, T::kFloat16, T::kBFloat16};

TEST_P(SimdKernelsTest, DequantizePerTensorEveryLength) {
  std::mt19937 rng(4);
  for (T x : kQuantizedTypes) {
    for (int64_t len = 1; len <= 130; ++len) {
      check_dequantize(x, T::kFloat, T::kFloat, {len}, -1, 0, !is_float8(x) && len % 2 == 0, rng);
    }
    for (int64_t len : {1000, 4099}) check_dequantize(x, T::kFloat, T::kFloat, {len}, -1, 0, !is_float8(x), rng);
  }
  expect_compared(1716);
}

/// Per-tensor dequantization with the scales and zero points its paths treat apart (FLOAT4E2M1's
/// table of signed products holds only for finite scales and a zero point of +0): NaN scales with
/// payloads, ±inf, ±0, subnormal and overflowing scales; zero points absent, zero, with only the
/// low nibble's top bit set (FLOAT4E2M1's −0, int4's −8) or random; whole and partial vectors.
TEST_P(SimdKernelsTest, DequantizePerTensorSpecialScalesAndZeroPoints) {
  std::mt19937 rng(21);
  const float inf = std::numeric_limits<float>::infinity();
  const float scales[] = {std::bit_cast<float>(0x7FA12345u),
                          std::bit_cast<float>(0xFFC0A000u),
                          inf,
                          -inf,
                          0.0f,
                          -0.0f,
                          1e-40f,
                          3e38f,
                          -2.5f,
                          0.75f};
  int64_t calls = 0;
  for (T x : kQuantizedTypes) {
    for (T y : kDequantizedTypes) {
      for (float scale : scales) {
        // NaN x NaN keeps either payload (DequantizeEveryTypeCombinationAndGranularity says why).
        if (is_float8(x) && std::isnan(scale)) continue;
        for (int zp_kind = 0; zp_kind < (is_float8(x) ? 2 : 4); ++zp_kind) {
          for (int64_t len : {37, 4099}) {
            const Tensor xt{x, {len}, random_bytes(x, len, rng)};
            const Tensor st{T::kFloat, {}, make_float_tensor(T::kFloat, {scale})};
            Tensor zt{x, {}, random_bytes(x, 1, rng)};
            if (zp_kind == 1 || zp_kind == 2) std::fill(zt.bytes.begin(), zt.bytes.end(), uint8_t{0});
            if (zp_kind == 2) zt.bytes[0] = 0x08;
            DequantizeLinearAttributes attributes;
            attributes.opset = 25;
            attributes.output_dtype = static_cast<int64_t>(y);
            const TensorView xv = xt.view();
            const TensorView sv = st.view();
            const TensorView zv = zt.view();
            const DequantizeCall call = plan_dequantize(attributes, xv, sv, zp_kind == 0 ? nullptr : &zv);
            expect_target_matches_scalar(call, len, task_bounds(len, rng),
                                         describe(x, T::kFloat, y, {len}, -1, 0, false, zp_kind != 0) + " scale " +
                                             std::to_string(scale) + " zero point kind " + std::to_string(zp_kind));
            ++calls;
          }
        }
      }
    }
  }
  expect_compared(calls);
}

TEST_P(SimdKernelsTest, DequantizeEveryTypeCombinationAndGranularity) {
  std::mt19937 rng(5);
  for (T x : kQuantizedTypes) {
    const bool zp = !is_float8(x);
    for (T s : kFloatTypes) {
      for (T y : kDequantizedTypes) {
        for (int64_t len : {1, 7, 9, 17, 33, 67, 131}) check_dequantize(x, s, y, {len}, -1, 0, zp && len % 3 != 0, rng);
        check_dequantize(x, s, y, {5, 37}, 0, 0, zp, rng);
        check_dequantize(x, s, y, {3, 43}, 1, 0, zp, rng);
        check_dequantize(x, s, y, {4, 39}, 1, 3, zp, rng);
        check_dequantize(x, s, y, {3, 64}, 1, 32, zp, rng);
        check_dequantize(x, s, y, {4, 128}, 1, 64, zp, rng);
        check_dequantize(x, s, y, {3, 192}, 1, 96, false, rng);
        check_dequantize(x, s, y, {7, 21}, 0, 2, zp, rng);
        check_dequantize(x, s, y, {2, 5, 13}, 1, 3, zp, rng);
      }
    }
  }
  expect_compared(1755);
}

// 2/4-bit x given one code per byte (ml_dtypes' layout), with random high bits: the same values as
// packed, on every path (per tensor with and without a zero point, the FLOAT4E2M1 tables' cases,
// per axis, blocks of whole vectors, uniform and ragged blocks, blocks along the first axis in
// row tiles), at lengths that end inside a packed byte and in calls large enough for every piece.
TEST_P(SimdKernelsTest, DequantizeCodesGivenOnePerByte) {
  std::mt19937 rng(61);
  for (T x : kQuantizedTypes) {
    if (bit_width(x) >= 8) continue;
    const bool zp = qdq::detail::is_quantized_integer(x);
    for (T y : kDequantizedTypes) {
      for (int64_t len : {1, 3, 7, 33, 131, 4099}) {
        check_dequantize(x, T::kFloat, y, {len}, -1, 0, false, rng, false, true);
        if (zp) check_dequantize(x, T::kFloat, y, {len}, -1, 0, true, rng, false, true);
      }
      check_dequantize(x, T::kFloat, y, {5, 37}, 0, 0, zp, rng, false, true);
      check_dequantize(x, T::kBFloat16, y, {3, 43}, 1, 0, zp, rng, false, true);
      check_dequantize(x, T::kFloat, y, {4, 39}, 1, 3, zp, rng, false, true);
      check_dequantize(x, T::kFloat, y, {6, 256}, 1, 32, zp, rng, false, true);
      check_dequantize(x, T::kFloat16, y, {3, 192}, 1, 96, zp, rng, false, true);
      check_dequantize(x, T::kFloat, y, {7, 21}, 0, 2, zp, rng, false, true);
      check_dequantize(x, T::kFloat, y, {64, 2052}, 0, 32, zp, rng, false, true);
      check_dequantize(x, T::kFloat, y, {8, 16384}, 1, 32, zp, rng, true, true);
      check_dequantize(x, T::kFloat, y, {65536}, -1, 0, zp, rng, true, true);
    }
  }
  expect_compared(624);
}

TEST_P(SimdKernelsTest, DequantizeEveryCodeOfEveryType) {
  std::mt19937 rng(6);
  for (T x : kQuantizedTypes) {
    for (T y : kDequantizedTypes) {
      // 4096 random codes cover every 2/4/8-bit code many times and most 16-bit ones.
      check_dequantize(x, T::kFloat, y, {4096}, -1, 0, false, rng);
      check_dequantize(x, T::kBFloat16, y, {2, 2048}, 1, 64, !is_float8(x), rng);
    }
  }
  expect_compared(78);
}

/// DequantizeLinear (opset 25) of xt into y along `axis` (the last by default), with float32 scales
/// st and no zero point: per tensor for a scalar st, else in blocks of `block`. The call refers to xt
/// and st.
DequantizeCall plan_blocked_dequantize(const Tensor& xt, const Tensor& st, T y, int64_t block, int64_t axis = -1) {
  DequantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis >= 0 ? axis : static_cast<int64_t>(xt.shape.size()) - 1;
  if (block > 0) attributes.block_size = block;
  attributes.output_dtype = static_cast<int64_t>(y);
  const TensorView xv = xt.view();
  const TensorView sv = st.view();
  return plan_dequantize(attributes, xv, sv, nullptr);
}

/// Every float8 code in every lane of a loop step (the AVX2 kernels decode FLOAT8E5M2 and FNUZ 32
/// codes at a time on bytes, then interleave them within 128-bit blocks): code (65q + r) mod 256 at
/// element 64q + r meets every code at every offset below 64, per tensor and in blocks of 32, with
/// and without the decode's factor folded into the scales (2^121 cannot take it).
TEST_P(SimdKernelsTest, DequantizeFloat8EveryCodeInEveryLane) {
  std::mt19937 rng(15);
  std::vector<uint8_t> codes(64 * 256);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>((i / 64 * 65 + i % 64) % 256);
  const auto check = [&](T x, T y, const Shape& shape, const Shape& scale_shape, const std::vector<float>& scales,
                         int64_t block) {
    const Tensor xt{x, shape, codes};
    const Tensor st{T::kFloat, scale_shape, make_float_tensor(T::kFloat, scales)};
    const DequantizeCall call = plan_blocked_dequantize(xt, st, y, block);
    const int64_t n = count_of(shape);
    const std::string what =
        describe(x, T::kFloat, y, shape, static_cast<int64_t>(shape.size()) - 1, block, false, false);
    expect_target_matches_scalar(call, n, {0, n}, what);
    expect_target_matches_scalar(call, n, task_bounds(n, rng), what + " tasks");
  };
  for (const T x : {T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ}) {
    for (const T y : kDequantizedTypes) {
      for (const float scale : {1.0f, 0.37f, 0x1p121f}) check(x, y, {64 * 256}, {}, {scale}, 0);
      std::vector<float> blocks(64 * 256 / 32);
      for (size_t k = 0; k < blocks.size(); ++k) blocks[k] = 0.25f + static_cast<float>(k % 7) * 0.125f;
      check(x, y, {64, 256}, {64, 8}, blocks, 32);
    }
  }
  expect_compared(4 * 3 * 4 * 2);
}

/// float8 DequantizeLinear with scales near the top of float32's range: the kernels fold the power of
/// two their float8 decode multiplies by (2^8, 2^7) into a scale only where the product stays finite,
/// so scales from 2^119 up take both routes, per tensor and per block (one piece with a scale that
/// cannot take the factor, one whose scales all can), along the last axis and the first (rows of
/// scales read in place); in random tasks and in one.
TEST_P(SimdKernelsTest, DequantizeFloat8ScalesNearTheTopOfTheRange) {
  std::mt19937 rng(14);
  const float max = std::numeric_limits<float>::max();
  const std::vector<float> scales = {3e38f,
                                     -max,
                                     0x1p120f,
                                     0x1p119f,
                                     0x1.fffffep119f,
                                     -0x1p121f,
                                     0x1.fffffep120f,
                                     std::numeric_limits<float>::infinity(),
                                     1e-40f,
                                     std::numeric_limits<float>::denorm_min(),
                                     1.0f};
  const auto check = [&](T x, T y, const Shape& shape, const Shape& scale_shape, const std::vector<float>& values,
                         int64_t block, int64_t axis = -1) {
    const int64_t n = count_of(shape);
    const Tensor xt{x, shape, random_bytes(x, n, rng)};
    const Tensor st{T::kFloat, scale_shape, make_float_tensor(T::kFloat, values)};
    const DequantizeCall call = plan_blocked_dequantize(xt, st, y, block, axis);
    const std::string what = describe(x, T::kFloat, y, shape, axis >= 0 ? axis : static_cast<int64_t>(shape.size()) - 1,
                                      block, false, false) +
                             " scale " + std::to_string(values[0]);
    expect_target_matches_scalar(call, n, task_bounds(n, rng), what);
    expect_target_matches_scalar(call, n, {0, n}, what + " one task");
  };
  for (const T x : {T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ}) {
    for (const T y : kDequantizedTypes) {
      for (const float scale : scales) check(x, y, {4096}, {}, {scale}, 0);
      // 64 blocks of 32 per row: the first row's pieces hold 2^121, the second's do not.
      std::vector<float> blocks(128);
      for (size_t k = 0; k < blocks.size(); ++k) blocks[k] = k < 64 ? scales[k % scales.size()] : 0x1p119f;
      check(x, y, {2, 2048}, {2, 64}, blocks, 32);
      // Blocks of 8 rows along the first axis, whose rows of scales are read in place: the second
      // holds 2^121 and more, the others can take the decode's factor.
      std::vector<float> rows(4 * 520, 0x1p119f);
      for (size_t k = 0; k < 520; ++k) rows[520 + k] = scales[k % scales.size()];
      for (size_t k = 0; k < 520; ++k) rows[2 * 520 + k] = static_cast<float>(k + 1) * 0.01f;
      check(x, y, {32, 520}, {4, 520}, rows, 8, 0);
    }
  }
  expect_compared(4 * 3 * 13 * 2);
}

/// Blocks along the last axis of every length the kernels treat apart: a power of two of one, two or
/// three vectors on some target (4 .. 32: one flat loop with each vector's block broadcast), of four
/// vectors or more (64, 128: a loop per block), rows they tile, ragged rows (the last block short, the
/// general path) and odd row lengths; packed outputs and inputs, zero points present and absent,
/// float32, float16 and bfloat16 scales; tasks cut inside blocks and one task.
TEST_P(SimdKernelsTest, BlocksAlongTheLastAxis) {
  std::mt19937 rng(12);
  for (int64_t block : {4, 8, 16, 32, 64, 128}) {
    // Tiling rows (3 and 17 blocks), a ragged row (one element over), an odd ragged row.
    const Shape shapes[] = {{5, 3 * block}, {3, 17 * block}, {3, 2 * block + 1}, {1, 3 * block - 3}};
    for (const Shape& shape : shapes) {
      for (T y : kQuantizedTypes) {
        for (const T x : {T::kFloat, T::kFloat16, T::kBFloat16}) {
          // float32 scales, and the x's own 16-bit type (divided in it); float32 x with float16
          // scales (x rounded to float16 and divided in it) as well.
          for (const T s : {T::kFloat, x == T::kFloat ? T::kFloat16 : x}) {
            if (x != T::kFloat && s == T::kFloat && y != T::kInt4) continue;
            if (x == T::kFloat && s != T::kFloat && y != T::kInt4 && y != T::kFloat8E4M3FN) continue;
            const bool zp = !is_float8(y) && (shape[0] + block) % 2 == 1;
            check_quantize(x, s, y, shape, 1, block, true, zp, rng, shape[0] == 3);
            if (x == T::kFloat && s == T::kFloat && !is_float8(y))
              check_quantize(x, s, y, shape, 1, block, true, !zp, rng, shape[0] != 3);
          }
        }
      }
      for (T x : kQuantizedTypes) {
        for (T y : kDequantizedTypes) {
          for (T s : kFloatTypes) {
            if (s != T::kFloat && y != T::kFloat) continue;
            const bool zp = !is_float8(x) && (shape[0] + block) % 2 == 1;
            check_dequantize(x, s, y, shape, 1, block, zp, rng, shape[0] == 3);
            if (s == T::kFloat && y == T::kFloat && !is_float8(x))
              check_dequantize(x, s, y, shape, 1, block, !zp, rng, shape[0] != 3);
          }
        }
      }
    }
  }
  expect_compared(2976);
}

/// Calls of a few MiB blocked along the last axis (the LLM weight layout) in one task, blocks of 4 to
/// 32 and 128: those of one to eight vectors take the vector-block path, longer ones the uniform-block
/// path, both in pieces of many blocks that stream through a stage in the kStream run. Both store
/// modes against the scalar kernel, bit for bit.
TEST_P(SimdKernelsTest, BlockedLastLargeCallsInBothStoreModes) {
  std::mt19937 rng(13);
  const Shape shape{1024, 1024};
  for (const int64_t block : {4, 8, 16, 32, 128}) {
    for (const T y : {T::kInt4, T::kUint4, T::kUint8, T::kFloat8E4M3FN}) {
      check_quantize(T::kFloat, T::kFloat, y, shape, 1, block, true, !is_float8(y), rng, true);
    }
    for (const T x : {T::kInt4, T::kUint8, T::kFloat8E4M3FN}) {
      check_dequantize(x, T::kFloat, T::kFloat, shape, 1, block, !is_float8(x), rng, true);
    }
    // FLOAT4E2M1 blocks take the table, or the unpacked loop where a scale is not finite or a zero
    // point not +0 (in the first and the last piece).
    check_dequantize(T::kFloat4E2M1, T::kFloat, T::kFloat, shape, 1, block, false, rng, true);
    check_dequantize(T::kFloat4E2M1, T::kFloat, T::kFloat, shape, 1, block, true, rng, true);
    check_dequantize(T::kInt4, T::kFloat, T::kFloat16, shape, 1, block, true, rng, true);
  }
  expect_compared(140);
}

/// Blocks of whole vectors along the last axis into a float32 y off a vector boundary, written
/// through the stage and directly (staged_stores.hpp: each target measures which is faster, so
/// both are forced here, whichever this CPU chose), against the scalar kernel: y starts at every
/// element offset into a line in turn (expect_target_matches_scalar).
TEST_P(SimdKernelsTest, BlockedDequantizeStagedAndDirectStores) {
  std::mt19937 rng(17);
  const Shape shape{16, 1024};
  for (const simd::StagedStores choice : {simd::StagedStores::kStaged, simd::StagedStores::kDirect}) {
    const simd::ScopedStagedStores forced(choice);
    for (const int64_t block : {16, 32, 64}) {
      for (const T x : {T::kInt4, T::kUint8, T::kFloat8E4M3FN, T::kFloat4E2M1}) {
        for (int round = 0; round < 3; ++round) {
          check_dequantize(x, T::kFloat, T::kFloat, shape, 1, block, is_quantized_integer(x), rng, round == 0);
        }
      }
    }
  }
  expect_compared(2 * 3 * 4 * 3);
}

/// Every float32 bit pattern whose top 16 bits are given, and more: exhaustive over the sign,
/// exponent and top mantissa bits, so every rounding boundary of every narrow format is crossed.
TEST_P(SimdKernelsTest, QuantizeExhaustiveHighBitsWithUnitScale) {
  std::mt19937 rng(7);
  const int64_t n = 1 << 18;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    // 16 high bits exhaustively, 2 low-order variations: exactly the boundary, or random low bits.
    const uint32_t high = static_cast<uint32_t>(i >> 2) << 16;
    const uint32_t low = (i & 3) == 0   ? 0u
                         : (i & 3) == 1 ? 0x8000u
                         : (i & 3) == 2 ? 0x7FFFu
                                        : (static_cast<uint32_t>(rng()) & 0xFFFFu);
    values[static_cast<size_t>(i)] = std::bit_cast<float>(high | low);
  }
  const Tensor x{T::kFloat, {n}, make_float_tensor(T::kFloat, values)};
  for (float scale_value : {1.0f, 0.375f, 3.0f}) {
    const Tensor s{T::kFloat, {}, make_float_tensor(T::kFloat, {scale_value})};
    for (T y : kQuantizedTypes) {
      for (int sat = 0; sat <= (is_float8(y) ? 1 : 0); ++sat) {
        QuantizeLinearAttributes attributes;
        attributes.opset = 25;
        attributes.output_dtype = static_cast<int64_t>(y);
        if (is_float8(y)) attributes.saturate = sat;
        const TensorView xv = x.view();
        const TensorView sv = s.view();
        const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
        expect_target_matches_scalar(call, n, {0, n}, describe_stream([&](std::ostream& o) {
                                       o << "y=" << data_type_name(y) << " scale " << scale_value << " saturate "
                                         << sat;
                                     }));
      }
    }
  }
  expect_compared(51);
}

/// The bytes of a 16-bit tensor holding every code 0..65535 in order (little endian).
std::vector<uint8_t> every_16_bit_code() {
  std::vector<uint8_t> bytes(size_t{2} << 16);
  for (size_t i = 0; i < (size_t{1} << 16); ++i) {
    bytes[2 * i] = static_cast<uint8_t>(i & 0xFF);
    bytes[2 * i + 1] = static_cast<uint8_t>(i >> 8);
  }
  return bytes;
}

/// The 16-bit float outputs of dequantization and the 16-bit division types round exactly like the
/// scalar encoder for every float32 with the 16 high bits given (see above).
TEST_P(SimdKernelsTest, SixteenBitRoundingExhaustiveHighBits) {
  std::mt19937 rng(8);
  const int64_t n = 1 << 16;
  for (T x_type : {T::kFloat16, T::kBFloat16}) {
    // Every 16-bit x code, divided in its own type by a few scales.
    const Tensor x{x_type, {n}, every_16_bit_code()};
    for (float scale_value : {1.0f, 0.1f, 3.0f, 1e-3f}) {
      const Tensor s{x_type, {}, make_float_tensor(x_type, {scale_value})};
      for (T y : {T::kInt16, T::kFloat8E5M2, T::kFloat8E4M3FN, T::kUint8}) {
        QuantizeLinearAttributes attributes;
        attributes.opset = 25;
        attributes.output_dtype = static_cast<int64_t>(y);
        const TensorView xv = x.view();
        const TensorView sv = s.view();
        const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
        expect_target_matches_scalar(call, n, {0, n}, describe_stream([&](std::ostream& o) {
                                       o << "x=" << data_type_name(x_type) << " y=" << data_type_name(y) << " scale "
                                         << scale_value;
                                     }));
      }
    }
  }
  (void)rng;
  expect_compared(32);
}

/// float16/bfloat16 outputs of DequantizeLinear (F16C and the bfloat16 bit form in the vectorised
/// kernels) round like the scalar encoder: every int16 code times scales whose products cross
/// every rounding boundary, the float16 subnormal range, overflow to ±inf and exact ties.
TEST_P(SimdKernelsTest, DequantizeSixteenBitOutputsEveryInt16Code) {
  const int64_t n = 1 << 16;
  const Tensor x{T::kInt16, {n}, every_16_bit_code()};
  // 2^-13: products k·2^-13 are float16 values or exact float16/bfloat16 ties for every k; 0x1p-24
  // and 0x1.8p-25: the float16 subnormals and their ties; 2.0: float16 overflow; 1e35 and 3e38:
  // bfloat16 overflow; the rest: products with random low bits.
  for (float scale_value :
       {0x1p-13f, 1.0f / 3.0f, 0.1f, 0x1p-24f, 0x1.8p-25f, 2.0f, 1e35f, 3e38f, 1.0009765625f, -7.77e-3f}) {
    for (T y : {T::kFloat16, T::kBFloat16}) {
      const Tensor s{T::kFloat, {}, make_float_tensor(T::kFloat, {scale_value})};
      DequantizeLinearAttributes attributes;
      attributes.opset = 25;
      attributes.output_dtype = static_cast<int64_t>(y);
      const TensorView xv = x.view();
      const TensorView sv = s.view();
      const DequantizeCall call = plan_dequantize(attributes, xv, sv, nullptr);
      expect_target_matches_scalar(call, n, {0, n}, describe_stream([&](std::ostream& o) {
                                     o << "y=" << data_type_name(y) << " scale " << scale_value;
                                   }));
    }
  }
  expect_compared(20);
}

/// Integer x of at most 8 bits into float16 and bfloat16 y, one scale and a nonzero zero point: the
/// loop takes the zero point into the product (fma(x, s, −zp·s)) only where that is the product it
/// otherwise forms, rounded once. Scales on each side of every condition: 16 significant bits or more,
/// normal or subnormal in float32, an offset that overflows, negative; and zero points at both ends.
TEST_P(SimdKernelsTest, DequantizeSixteenBitOutputsWithZeroPointsInTheProduct) {
  const float scale_values[] = {0.75f,     0x1.01p0f,   0x1.fcp5f,    0x1p-24f, 0x1.8p-25f, 0x1p-126f,
                                0x1p-127f, 0x1.8p127f,  0x1.fep127f,  65504.0f, -0.5f,      0.1f,
                                3e38f,     0x1.0001p0f, 0x1.00ffp-3f, 1e-38f};
  std::mt19937 rng(97);
  int64_t calls = 0;
  for (T x_type : kQuantizedTypes) {
    if (!qdq::detail::is_quantized_integer(x_type) || bit_width(x_type) > 8) continue;
    for (T y : {T::kFloat16, T::kBFloat16}) {
      for (T scale_type : {T::kFloat, y}) {
        for (float scale_value : scale_values) {
          const int64_t n = 4099;
          const Tensor x{x_type, {n}, random_bytes(x_type, n, rng)};
          const Tensor s{scale_type, {}, make_float_tensor(scale_type, {scale_value})};
          for (int zp_kind = 0; zp_kind < 4; ++zp_kind) {
            Tensor zp{x_type, {}, random_bytes(x_type, 1, rng)};
            // 1, the type's lowest and highest codes (in the low bits of its one byte), and a random one.
            const auto bits = static_cast<unsigned>(bit_width(x_type));
            const bool is_signed = qdq::detail::is_signed_quantized_integer(x_type);
            const unsigned lowest = is_signed ? 1u << (bits - 1) : 1u;
            const unsigned highest = is_signed ? (1u << (bits - 1)) - 1u : (1u << bits) - 1u;
            if (zp_kind == 0) zp.bytes[0] = 0x01;
            if (zp_kind == 1) zp.bytes[0] = static_cast<uint8_t>(lowest);
            if (zp_kind == 2) zp.bytes[0] = static_cast<uint8_t>(highest);
            if (zp_kind == 3) zp.bytes[0] = static_cast<uint8_t>(zp.bytes[0] & ((1u << bits) - 1u));
            if (zp.bytes[0] == 0) zp.bytes[0] = 0x01;
            DequantizeLinearAttributes attributes;
            attributes.opset = 25;
            attributes.output_dtype = static_cast<int64_t>(y);
            const TensorView xv = x.view();
            const TensorView sv = s.view();
            const TensorView zv = zp.view();
            const DequantizeCall call = plan_dequantize(attributes, xv, sv, &zv);
            expect_target_matches_scalar(call, n, task_bounds(n, rng), describe_stream([&](std::ostream& o) {
                                           o << "x=" << data_type_name(x_type) << " y=" << data_type_name(y)
                                             << " scale=" << data_type_name(scale_type) << " " << scale_value
                                             << " zero point byte " << int{zp.bytes[0]};
                                         }));
            ++calls;
          }
        }
      }
    }
  }
  expect_compared(calls);
}

/// 2/4-bit integer and FLOAT4E2M1 codes into float16 and bfloat16 in blocks along the last axis (blocks of 32 and 64
/// take the code table: each block's outputs looked up in a table of its products, on AVX3 and, for bfloat16, AVX2;
/// blocks of 256 the loop per block): every target against the scalar kernel, for every code value in every block, with
/// special scales in each block's table (NaNs with and without payloads, signalling ones, ±inf, ±0, subnormals, the
/// largest values, whose products overflow, and bfloat16 ties), random zero points or none, packed codes and codes one
/// per byte with random high bits, one task and many.
TEST_P(SimdKernelsTest, DequantizeSixteenBitOutputsFromCodesInBlocksOfManyVectors) {
  const std::vector<uint32_t> f32_scales{0x7FC00000u, 0x7FA12345u, 0xFFFFFFFFu, 0x7F800000u, 0xFF800000u,
                                         0x00000000u, 0x80000000u, 0x00000001u, 0x00800000u, 0x3F808000u,
                                         0x7F7FFFFFu, 0x3DCCCCCDu, 0xB80A7C5Bu, 0x477FE000u, 0x47800000u};
  const std::vector<uint16_t> f16_scales{0x7E00u, 0x7C01u, 0xFFFFu, 0x7C00u, 0xFC00u, 0x0000u, 0x8000u,
                                         0x0001u, 0x0400u, 0x3C01u, 0x7BFFu, 0x2E66u, 0x8229u};
  const std::vector<uint16_t> bf16_scales{0x7FC0u, 0x7F81u, 0xFFFFu, 0x7F80u, 0xFF80u, 0x0000u, 0x8000u,
                                          0x0001u, 0x0080u, 0x3F81u, 0x7F7Fu, 0x3DCDu, 0xB80Au};
  std::mt19937 rng(53);
  int64_t calls = 0;
  for (T x_type : {T::kInt4, T::kUint4, T::kInt2, T::kUint2, T::kFloat4E2M1}) {
    for (T y : {T::kFloat16, T::kBFloat16}) {
      for (T scale_type : {T::kFloat, y}) {
        for (const int64_t block : {32, 64, 256}) {
          const Shape shape{4, 1024};
          const Shape scale_shape{4, 1024 / block};
          const int64_t n = count_of(shape);
          const int64_t scales = count_of(scale_shape);
          std::vector<uint8_t> scale_bytes;
          for (int64_t k = 0; k < scales; ++k) {
            // Every special value in some block: the list in turn from a random start.
            const auto pick = static_cast<size_t>(k + static_cast<int64_t>(rng() % 16));
            if (scale_type == T::kFloat) {
              const uint32_t v = f32_scales[pick % f32_scales.size()];
              for (int b = 0; b < 4; ++b) scale_bytes.push_back(static_cast<uint8_t>(v >> (8 * b)));
            } else {
              const auto& list = scale_type == T::kFloat16 ? f16_scales : bf16_scales;
              const uint16_t v = list[pick % list.size()];
              scale_bytes.push_back(static_cast<uint8_t>(v & 0xFF));
              scale_bytes.push_back(static_cast<uint8_t>(v >> 8));
            }
          }
          const Tensor x{x_type, shape, random_bytes(x_type, n, rng)};
          const Tensor s{scale_type, scale_shape, scale_bytes};
          const Tensor zp{x_type, scale_shape, random_bytes(x_type, scales, rng)};
          std::vector<uint8_t> items(static_cast<size_t>(n));
          const int bits = bit_width(x_type);
          qdq::detail::unpack_codes(x.bytes.data(), bits, 0, n, items.data());
          for (uint8_t& item : items) item = static_cast<uint8_t>(item | (rng() << bits));
          DequantizeLinearAttributes attributes;
          attributes.opset = 25;
          attributes.axis = 1;
          attributes.block_size = block;
          attributes.output_dtype = static_cast<int64_t>(y);
          for (const bool one_per_byte : {false, true}) {
            const TensorView xv =
                one_per_byte ? TensorView{x_type, shape, items.data(), items.size(), qdq::CodeLayout::kOnePerByte}
                             : x.view();
            const TensorView sv = s.view();
            const TensorView zv = zp.view();
            for (const bool with_zp : {false, true}) {
              const DequantizeCall call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
              const auto describe = describe_stream([&](std::ostream& o) {
                o << "x=" << data_type_name(x_type) << " y=" << data_type_name(y)
                  << " scale=" << data_type_name(scale_type) << " block=" << block << " zp=" << with_zp
                  << (one_per_byte ? " one code per byte" : "");
              });
              expect_target_matches_scalar(call, n, {0, n}, describe);
              expect_target_matches_scalar(call, n, task_bounds(n, rng), describe);
              calls += 2;
            }
          }
        }
      }
    }
  }
  expect_compared(calls);
}

/// 8-bit x into float16 and bfloat16 per tensor, and per axis in rows, in tasks and runs long enough
/// for the table of all 256 outputs (AVX3: the byte table, symmetric or not): every target against
/// the scalar kernel, every code, each special scale of every scale type (NaNs with payloads,
/// signalling NaNs, ±inf, ±0, subnormals, the largest values, bfloat16 ties), zero points absent, ±0
/// and random, one task and tasks that start unaligned, end on a partial vector or within a row, or
/// fall short of the table's minimum.
TEST_P(SimdKernelsTest, DequantizeEightBitCodesIntoSixteenBitOutputsPerTensorAndAxis) {
  const std::vector<uint32_t> f32_scales{0x7FC00000u, 0x7FA12345u, 0xFFFFFFFFu, 0x7F800000u, 0xFF800000u,
                                         0x00000000u, 0x80000000u, 0x00000001u, 0x3F808000u, 0x7F7FFFFFu,
                                         0x3DCCCCCDu, 0xB80A7C5Bu, 0x477FE000u};
  const std::vector<uint16_t> f16_scales{0x7E00u, 0x7C01u, 0xFC00u, 0x8000u, 0x0001u, 0x3C01u, 0x7BFFu, 0xAE66u};
  const std::vector<uint16_t> bf16_scales{0x7FC0u, 0xFF81u, 0x7F80u, 0x0000u, 0x0001u, 0x3F81u, 0x7F7Fu, 0xBDCDu};
  std::mt19937 rng(54);
  const int64_t row = 4700;  // per axis: two rows of one scale each
  const int64_t n = 2 * row;
  int64_t calls = 0;
  for (T x_type : {T::kInt8, T::kUint8, T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ}) {
    std::vector<uint8_t> codes = random_bytes(x_type, n, rng);
    for (int i = 0; i < 256; ++i) codes[static_cast<size_t>(i)] = static_cast<uint8_t>(i);
    const Tensor x{x_type, {n}, codes};
    const Tensor x_rows{x_type, {2, row}, codes};
    for (T y : {T::kFloat16, T::kBFloat16}) {
      for (T scale_type : {T::kFloat, T::kFloat16, T::kBFloat16}) {
        std::vector<std::vector<uint8_t>> scales;
        if (scale_type == T::kFloat) {
          for (uint32_t v : f32_scales)
            scales.push_back({uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)});
        } else {
          for (uint16_t v : scale_type == T::kFloat16 ? f16_scales : bf16_scales)
            scales.push_back({uint8_t(v), uint8_t(v >> 8)});
        }
        for (const std::vector<uint8_t>& scale_bytes : scales) {
          const Tensor s{scale_type, {}, scale_bytes};
          // A float8 NaN code times a NaN scale is NaN on every route, but which of the two NaNs
          // (sign, payload) depends on the compiler's operand order in the scalar and vector
          // products: not compared here (docs/policy.md: NaN payloads are not part of the contract).
          const double scale_value = qdq::detail::load_real(scale_bytes.data(), scale_type, 0);
          if (!is_quantized_integer(x_type) && std::isnan(scale_value)) continue;
          // None, +0, the code 0x80 (−0 for float8 but FNUZ, whose 0x80 is a NaN; −128 or 128 for
          // integers), random codes for integers (float8 zero points must be zero).
          const bool fnuz = x_type == T::kFloat8E4M3FNUZ || x_type == T::kFloat8E5M2FNUZ;
          std::vector<int> zero_points{-1, 0x00};
          if (!fnuz) zero_points.push_back(0x80);
          if (is_quantized_integer(x_type)) zero_points.push_back(static_cast<int>(rng() & 0xFF));
          for (const int zero_point : zero_points) {
            const Tensor zp{x_type, {}, {static_cast<uint8_t>(zero_point)}};
            const TensorView zv = zp.view();
            DequantizeLinearAttributes attributes;
            attributes.opset = 25;
            attributes.output_dtype = static_cast<int64_t>(y);
            const DequantizeCall call = plan_dequantize(attributes, x.view(), s.view(), zero_point < 0 ? nullptr : &zv);
            const auto describe = describe_stream([&](std::ostream& o) {
              o << "x=" << data_type_name(x_type) << " y=" << data_type_name(y)
                << " scale=" << data_type_name(scale_type) << " bytes " << int(scale_bytes[0]) << ","
                << int(scale_bytes[1]) << " zp=" << zero_point;
            });
            expect_target_matches_scalar(call, n, {0, n}, describe);
            expect_target_matches_scalar(call, n, {0, 4095, 4096 + 1000 + 7, n}, describe);
            expect_target_matches_scalar(call, n, {0, 5001, n}, describe);
            // Per axis: this scale for the first row, an ordinary one (0.1) for the second.
            std::vector<uint8_t> row_scale_bytes = scale_bytes;
            const uint32_t tenth = scale_type == T::kFloat     ? 0x3DCCCCCDu
                                   : scale_type == T::kFloat16 ? 0x2E66u
                                                               : 0x3DCDu;
            for (size_t b = 0; b < scale_bytes.size(); ++b)
              row_scale_bytes.push_back(static_cast<uint8_t>(tenth >> (8 * b)));
            const Tensor row_scales{scale_type, {2}, row_scale_bytes};
            const Tensor row_zps{x_type, {2}, {static_cast<uint8_t>(zero_point), static_cast<uint8_t>(zero_point)}};
            const TensorView row_zv = row_zps.view();
            DequantizeLinearAttributes per_axis = attributes;
            per_axis.axis = 0;
            const DequantizeCall rows_call =
                plan_dequantize(per_axis, x_rows.view(), row_scales.view(), zero_point < 0 ? nullptr : &row_zv);
            expect_target_matches_scalar(rows_call, n, {0, n}, describe + " per axis");
            expect_target_matches_scalar(rows_call, n, {0, 4095, row + 13, n}, describe + " per axis");
            expect_target_matches_scalar(rows_call, n, {0, 6001, n}, describe + " per axis");
            calls += 6;
          }
        }
      }
    }
  }
  expect_compared(calls);
}

/// NaN scales keep their payload in bfloat16 outputs as the scalar encoder keeps it (top payload
/// bits, quiet), whatever their low bits: the vectorised kernels clean such scales before using the
/// plain bit rounding. Signalling NaNs, NaNs whose rounding would carry into the sign, every scale
/// type, one scale per tensor and one per row (short rows: expanded parameters; long: registers).
TEST_P(SimdKernelsTest, DequantizeBFloat16OutputsKeepNaNScalePayloads) {
  const uint32_t f32_nans[] = {0x7F800001u, 0x7FA12345u, 0x7FC0FFFFu, 0x7FFFFFFFu,
                               0xFFFFFFFFu, 0xFF80FFFFu, 0xFFC0A000u};
  const uint16_t f16_nans[] = {0x7C01u, 0x7E00u, 0x7FFFu, 0xFC01u, 0xFFFFu};
  const uint16_t bf16_nans[] = {0x7F81u, 0x7FC0u, 0x7FFFu, 0xFF81u, 0xFFFFu};
  std::vector<std::pair<T, std::vector<uint8_t>>> scales;  // (type, bytes of one scale)
  const auto bytes_of = [](const auto& value) {
    std::vector<uint8_t> b(sizeof value);
    std::memcpy(b.data(), &value, sizeof value);
    return b;
  };
  for (uint32_t v : f32_nans) scales.emplace_back(T::kFloat, bytes_of(v));
  for (uint16_t v : f16_nans) scales.emplace_back(T::kFloat16, bytes_of(v));
  for (uint16_t v : bf16_nans) scales.emplace_back(T::kBFloat16, bytes_of(v));
  for (const auto& entry : scales) {
    const T scale_type = entry.first;  // not a structured binding: clang 14 cannot capture those
    const std::vector<uint8_t>& one = entry.second;
    for (T x_type : {T::kInt8, T::kUint4, T::kInt16}) {
      for (const Shape& shape : {Shape{1000}, Shape{6, 40}, Shape{6, 512}}) {
        std::mt19937 rng(11);
        const int64_t n = count_of(shape);
        const bool per_row = shape.size() == 2;
        const Shape scale_shape = per_row ? Shape{shape[0]} : Shape{};
        // Per row: NaN scales between ordinary ones (1.5 in the scale's type: exact in all three).
        std::vector<uint8_t> scale_bytes;
        const std::vector<uint8_t> ordinary = make_float_tensor(scale_type, {1.5f});
        for (int64_t r = 0; r < count_of(scale_shape); ++r) {
          const std::vector<uint8_t>& pick = (r % 2 == 0) ? one : ordinary;
          scale_bytes.insert(scale_bytes.end(), pick.begin(), pick.end());
        }
        const Tensor x{x_type, shape, random_bytes(x_type, n, rng)};
        const Tensor s{scale_type, scale_shape, scale_bytes};
        DequantizeLinearAttributes attributes;
        attributes.opset = 25;
        attributes.axis = 0;
        attributes.output_dtype = static_cast<int64_t>(T::kBFloat16);
        const TensorView xv = x.view();
        const TensorView sv = s.view();
        const DequantizeCall call = plan_dequantize(attributes, xv, sv, nullptr);
        expect_target_matches_scalar(call, n, task_bounds(n, rng), describe_stream([&](std::ostream& o) {
                                       o << "x=" << data_type_name(x_type) << " scale=" << data_type_name(scale_type)
                                         << " bytes";
                                       for (uint8_t b : one) o << ' ' << int{b};
                                       o << " shape=" << shape_to_string(shape);
                                     }));
      }
    }
  }
  expect_compared(153);
}

/// bfloat16 outputs from x of at most 8 bits (AVX2 forms them from the even- and the odd-indexed
/// elements of each pair of vectors): every code of every such type, with and without zero points,
/// per tensor, per row and in blocks of 8, 16 and 32 along the last axis, with scales whose products
/// are exact bfloat16 ties or carry into the next binade, whole calls and short tasks.
TEST_P(SimdKernelsTest, DequantizeBFloat16OutputsFromNarrowCodes) {
  // 1 + 2^-8 and 1 + 3·2^-9: 8-bit integer products with ties at bfloat16's last place; 0x1.fcp0:
  // carries; 0.1 and -3.3e-5: ordinary low bits.
  const float scale_values[] = {0x1.01p0f, 0x1.018p-3f, 0x1.fcp5f, 0.1f, -3.3e-5f};
  std::mt19937 rng(71);
  for (T x_type : kQuantizedTypes) {
    if (bit_width(x_type) > 8) continue;
    for (T scale_type : {T::kFloat, T::kBFloat16}) {
      struct Layout {
        Shape shape;
        int64_t axis;
        int64_t block;
      };
      const std::vector<Layout> layouts = {
          {{4109}, 0, 0}, {{4, 1000}, 0, 0}, {{8, 512}, 1, 8}, {{8, 512}, 1, 16}, {{8, 512}, 1, 32}};
      for (const Layout& layout : layouts) {
        const Shape& shape = layout.shape;
        const int64_t block = layout.block;
        for (const bool with_zp : {false, true}) {
          if (with_zp && !qdq::detail::is_quantized_integer(x_type)) continue;
          const int64_t n = count_of(shape);
          Shape scale_shape;
          if (shape.size() == 2) scale_shape = block == 0 ? Shape{shape[0]} : Shape{shape[0], shape[1] / block};
          std::vector<float> scales;
          for (int64_t k = 0; k < count_of(scale_shape); ++k) {
            scales.push_back(scale_values[static_cast<size_t>(rng() % std::size(scale_values))]);
          }
          const Tensor x{x_type, shape, random_bytes(x_type, n, rng)};
          const Tensor s{scale_type, scale_shape, make_float_tensor(scale_type, scales)};
          const Tensor zp{x_type, scale_shape, random_bytes(x_type, count_of(scale_shape), rng)};
          DequantizeLinearAttributes attributes;
          attributes.opset = 25;
          attributes.axis = layout.axis;
          attributes.block_size = block;
          attributes.output_dtype = static_cast<int64_t>(T::kBFloat16);
          const TensorView xv = x.view();
          const TensorView sv = s.view();
          const TensorView zv = zp.view();
          const DequantizeCall call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
          const auto describe = describe_stream([&](std::ostream& o) {
            o << "x=" << data_type_name(x_type) << " scale=" << data_type_name(scale_type)
              << " shape=" << shape_to_string(shape) << " block=" << block << " zp=" << with_zp;
          });
          expect_target_matches_scalar(call, n, {0, n}, describe);
          expect_target_matches_scalar(call, n, task_bounds(n, rng), describe);
        }
      }
    }
  }
  expect_compared(680);
}

/// Integer x blocked along the last axis in blocks of whole vectors, without zero points (the loop
/// then subtracts a constant zero) and with them, into every output type.
TEST_P(SimdKernelsTest, DequantizeVectorBlocksWithAndWithoutZeroPoints) {
  std::mt19937 rng(72);
  for (T x : kQuantizedTypes) {
    if (!qdq::detail::is_quantized_integer(x)) continue;
    for (T y : kDequantizedTypes) {
      for (int64_t block : {8, 16, 32, 64}) {
        for (const bool with_zp : {false, true}) {
          check_dequantize(x, T::kFloat, y, {6, 512}, 1, block, with_zp, rng);
          check_dequantize(x, T::kFloat, y, {6, 512}, 1, block, with_zp, rng, true);
        }
      }
    }
  }
  expect_compared(768);
}

/// Runs the scalar kernel and the target's kernel on a call with the given scales (one per
/// element of scale_shape) and x values; expects equal bytes.
void SimdKernelsTest::check_quantize_with(T x_type, T scale_type, T y_type, const Shape& shape,
                                          const Shape& scale_shape, int64_t axis, int64_t block, bool saturate,
                                          const std::vector<float>& scales, const std::vector<float>& x_values,
                                          std::mt19937& rng) {
  const int64_t n = count_of(shape);
  const Tensor x{x_type, shape, make_float_tensor(x_type, x_values)};
  const Tensor s{scale_type, scale_shape, make_float_tensor(scale_type, scales)};
  QuantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis;
  if (block > 0) attributes.block_size = block;
  if (is_float8(y_type)) attributes.saturate = saturate ? 1 : 0;
  attributes.output_dtype = static_cast<int64_t>(y_type);
  const TensorView xv = x.view();
  const TensorView sv = s.view();
  const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
  expect_target_matches_scalar(call, n, task_bounds(n, rng), describe_stream([&](std::ostream& o) {
                                 o << "x=" << data_type_name(x_type) << " scale=" << data_type_name(scale_type) << " "
                                   << scales[0] << " y=" << data_type_name(y_type)
                                   << " shape=" << shape_to_string(shape) << " block=" << block
                                   << " saturate=" << saturate;
                               }));
}

/// Power-of-two scales take the exact-reciprocal route (x · 2^-e instead of x / 2^e) in the
/// vectorised kernels: equal bit for bit to the division, with quotients that overflow, that are
/// subnormal or that underflow to zero, for scales at and beyond the route's limits (2^±126 use it,
/// 2^±127 and subnormal scales do not).
TEST_P(SimdKernelsTest, QuantizePowerOfTwoScalesMatchDivision) {
  std::mt19937 rng(9);
  const std::vector<float> scales = {1.0f,     0.5f,      2.0f,      0.125f,   -0.25f,    -8.0f,
                                     0x1p-20f, 0x1p20f,   0x1p-100f, 0x1p100f, 0x1p-126f, -0x1p-126f,
                                     0x1p126f, -0x1p126f, 0x1p-127f, 0x1p127f, 0x1p-149f, 0x1.8p-3f};
  const int64_t n = 1000;
  for (float scale : scales) {
    std::vector<float> xs = interesting_values(n, scale, rng);
    // Quotients near float32's subnormal range and its overflow threshold.
    for (int64_t i = 0; i < n; i += 7)
      xs[static_cast<size_t>(i)] =
          std::ldexp(static_cast<float>(rng() % 1000) - 500.0f, -140 - static_cast<int>(rng() % 20));
    for (int64_t i = 3; i < n; i += 11) xs[static_cast<size_t>(i)] = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    for (T y : kQuantizedTypes) {
      for (int sat = 0; sat <= (is_float8(y) ? 1 : 0); ++sat) {
        check_quantize_with(T::kFloat, T::kFloat, y, {n}, {}, 0, 0, sat == 1 || !is_float8(y), {scale}, xs, rng);
        // Blocked along the last axis: runs of 40 elements sharing one scale.
        const std::vector<float> block_scales(25, scale);
        check_quantize_with(T::kFloat, T::kFloat, y, {n / 40, 40}, {n / 40, 1}, 1, 40, sat == 1 || !is_float8(y),
                            block_scales, xs, rng);
      }
    }
  }
  // 16-bit division types: powers of two of float16/bfloat16, x of the same type.
  for (T x_type : {T::kFloat16, T::kBFloat16}) {
    for (float scale : {1.0f, 0.5f, 0x1p-14f, 0x1p-24f, 0x1p15f, -0x1p-7f, 0x1p-100f}) {
      std::vector<float> xs = interesting_values(n, scale, rng);
      for (T y : {T::kUint8, T::kInt8, T::kInt4, T::kUint16, T::kFloat8E4M3FN, T::kFloat8E5M2}) {
        check_quantize_with(x_type, x_type, y, {n}, {}, 0, 0, true, {scale}, xs, rng);
        check_quantize_with(x_type, T::kFloat, y, {n}, {}, 0, 0, true, {scale}, xs, rng);
      }
    }
  }
  expect_compared(780);
}

// ---------------------------------------------------------------------------------------------
// FLOAT8E8M0 (MX) scales: every one of the 256 codes (0x00 is 2^-127, a float32 subnormal; 0xFF is
// NaN), per element (step-1 runs), per block of 32 (runs that share one scale: the exact-reciprocal
// route for codes 1..253, the division for 0x00, 0xFE and 0xFF) and per tensor.

/// Runs the scalar kernel and the target's kernel on one call with FLOAT8E8M0 scale codes; expects
/// equal bytes. `precision` 0 divides in float32 (the policy for e8m0 scales).
void SimdKernelsTest::check_quantize_e8m0(T x_type, T y_type, const Shape& shape, const Shape& scale_shape,
                                          int64_t axis, int64_t block, bool saturate, const std::vector<uint8_t>& codes,
                                          int64_t precision, std::mt19937& rng) {
  const int64_t n = count_of(shape);
  std::vector<float> xs = interesting_values(n, decode_e8m0(codes[rng() % codes.size()]), rng);
  // Quotients that overflow, are subnormal or underflow for the extreme scales.
  for (int64_t i = 0; i < n; i += 5)
    xs[static_cast<size_t>(i)] =
        std::ldexp(static_cast<float>(rng() % 2000) - 1000.0f, static_cast<int>(rng() % 280) - 150);
  for (int64_t i = 2; i < n; i += 13) xs[static_cast<size_t>(i)] = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  const Tensor x{x_type, shape, make_float_tensor(x_type, xs)};
  const Tensor s{T::kFloat8E8M0, scale_shape, codes};
  QuantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis;
  if (block > 0) attributes.block_size = block;
  if (is_float8(y_type)) attributes.saturate = saturate ? 1 : 0;
  if (precision != 0) attributes.precision = precision;
  attributes.output_dtype = static_cast<int64_t>(y_type);
  const TensorView xv = x.view();
  const TensorView sv = s.view();
  const QuantizeCall call = plan_quantize(attributes, xv, sv, nullptr);
  expect_target_matches_scalar(call, n, task_bounds(n, rng), describe_stream([&](std::ostream& o) {
                                 o << "x=" << data_type_name(x_type) << " scale=FLOAT8E8M0 y=" << data_type_name(y_type)
                                   << " shape=" << shape_to_string(shape) << " block=" << block
                                   << " saturate=" << saturate << " precision=" << precision;
                               }));
}

void SimdKernelsTest::check_dequantize_e8m0(T x_type, T y_type, const Shape& shape, const Shape& scale_shape,
                                            int64_t axis, int64_t block, bool with_zp,
                                            const std::vector<uint8_t>& codes, std::mt19937& rng) {
  const int64_t n = count_of(shape);
  const int64_t scale_count = count_of(scale_shape);
  const Tensor x{x_type, shape, random_bytes(x_type, n, rng)};
  const Tensor s{T::kFloat8E8M0, scale_shape, codes};
  Tensor zp{x_type, scale_shape, {}};
  if (with_zp) zp.bytes = random_bytes(x_type, scale_count, rng);
  DequantizeLinearAttributes attributes;
  attributes.opset = 25;
  attributes.axis = axis;
  if (block > 0) attributes.block_size = block;
  attributes.output_dtype = static_cast<int64_t>(y_type);
  const TensorView xv = x.view();
  const TensorView sv = s.view();
  const TensorView zv = zp.view();
  const DequantizeCall call = plan_dequantize(attributes, xv, sv, with_zp ? &zv : nullptr);
  expect_target_matches_scalar(call, n, task_bounds(n, rng), describe_stream([&](std::ostream& o) {
                                 o << "x=" << data_type_name(x_type) << " scale=FLOAT8E8M0 y=" << data_type_name(y_type)
                                   << " shape=" << shape_to_string(shape) << " block=" << block << " zp=" << with_zp;
                               }));
}

/// The 256 codes, in an order that puts the special ones (0x00, 0xFE, 0xFF) next to ordinary ones.
std::vector<uint8_t> all_e8m0_codes(std::mt19937& rng) {
  std::vector<uint8_t> codes(256);
  for (int k = 0; k < 256; ++k) codes[static_cast<size_t>(k)] = static_cast<uint8_t>(k);
  std::shuffle(codes.begin(), codes.end(), rng);
  return codes;
}

/// The e8m0 codes used one per call (per tensor): the ends of the range and the exact-reciprocal limits.
const uint8_t kE8M0Edges[] = {0x00, 0x01, 0x02, 0x7E, 0x7F, 0x80, 0xFC, 0xFD, 0xFE, 0xFF};

TEST_P(SimdKernelsTest, QuantizeFloat8E8M0ScalesEveryCode) {
  std::mt19937 rng(10);
  for (T x : kFloatTypes) {
    for (T y : kQuantizedTypes) {
      for (int sat = 0; sat <= (is_float8(y) ? 1 : 0); ++sat) {
        const bool saturate = sat == 1 || !is_float8(y);
        // One scale per element of the last axis (step 1), then blocks of 32 sharing one (step 0).
        check_quantize_e8m0(x, y, {3, 256}, {256}, 1, 0, saturate, all_e8m0_codes(rng), 0, rng);
        check_quantize_e8m0(x, y, {256, 40}, {256, 1}, 1, 40, saturate, all_e8m0_codes(rng), 0, rng);
        std::vector<uint8_t> four;  // every code four times (a blocked middle axis: step-1 runs again)
        for (int k = 0; k < 4; ++k) {
          const std::vector<uint8_t> codes = all_e8m0_codes(rng);
          four.insert(four.end(), codes.begin(), codes.end());
        }
        check_quantize_e8m0(x, y, {4, 2, 256}, {4, 1, 256}, 1, 2, saturate, four, 0, rng);
        for (uint8_t code : kE8M0Edges) check_quantize_e8m0(x, y, {301}, {}, 0, 0, saturate, {code}, 0, rng);
      }
    }
  }
  // The division in a 16-bit type (precision), the e8m0 scale rounded to it first.
  for (T x : {T::kFloat16, T::kBFloat16}) {
    for (T y : {T::kUint8, T::kInt4, T::kFloat8E4M3FN}) {
      check_quantize_e8m0(x, y, {256, 40}, {256, 1}, 1, 40, true, all_e8m0_codes(rng), static_cast<int64_t>(x), rng);
      check_quantize_e8m0(x, y, {3, 256}, {256}, 1, 0, true, all_e8m0_codes(rng), static_cast<int64_t>(x), rng);
    }
  }
  expect_compared(675);
}

/// The MX layout: FLOAT8E8M0 scales for blocks of 8 to 64 elements along the last axis (the flat loop
/// of blocks of whole vectors). Pieces whose scales all have exact reciprocals (codes 1-253) multiply
/// by them; pieces with one that does not (every code, shuffled) divide: both against the scalar kernel.
TEST_P(SimdKernelsTest, QuantizeMxBlocksExactReciprocals) {
  std::mt19937 rng(22);
  int64_t calls = 0;
  for (T y : kQuantizedTypes) {
    for (int sat = 0; sat <= (is_float8(y) ? 1 : 0); ++sat) {
      const bool saturate = sat == 1 || !is_float8(y);
      for (int64_t block : {8, 16, 32, 64}) {
        const int64_t rows = 256 * block / 1024;  // 256 blocks
        std::vector<uint8_t> exact(256);
        for (uint8_t& code : exact) code = static_cast<uint8_t>(1 + rng() % 253);
        check_quantize_e8m0(T::kFloat, y, {rows, 1024}, {rows, 1024 / block}, 1, block, saturate, exact, 0, rng);
        check_quantize_e8m0(T::kFloat, y, {rows, 1024}, {rows, 1024 / block}, 1, block, saturate, all_e8m0_codes(rng),
                            0, rng);
        calls += 2;
      }
    }
  }
  expect_compared(calls);
}

/// Markstein's corrected reciprocal against IEEE float32 division, bit for bit (NaN for NaN): every
/// 4093rd float32 bit pattern (all exponents, varied mantissas) plus the specials and the edges of
/// the range check, for scales from 2^-60 to 2^58 with random mantissas and both signs.
/// `qdq_division_routes --exhaustive` is the full 2^32 proof for a scale; this samples many scales.
TEST_P(SimdKernelsTest, MarksteinQuotientEqualsDivision) {
  std::vector<float> x;
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093)
    x.push_back(std::bit_cast<float>(static_cast<uint32_t>(bits)));
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min(),
                        std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 1.0f, 0.5f, 1.5f}) {
    x.push_back(v);
  }
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::vector<float> scales{0.0173f, 0.1f, 1.0f / 3.0f, -0.37f, 3e-5f, 1.0f, 0x1p-62f, 0x1.fffffep61f};
  for (const int e : {-60, -52, -44, -36, -28, -20, -12, -6, -1, 0, 3, 10, 20, 30, 44, 58}) {
    scales.push_back(std::ldexp(mantissa(rng), e) * (e % 2 != 0 ? -1.0f : 1.0f));
  }
  // The range check's edges for each scale: quotients near 2^-40 and 2^40.
  std::vector<float> q(x.size() + 64);
  int64_t checked = 0;
  for (const float s : scales) {
    std::vector<float> xs = x;
    for (const float edge : {0x1p-40f, 0x1p40f}) {
      const float at = edge * s;
      xs.push_back(at);
      xs.push_back(std::nextafter(at, 0.0f));
      xs.push_back(std::nextafter(at, 2 * at));
    }
    q.resize(xs.size());
    // A vector at a time, and in the group-of-four form of QuantizeLoop's main loop, on the sampled x
    // (whose groups mostly mix in specials, so they divide) and on its in-range part alone.
    std::vector<float> in_range;
    for (const float v : xs) {
      if (std::fabs(v / s) >= 0x1p-40f && std::fabs(v / s) <= 0x1p40f) in_range.push_back(v);
    }
    for (const std::vector<float>* values : {&xs, &in_range}) {
      for (const bool grouped : {false, true}) {
        q.resize(values->size());
        if (!simd::markstein_quotients(target_.bit, s, values->data(), q.data(), static_cast<int64_t>(values->size()),
                                       grouped)) {
          GTEST_SKIP() << target_.name << " has no Markstein route (no fused multiply-add)";
        }
        for (size_t i = 0; i < values->size(); ++i) {
          const float expected = (*values)[i] / s;
          if (std::isnan(expected)) {
            ASSERT_TRUE(std::isnan(q[i])) << "x = " << (*values)[i] << " s = " << s;
          } else {
            ASSERT_EQ(std::bit_cast<uint32_t>(q[i]), std::bit_cast<uint32_t>(expected))
                << target_.name << (grouped ? " grouped" : "") << ": x = " << std::hexfloat << (*values)[i]
                << " s = " << s << " got " << q[i] << " expected " << expected;
          }
        }
      }
    }
    checked += static_cast<int64_t>(xs.size());
  }
  EXPECT_GT(checked, 16 * 1000000);
  // Outside [2^-62, 2^62] the route does not apply (the kernels divide).
  float out = 0;
  const float one = 1;
  EXPECT_FALSE(simd::markstein_quotients(target_.bit, 0x1p63f, &one, &out, 1));
  EXPECT_FALSE(simd::markstein_quotients(target_.bit, 0x1p-63f, &one, &out, 1));
}

/// The reciprocal routes' fast paths (no lane falls back) against the scalar kernel: data like real
/// activations (quotients within ±200, fractions spread evenly), where most groups of four vectors
/// keep the multiplied quotient, with sparse quotients at and 1-3 ulps beside half-integers, where the
/// inexact product x·RN(1/s) rounds to the other integer for some of them, and a rare NaN, ±inf or
/// huge value; every output the rounding check (8-bit and narrower integers) or Markstein (the
/// others) serves, with and without zero points, under the forced reciprocal route.
TEST_P(SimdKernelsTest, ReciprocalRoutesMatchScalarNearHalfIntegers) {
  std::mt19937 rng(13);
  const int64_t n = 4096 + 52;
  const std::vector<float> scales{0.0173f, 2.0f / 127.0f, 1.0f / 3.0f, -0.37f, 3e-5f, 7.1f, 0x1.3p-62f, 0x1.7p61f};
  int64_t misrounded = 0;  // near-half inputs whose product x·RN(1/s) rounds unlike x / s
  const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kReciprocal);
  for (const float scale : scales) {
    std::uniform_real_distribution<float> quotient(-200.0f, 200.0f);
    std::vector<float> xs(static_cast<size_t>(n));
    for (float& x : xs) x = quotient(rng) * scale;
    for (int64_t i = 0; i < n; i += 97 + static_cast<int64_t>(rng() % 200)) {
      float x = (static_cast<float>(static_cast<int>(rng() % 400) - 200) + 0.5f) * scale;
      for (int step = static_cast<int>(rng() % 7) - 3; step != 0; step += step > 0 ? -1 : 1)
        x = std::nextafter(x, step > 0 ? 2 * x : 0.0f);
      xs[static_cast<size_t>(i)] = x;
      const float product = x * (1.0f / scale);
      if (std::nearbyint(product) != std::nearbyint(x / scale)) ++misrounded;
    }
    const float inf = std::numeric_limits<float>::infinity();
    for (const float special : {std::numeric_limits<float>::quiet_NaN(), inf, -inf, 1e30f * scale, -3e9f * scale})
      xs[static_cast<size_t>(rng() % static_cast<uint64_t>(n))] = special;
    for (const T y : {T::kInt8, T::kUint8, T::kInt4, T::kUint4, T::kInt2, T::kUint2, T::kInt16, T::kUint16,
                      T::kFloat8E4M3FN, T::kFloat8E5M2, T::kFloat8E4M3FNUZ, T::kFloat4E2M1}) {
      for (const bool with_zp : {false, true}) {
        if (with_zp && !is_quantized_integer(y)) continue;
        expect_per_tensor_matches_scalar(xs, scale, y, with_zp, rng, "route reciprocal");
      }
    }
  }
  // The inputs do reach the cases that the check exists for.
  EXPECT_GT(misrounded, 0);
  expect_compared(8 * 20);
}

/// The rounding check's NaN rule: a NaN or ±inf quotient in one vector of a group must not hide a
/// near-half-integer quotient in the same lane of another vector. (x86's max returns its second
/// operand where either is NaN, so a magnitude maximum over the group lost the near-half lane: found
/// by fuzz_operators at AVX2, int8 per-tensor, x = 63 and s = 0x1.0f0f1p+0, where x·RN(1/s) is 59.5
/// and x / s is 59.499996.) Each 64-element block (a group of four vectors of up to 16 lanes) holds
/// that x at offset a, a NaN or ±inf at offset b and ordinary quotients elsewhere, for every a ≠ b
/// with a ≡ b mod 4, which includes the same lane of every other vector of the group at every width.
TEST_P(SimdKernelsTest, ReciprocalRoutesKeepNearHalvesBesideNaNs) {
  std::mt19937 rng(17);
  const float scale = 0x1.0f0f1p+0f;
  const float near_half = 63.0f;
  ASSERT_NE(std::nearbyint(near_half * (1.0f / scale)), std::nearbyint(near_half / scale));
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf};
  std::vector<float> xs;
  for (int a = 0; a < 64; ++a) {
    for (int b = a % 4; b < 64; b += 4) {
      if (b == a) continue;
      const size_t block = xs.size();
      for (int i = 0; i < 64; ++i) xs.push_back(static_cast<float>(i % 7) * scale);
      xs[block + static_cast<size_t>(a)] = near_half;
      xs[block + static_cast<size_t>(b)] = specials[xs.size() / 64 % 3];
    }
  }
  const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kReciprocal);
  for (const T y : {T::kInt8, T::kUint8, T::kInt4, T::kUint4, T::kInt2, T::kUint2}) {
    for (const bool with_zp : {false, true}) {
      expect_per_tensor_matches_scalar(xs, scale, y, with_zp, rng, "route reciprocal, NaNs beside near-halves");
    }
  }
  expect_compared(12);
}

/// The rounding check with each block's own reciprocal (PerVectorReciprocals: blocks along the last
/// axis of one to eight vectors take the flat loop): blocks whose scales differ, and quotients at and
/// 1-3 ulps beside half-integers of their own block's scale, so that groups of four vectors that span
/// several blocks fall back to the division, each vector with its own scale; with and without one
/// block whose scale lies beyond 2^62, which sends its piece to the division.
TEST_P(SimdKernelsTest, ReciprocalRoutesMatchScalarNearHalfIntegersInBlocks) {
  std::mt19937 rng(19);
  const std::vector<float> pool{0.0173f, 2.0f / 127.0f, 1.0f / 3.0f, -0.37f, 3e-5f, 7.1f, 0x1.0f0f1p+0f, 0x1.3p-62f};
  int64_t misrounded = 0;  // near-half inputs whose product x·RN(1/s) rounds unlike x / s
  const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kReciprocal);
  for (const int64_t block : {8, 16, 32, 64, 128}) {
    for (const bool out_of_range : {false, true}) {
      const int64_t rows = 6;
      const int64_t cols = 16 * block;
      const int64_t n = rows * cols;
      std::vector<float> scales(static_cast<size_t>(n / block));
      for (float& scale : scales) scale = pool[rng() % pool.size()];
      if (out_of_range) scales[scales.size() / 2] = 0x1p63f;
      std::uniform_real_distribution<float> quotient(-200.0f, 200.0f);
      std::vector<float> xs(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const float scale = scales[static_cast<size_t>(i / block)];
        float x = quotient(rng) * scale;
        if (rng() % 16 == 0) {
          x = (static_cast<float>(static_cast<int>(rng() % 400) - 200) + 0.5f) * scale;
          for (int step = static_cast<int>(rng() % 7) - 3; step != 0; step += step > 0 ? -1 : 1)
            x = std::nextafter(x, step > 0 ? 2 * x : 0.0f);
          if (std::nearbyint(x * (1.0f / scale)) != std::nearbyint(x / scale)) ++misrounded;
        }
        xs[static_cast<size_t>(i)] = x;
      }
      for (const T y : {T::kInt8, T::kUint8, T::kInt4, T::kUint4, T::kInt2, T::kUint2}) {
        check_quantize_with(T::kFloat, T::kFloat, y, {rows, cols}, {rows, cols / block}, 1, block, true, scales, xs,
                            rng);
      }
    }
  }
  // The inputs do reach the cases that the check exists for.
  EXPECT_GT(misrounded, 0);
  expect_compared(5 * 2 * 6);
}

/// The reciprocal routes with blocks along the first axis ([K, N], each row of N scales serving B rows
/// of x, read in place): the segment's reciprocals are kept for the rows that share its scales.
/// Quotients at and 1-3 ulps beside half-integers (integer outputs) or rounding boundaries (float8:
/// the midpoints of neighbouring values); rows of N = 256 (whole segments, kept), 300 (segments cut
/// by the chunks: some expanded), 1000 (a segment that is the end of a kept row, read at its offset,
/// in one task), 1024, and 1500, 2052 and 3000 (past a chunk: divided in flat tasks, taken column
/// tile by column tile across a row-tile task's rows); with and without one scale beyond 2^62 in a
/// row, which sends the segments of that row to the division; zero points for the integer outputs;
/// both routes forced; one task, short tasks, tasks of one to five rows that start and end inside
/// rows, and where rows pass a tile, the operator's row-tile tasks (RowTileTasks: up to 8 rows of a
/// block by 4096 columns, or by 1024 with a grain of 8192; the scalar kernel over them too).
TEST_P(SimdKernelsTest, ReciprocalRoutesMatchScalarInBlocksAlongTheFirstAxis) {
  std::mt19937 rng(29);
  const std::vector<float> pool{0.0173f, 2.0f / 127.0f, 1.0f / 3.0f, -0.37f, 3e-5f, 7.1f, 0x1.0f0f1p+0f, 0x1.3p-62f};
  int64_t calls = 0;
  for (const int64_t cols : {256, 300, 1000, 1024, 1500, 2052, 3000}) {
    for (const int64_t block : {8, 32}) {
      for (const bool out_of_range : {false, true}) {
        const int64_t rows = 2 * block + 3;  // a ragged last block
        const int64_t scale_rows = (rows + block - 1) / block;
        std::vector<float> scales(static_cast<size_t>(scale_rows * cols));
        for (float& scale : scales) scale = pool[rng() % pool.size()];
        if (out_of_range) scales[static_cast<size_t>(cols + cols / 3)] = 0x1p63f;
        for (const T y : {T::kInt8, T::kUint8, T::kInt4, T::kUint4, T::kInt2, T::kFloat8E4M3FN, T::kFloat8E5M2FNUZ}) {
          std::vector<float> xs(static_cast<size_t>(rows * cols));
          std::uniform_real_distribution<float> quotient(-200.0f, 200.0f);
          for (int64_t i = 0; i < rows * cols; ++i) {
            const float scale = scales[static_cast<size_t>(i / cols / block * cols + i % cols)];
            float x = quotient(rng) * scale;
            if (rng() % 64 == 0) {
              // A half-integer, or for float8 a midpoint between two neighbouring values about 1..64.
              const float half = static_cast<float>(static_cast<int>(rng() % 128) - 64) + 0.5f;
              const float mid =
                  std::ldexp(1.0f + (2.0f * static_cast<float>(rng() % 8) + 1.0f) / 16.0f, static_cast<int>(rng() % 6));
              x = (is_float8(y) ? mid : half) * scale;
              for (int step = static_cast<int>(rng() % 7) - 3; step != 0; step += step > 0 ? -1 : 1)
                x = std::nextafter(x, step > 0 ? 2 * x : 0.0f);
            }
            xs[static_cast<size_t>(i)] = x;
          }
          const Tensor x{T::kFloat, {rows, cols}, make_float_tensor(T::kFloat, xs)};
          const Tensor s{T::kFloat, {scale_rows, cols}, make_float_tensor(T::kFloat, scales)};
          // Integer outputs with zero points (2/4-bit ones are unpacked once with the kept reciprocals).
          const bool with_zp = is_quantized_integer(y);
          const Tensor zp{y, {scale_rows, cols}, random_bytes(y, scale_rows * cols, rng)};
          QuantizeLinearAttributes attributes;
          attributes.opset = 25;
          attributes.axis = 0;
          attributes.block_size = block;
          if (!with_zp) attributes.output_dtype = static_cast<int64_t>(y);
          const TensorView xv = x.view();
          const TensorView sv = s.view();
          const TensorView zv = zp.view();
          const QuantizeCall call = plan_quantize(attributes, xv, sv, with_zp ? &zv : nullptr);
          // One task (whose rows share kept reciprocals), many short ones, ones of a few rows, and
          // the operator's row-tile tasks where they apply (two grains: tiles of 1024 columns and more).
          const int64_t n = rows * cols;
          std::vector<std::vector<RowTileTasks::Task>> tilings;
          if (RowTileTasks::applies(call.plan)) {
            for (const int64_t grain : {int64_t{32768}, int64_t{8192}}) {
              const RowTileTasks tasks(call.plan, grain);
              tilings.emplace_back();
              for (int64_t t = 0; t < tasks.count(); ++t) tilings.back().push_back(tasks.task(t));
            }
          }
          const std::vector<std::vector<int64_t>> flat = {std::vector<int64_t>{0, n}, task_bounds(n, rng),
                                                          task_bounds(n, rng, 5 * cols)};
          for (size_t way = 0; way < flat.size() + tilings.size(); ++way) {
            const bool tiled = way >= flat.size();
            const std::vector<int64_t>& bounds = tiled ? flat[0] : flat[way];
            const std::vector<RowTileTasks::Task>* tiles = tiled ? &tilings[way - flat.size()] : nullptr;
            for (const simd::QuotientRoute route : {simd::QuotientRoute::kDivide, simd::QuotientRoute::kReciprocal}) {
              const simd::ScopedQuotientRoute forced(route);
              expect_target_matches_scalar(call, n, bounds, describe_stream([&](std::ostream& o) {
                                             o << "y=" << data_type_name(y) << " [" << rows << ", " << cols
                                               << "] blocks of " << block << " along axis 0"
                                               << (out_of_range ? ", a scale of 2^63" : "") << " route "
                                               << simd::quotient_route_name(route) << ", "
                                               << (tiled ? tiles->size() : bounds.size() - 1)
                                               << (tiled ? " row-tile tasks" : " tasks");
                                           }),
                                           tiles);
              ++calls;
            }
          }
        }
      }
    }
  }
  expect_compared(calls);
}

/// The code of v in narrow float format y (the float8 types, FLOAT4E2M1), as the scalar kernel
/// encodes it.
uint32_t narrow_code(T y, float v, bool saturate) {
  switch (y) {
    case T::kFloat8E4M3FN: return encode<Float8E4M3FNFormat>(v, saturate);
    case T::kFloat8E4M3FNUZ: return encode<Float8E4M3FNUZFormat>(v, saturate);
    case T::kFloat8E5M2: return encode<Float8E5M2Format>(v, saturate);
    case T::kFloat8E5M2FNUZ: return encode<Float8E5M2FNUZFormat>(v, saturate);
    default: return encode<Float4E2M1Format>(v, true);
  }
}

/// The finite values of narrow float format y in increasing order of magnitude, from 0.
std::vector<double> narrow_magnitudes(T y) {
  std::vector<double> values;
  for (uint32_t code = 0; code < (y == T::kFloat4E2M1 ? 8u : 128u); ++code) {
    float v = 0;
    switch (y) {
      case T::kFloat8E4M3FN: v = decode<Float8E4M3FNFormat>(code); break;
      case T::kFloat8E4M3FNUZ: v = decode<Float8E4M3FNUZFormat>(code); break;
      case T::kFloat8E5M2: v = decode<Float8E5M2Format>(code); break;
      case T::kFloat8E5M2FNUZ: v = decode<Float8E5M2FNUZFormat>(code); break;
      default: v = decode<Float4E2M1Format>(code); break;
    }
    if (std::isfinite(v)) values.push_back(v);
  }
  return values;
}

/// The rounding check on the code (CodeRoundingCheck: float8 and FLOAT4E2M1 outputs encode x·RN(1/s)
/// and divide only groups with a scaled value near a half-integer) against the scalar kernel, under
/// the forced reciprocal route, both saturation modes: quotients spread over each format's binades,
/// quotients at and 1-3 ulps beside every rounding boundary (the midpoints of neighbouring values,
/// and the overflow boundary past the largest), where the product rounds to the other code for some
/// of them, and quotients about FLT_MAX, where the product overflows to ±inf while the division
/// stays finite, or the reverse (FNUZ saturating encodes the two unlike), and NaN and ±inf. Per
/// tensor and in blocks along the last axis of one to eight vectors, each block with its own scale
/// (the flat loop).
TEST_P(SimdKernelsTest, CodeRoundingCheckMatchesScalarNearRoundingBoundaries) {
  std::mt19937 rng(23);
  const std::vector<float> pool{0.0173f, 2.0f / 127.0f, 1.0f / 3.0f, -0.37f, 3e-5f, 7.1f, 0x1.0f0f1p+0f, 0x1.3p-62f};
  const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kReciprocal);
  int64_t misrounded = 0;  // inputs whose product x·RN(1/s) encodes unlike x / s
  int64_t overflowed = 0;  // inputs whose product and quotient lie on either side of FLT_MAX
  int64_t calls = 0;
  for (const T y : {T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ, T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1}) {
    const std::vector<double> magnitudes = narrow_magnitudes(y);
    const double largest = magnitudes.back();
    const double past_largest = largest + (largest - magnitudes[magnitudes.size() - 2]);
    // A quotient near a rounding boundary of y, at and beside it by up to three ulps of x.
    const auto near_boundary = [&](float scale) {
      const size_t k = rng() % magnitudes.size();
      const double upper = k + 1 < magnitudes.size() ? magnitudes[k + 1] : past_largest;
      float x = static_cast<float>((magnitudes[k] + upper) / 2 * (rng() % 2 ? 1.0 : -1.0) * scale);
      for (int step = static_cast<int>(rng() % 7) - 3; step != 0; step += step > 0 ? -1 : 1)
        x = std::nextafter(x, step > 0 ? 2 * x : 0.0f);
      return x;
    };
    std::uniform_real_distribution<double> exponent(std::log2(magnitudes[1]) - 2, std::log2(largest) + 1);
    for (const float scale : pool) {
      for (const bool saturate : {true, false}) {
        if (y == T::kFloat4E2M1 && !saturate) continue;
        const int64_t n = 4096 + 52;
        std::vector<float> xs(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          float x = static_cast<float>(std::exp2(exponent(rng)) * (rng() % 2 ? 1.0 : -1.0) * scale);
          // Sparse, so that most groups of four vectors keep the product: the check's fast path.
          if (rng() % 256 == 0) x = near_boundary(scale);
          xs[static_cast<size_t>(i)] = x;
        }
        // NaN and ±inf, each in a group of its own (nearly always).
        const float inf = std::numeric_limits<float>::infinity();
        xs[1000] = std::numeric_limits<float>::quiet_NaN();
        xs[2000] = inf;
        xs[3000] = -inf;
        if (std::fabs(scale) < 1) {
          // About FLT_MAX: each x within 64 ulps of FLT_MAX · s whose product and quotient lie on
          // either side of the overflow, one per 200 elements (a group of its own, nearly always).
          const float around = std::numeric_limits<float>::max() * scale;
          int64_t at = 7;
          for (int step = -64; step <= 64 && at < n; ++step) {
            float x = around;
            for (int k = 0; k < (step < 0 ? -step : step); ++k) x = std::nextafter(x, step > 0 ? 2 * x : 0.0f);
            if (std::isinf(x * (1.0f / scale)) == std::isinf(x / scale)) continue;
            xs[static_cast<size_t>(at)] = x;
            at += 200;
            ++overflowed;
          }
        }
        for (const float x : xs) {
          if (narrow_code(y, x * (1.0f / scale), saturate) != narrow_code(y, x / scale, saturate)) ++misrounded;
        }
        check_quantize_with(T::kFloat, T::kFloat, y, {n}, {}, 0, 0, saturate, {scale}, xs, rng);
        ++calls;
      }
    }
    // Blocks of 8 to 128 elements, each with its own scale (one of them beyond 2^62 in some rows:
    // its piece divides).
    for (const int64_t block : {8, 16, 32, 64, 128}) {
      for (const bool saturate : {true, false}) {
        if (y == T::kFloat4E2M1 && !saturate) continue;
        const int64_t rows = 6;
        const int64_t cols = 16 * block;
        const int64_t n = rows * cols;
        std::vector<float> scales(static_cast<size_t>(n / block));
        for (float& scale : scales) scale = pool[rng() % pool.size()];
        if (block == 32) scales[scales.size() / 2] = 0x1p63f;
        std::vector<float> xs(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          const float scale = scales[static_cast<size_t>(i / block)];
          float x = rng() % 128 == 0 ? near_boundary(scale)
                                     : static_cast<float>(std::exp2(exponent(rng)) * (rng() % 2 ? 1.0 : -1.0) * scale);
          xs[static_cast<size_t>(i)] = x;
          if (narrow_code(y, x * (1.0f / scale), saturate) != narrow_code(y, x / scale, saturate)) ++misrounded;
        }
        check_quantize_with(T::kFloat, T::kFloat, y, {rows, cols}, {rows, cols / block}, 1, block, saturate, scales, xs,
                            rng);
        ++calls;
      }
    }
  }
  // The inputs do reach the cases that the check exists for.
  EXPECT_GT(misrounded, 0);
  EXPECT_GT(overflowed, 0);
  expect_compared(calls);
}

/// Every pair of float16 x and scale s whose quotient the product x·RN(1/s) rounds to float16 unlike
/// x / s (HalfProduct's exception: exact ties among float16 subnormals) has the same code in every
/// narrow float output, in both saturation modes and with every FLOAT4E2M1 zero point; integer
/// outputs take 0 for both. Positive x and s (the encoders are symmetric in sign, and the zero points
/// of both signs cover q + zp for negative q); s not a power of two (those multiply exactly).
TEST(HalfProductTest, Float16SubnormalQuotientsEncodeAsTheDivisionsDo) {
  int64_t misrounded = 0;
  for (uint32_t s_code = 1; s_code < 0x7C00u; ++s_code) {
    if ((s_code & 0x3FFu) == 0) continue;
    const float s = half_to_float(static_cast<uint16_t>(s_code));
    const float reciprocal = 1.0f / s;
    // Positive float16 codes order as their values: the x whose quotient lies below 2^-13.
    const uint32_t x_end = std::min<uint32_t>(0x7C00u, float_to_half(s * 0x1p-13f) + 1u);
    for (uint32_t x_code = 1; x_code < x_end; ++x_code) {
      const float x = half_to_float(static_cast<uint16_t>(x_code));
      // Only quotients within 2^-35 of a rounding boundary (an odd multiple of 2^-25 there) can
      // round unlike their product, which lies within 2^-37 of them.
      const float t = x / s * 0x1p25f;
      const float nearest = std::nearbyint(t);
      if (std::fabs(t - nearest) > 0x1p-10f || std::fmod(nearest, 2.0f) == 0.0f) continue;
      const float by_division = round_to<Float16Format>(x / s);
      const float by_product = round_to<Float16Format>(x * reciprocal);
      if (by_division == by_product) continue;
      ++misrounded;
      ASSERT_LE(by_division, 0x1p-14f) << "x=" << x << " s=" << s;
      ASSERT_LE(by_product, 0x1p-14f) << "x=" << x << " s=" << s;
      for (const bool saturate : {false, true}) {
        EXPECT_EQ((encode<Float8E4M3FNFormat>(by_division, saturate)),
                  (encode<Float8E4M3FNFormat>(by_product, saturate)));
        EXPECT_EQ((encode<Float8E4M3FNUZFormat>(by_division, saturate)),
                  (encode<Float8E4M3FNUZFormat>(by_product, saturate)));
        EXPECT_EQ((encode<Float8E5M2Format>(by_division, saturate)), (encode<Float8E5M2Format>(by_product, saturate)));
        EXPECT_EQ((encode<Float8E5M2FNUZFormat>(by_division, saturate)),
                  (encode<Float8E5M2FNUZFormat>(by_product, saturate)));
      }
      for (uint32_t zp = 0; zp < 16; ++zp) {
        const float z = decode<Float4E2M1Format>(zp);
        EXPECT_EQ((encode<Float4E2M1Format>(by_division + z, true)), (encode<Float4E2M1Format>(by_product + z, true)))
            << "x=" << x << " s=" << s << " zp=" << z;
      }
    }
  }
  // The exception exists (so the claim is not empty).
  EXPECT_GT(misrounded, 0);
}

/// qdq::quantize_division_route names the 16-bit product for float16 and bfloat16 division on a
/// build with vector kernels, the division where QDQ_QUANTIZE_ROUTE=divide forces it and for float64
/// (int32 scales), and one of the float32 routes for float32.
TEST(HalfProductTest, DivisionRouteNamesIt) {
  const bool vectorised = simd::best_target() != 0;
  const simd::ScopedQuotientRoute automatic(simd::QuotientRoute::kAuto);  // whatever QDQ_QUANTIZE_ROUTE says
  for (const T p : {T::kFloat16, T::kBFloat16}) {
    EXPECT_STREQ(quantize_division_route(T::kInt8, p), vectorised ? "16-bit reciprocal" : "division");
    const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kDivide);
    EXPECT_STREQ(quantize_division_route(T::kInt8, p), "division");
  }
  EXPECT_STREQ(quantize_division_route(T::kInt8, T::kDouble), "division");
  EXPECT_STREQ(quantize_division_route(T::kInt8, T::kFloat), quantize_division_route(T::kInt8));
}

/// The product in a 16-bit division type (HalfProduct: float16 and bfloat16 x and scales, whose
/// quotient x·RN(1/s) rounds to the type as x / s does) against the scalar kernel, under the forced
/// reciprocal route, for every one of the 65536 codes of x (NaN, ±inf, subnormals, the largest values;
/// in code order in one task, shuffled in many). Scales that bring each range to its case: float16
/// subnormal quotients, quotients about float16's overflow boundary 65520, bfloat16 quotients about
/// FLT_MAX and in float32's subnormal range, scales outside [2^-62, 2^62] (the division). Integer and
/// FLOAT4E2M1 outputs with a zero point, float8 in both saturation modes; per tensor, and in blocks
/// along the last axis, each with its own scale (the flat loop). Also the theorem behind the route,
/// for these scales: outside float16's subnormal range, every product rounds as the quotient does.
TEST_P(SimdKernelsTest, HalfProductMatchesScalarForEveryCode) {
  std::mt19937 rng(31);
  const simd::ScopedQuotientRoute forced(simd::QuotientRoute::kReciprocal);
  const std::vector<T> outputs{T::kInt8,       T::kUint8,          T::kUint16,       T::kInt16,
                               T::kInt4,       T::kInt2,           T::kFloat8E4M3FN, T::kFloat8E4M3FNUZ,
                               T::kFloat8E5M2, T::kFloat8E5M2FNUZ, T::kFloat4E2M1};
  int64_t subnormal_misrounded = 0;  // float16 subnormal quotients the product rounds unlike x / s
  int64_t calls = 0;
  for (const T p : {T::kFloat16, T::kBFloat16}) {
    const bool half = p == T::kFloat16;
    const auto decode_p = [&](uint16_t code) { return half ? half_to_float(code) : bfloat16_to_float(code); };
    const auto round_p = [&](float v) { return half ? round_to<Float16Format>(v) : round_to<BFloat16Format>(v); };
    std::vector<float> pool{0.0173f, 2.0f / 127.0f, 1.0f / 3.0f, -0.37f, 7.1f};
    if (half) {
      // Subnormal: quotients up to 2^40. Large: quotients down to float16 subnormals.
      for (const float s : {3e-5f, 0x1.8p-23f, 65504.0f, 1000.0f, 0x1.554p+8f}) pool.push_back(s);
    } else {
      // About 2^±62, the route's limits; beyond them; a bfloat16 subnormal.
      for (const float s : {0x1.3p-62f, 0x1.3p+61f, 0x1.8p63f, 1e-39f}) pool.push_back(s);
    }
    for (float& s : pool) s = round_p(s);
    std::vector<uint16_t> codes(65536);
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint16_t>(i);
    for (const float s : pool) {
      if (!(std::fabs(s) >= 0x1p-62f && std::fabs(s) <= 0x1p62f)) continue;  // the route's range
      const float reciprocal = 1.0f / s;
      for (const uint16_t code : codes) {
        const float x = decode_p(code);
        const float by_division = round_p(x / s);
        if (std::isnan(x) || std::bit_cast<uint32_t>(round_p(x * reciprocal)) == std::bit_cast<uint32_t>(by_division))
          continue;
        ASSERT_TRUE(half && std::fabs(by_division) <= 0x1p-14f) << "x=" << x << " s=" << s;
        ++subnormal_misrounded;
      }
    }
    // x's codes: in order (one task) or shuffled (many tasks); one scale, or one per block of 32.
    const auto run = [&](T y, bool saturate, const std::vector<uint16_t>& order, const std::vector<float>& scales,
                         bool one_task) {
      const int64_t n = static_cast<int64_t>(order.size());
      const bool blocked = scales.size() > 1;
      const Shape shape = blocked ? Shape{256, 256} : Shape{n};
      const Shape scale_shape = blocked ? Shape{256, 8} : Shape{};
      Tensor x{p, shape, std::vector<uint8_t>(2 * order.size())};
      std::memcpy(x.bytes.data(), order.data(), x.bytes.size());
      const Tensor s{p, scale_shape, make_float_tensor(p, scales)};
      // Zero points for the integer outputs and FLOAT4E2M1, which adds its own before encoding.
      const bool with_zp = is_quantized_integer(y) || y == T::kFloat4E2M1;
      const Tensor zp{y, scale_shape, random_bytes(y, static_cast<int64_t>(scales.size()), rng)};
      QuantizeLinearAttributes attributes;
      attributes.opset = 25;
      if (blocked) {
        attributes.axis = 1;
        attributes.block_size = 32;
      }
      if (is_float8(y)) attributes.saturate = saturate ? 1 : 0;
      if (!with_zp) attributes.output_dtype = static_cast<int64_t>(y);
      const TensorView xv = x.view();
      const TensorView sv = s.view();
      const TensorView zv = zp.view();
      const QuantizeCall call = plan_quantize(attributes, xv, sv, with_zp ? &zv : nullptr);
      expect_target_matches_scalar(
          call, n, one_task ? std::vector<int64_t>{0, n} : task_bounds(n, rng), describe_stream([&](std::ostream& o) {
            o << "x=" << data_type_name(p) << " y=" << data_type_name(y) << (blocked ? " blocks of 32" : " scale ")
              << (blocked ? 0.0f : scales[0]) << " saturate=" << saturate << (one_task ? " one task" : " many tasks");
          }));
      ++calls;
    };
    std::vector<uint16_t> shuffled = codes;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (const T y : outputs) {
      for (const bool saturate : {true, false}) {
        if (!saturate && !is_float8(y)) continue;
        for (const float s : pool) {
          run(y, saturate, codes, {s}, true);
          run(y, saturate, shuffled, {s}, false);
        }
        std::vector<float> scales(2048);
        for (float& s : scales) s = pool[rng() % pool.size()];
        run(y, saturate, codes, scales, true);
        run(y, saturate, shuffled, scales, false);
      }
    }
  }
  // The inputs do reach float16's exception.
  EXPECT_GT(subnormal_misrounded, 0);
  expect_compared(calls);
}

TEST_P(SimdKernelsTest, DequantizeFloat8E8M0ScalesEveryCode) {
  std::mt19937 rng(11);
  for (T x : kQuantizedTypes) {
    const bool zp = !is_float8(x);
    for (T y : kDequantizedTypes) {
      std::vector<uint8_t> codes = all_e8m0_codes(rng);
      if (is_float8(x)) {
        // A NaN scale times a NaN x: which NaN the scalar kernel keeps depends on its operand order
        // (see check_dequantize), so no NaN scale meets float8 x, whose random codes include NaNs.
        for (uint8_t& c : codes) {
          if (c == 0xFF) c = 0xFE;
        }
      }
      check_dequantize_e8m0(x, y, {3, 256}, {256}, 1, 0, zp, codes, rng);
      std::vector<uint8_t> blocked = all_e8m0_codes(rng);
      if (is_float8(x)) {
        for (uint8_t& c : blocked) {
          if (c == 0xFF) c = 0x00;
        }
      }
      check_dequantize_e8m0(x, y, {256, 40}, {256, 1}, 1, 40, zp, blocked, rng);
      for (uint8_t code : kE8M0Edges) {
        if (is_float8(x) && code == 0xFF) continue;
        check_dequantize_e8m0(x, y, {301}, {}, 0, 0, zp, {code}, rng);
      }
    }
  }
  expect_compared(456);
}

TEST(SimdTargetsTest, ForceScalarSelectsTheReference) {
  const float x[4] = {1, 2, 3, 4};
  const float scale = 0.5f;
  const TensorView xv{T::kFloat, std::span<const int64_t>(), x, 4};
  const int64_t shape[1] = {4};
  const TensorView x4{T::kFloat, std::span<const int64_t>(shape, 1), x, 16};
  const TensorView sv{T::kFloat, {}, &scale, 4};
  QuantizeLinearAttributes attributes;
  const QuantizeCall call = plan_quantize(attributes, x4, sv, nullptr);
  EXPECT_EQ(select_quantize_kernel(call, true, call.y_bytes), &quantize_scalar);
  if (simd::best_target() != 0) {
    EXPECT_NE(select_quantize_kernel(call, false, call.y_bytes), &quantize_scalar);
  }
  (void)xv;
}

}  // namespace
// DynamicQuantizeLinear's range pass: every length up to a few vectors past the unrolled loop, at
// every offset into a task, with NaN, ±inf, -0, subnormals and extremes placed anywhere.
TEST_P(SimdKernelsTest, DynamicRangeMatchesScalar) {
  const RangeKernel range = simd::range_kernel_for_target(target_.bit);
  ASSERT_NE(range, nullptr) << target_.name;
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            inf,
                            -inf,
                            -0.0f,
                            0.0f,
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            1e-30f,
                            -1e-30f};
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> uniform(-3.0f, 5.0f);
  std::uniform_int_distribution<int> pick(0, 15);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> x(300);
    for (float& v : x) {
      const int k = pick(rng);
      // Mostly ordinary values; some trials all negative or all positive (the range then ends at 0).
      v = k < 11 && trial % 4 == 0 ? specials[k] : uniform(rng);
      if (trial % 4 == 1) v = -std::fabs(v) - 1.0f;
      if (trial % 4 == 2) v = std::fabs(v) + 1.0f;
    }
    const auto size = static_cast<int64_t>(x.size());
    for (int64_t begin : {0, 1, 3, 7}) {
      for (int64_t end = begin; end <= size; end += end < begin + 80 ? 1 : 37) {
        const FloatRange want = range_scalar(x.data(), begin, end, size);
        // x's whole count as given, and as if x were a large tensor: then the kernel asks for lines
        // ahead of its reads, before x's start too, which must change nothing.
        for (const int64_t elements : {size, int64_t{1} << 28}) {
          const FloatRange got = range(x.data(), begin, end, elements);
          ASSERT_EQ(got.nan, want.nan) << target_.name << " trial " << trial << " [" << begin << ", " << end << ")";
          ASSERT_EQ(std::bit_cast<uint32_t>(got.lo), std::bit_cast<uint32_t>(want.lo))
              << target_.name << " trial " << trial << " [" << begin << ", " << end << ")";
          ASSERT_EQ(std::bit_cast<uint32_t>(got.hi), std::bit_cast<uint32_t>(want.hi))
              << target_.name << " trial " << trial << " [" << begin << ", " << end << ")";
          ++compared_;
        }
      }
    }
  }
  expect_compared(10000);
}

}  // namespace qdq::detail
