// The run-time choice of staged or direct stores for misaligned float32 outputs (staged_stores.hpp):
// the target's own blocked dequantize kernel timed both ways on an in-cache buffer, alternating.
#include "kernels/simd/staged_stores.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include "hwy/highway.h"
#include "kernels/simd/forced_choice.hpp"
#include "kernels/simd/simd_kernels.hpp"
#include "plan.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail::simd {
namespace {

constexpr NamedChoice<StagedStores> kNames[] = {{"direct", StagedStores::kDirect}, {"staged", StagedStores::kStaged}};

ForcedChoice<StagedStores>& forced() {
  static ForcedChoice<StagedStores> choice("QDQ_STAGED_STORES", kNames);
  return choice;
}

// Set on the measuring thread only, so that its timed runs take the choice being timed (and never
// wait on the measurement they are part of) while other threads keep theirs.
thread_local StagedStores measuring = StagedStores::kAuto;

/// The target's int4 -> float32 kernel in blocks of 32 along rows of 1024 (16 Ki elements: 64 KiB
/// of y, in L2 with x; 1-2 µs, long enough for the clock), with zero points, y 16 bytes into a line
/// (where NumPy's large arrays start).
class StagedTimer {
 public:
  explicit StagedTimer(int64_t target)
      : codes_(kElements / 2),
        scales_(kBlocks, 0.0371f),
        zero_points_(kBlocks / 2, 0x33),
        y_(kElements * sizeof(float) + 128) {
    uint32_t state = 12345;
    for (uint8_t& code : codes_) {
      state = state * 1664525u + 1013904223u;
      code = static_cast<uint8_t>(state >> 24);
    }
    const TensorView xv{DataType::kInt4, shape_, codes_.data(), codes_.size()};
    const TensorView sv{DataType::kFloat, block_shape_, scales_.data(), scales_.size() * sizeof(float)};
    const TensorView zv{DataType::kInt4, block_shape_, zero_points_.data(), zero_points_.size()};
    DequantizeLinearAttributes attributes;
    attributes.axis = 1;
    attributes.block_size = kBlock;
    call_ = plan_dequantize(attributes, xv, sv, &zv);
    kernel_ = dequantize_kernel_for_target(target, call_);
    const auto at = reinterpret_cast<uintptr_t>(y_.data());
    y_at_ = y_.data() + (64 - at % 64) % 64 + 16;
  }

  bool valid() const { return kernel_ != nullptr; }

  double run(StagedStores choice) {
    measuring = choice;
    kernel_(call_, y_at_, 0, kElements);
    const auto start = std::chrono::steady_clock::now();
    kernel_(call_, y_at_, 0, kElements);
    const auto stop = std::chrono::steady_clock::now();
    measuring = StagedStores::kAuto;
    return std::chrono::duration<double>(stop - start).count();
  }

 private:
  static constexpr int64_t kElements = 16384;
  static constexpr int64_t kRow = 1024;
  static constexpr int64_t kBlock = 32;
  static constexpr size_t kBlocks = kElements / kBlock;
  const std::array<int64_t, 2> shape_{kElements / kRow, kRow};
  const std::array<int64_t, 2> block_shape_{kElements / kRow, kRow / kBlock};
  std::vector<uint8_t> codes_;
  std::vector<float> scales_;
  std::vector<uint8_t> zero_points_;
  std::vector<uint8_t> y_;
  uint8_t* y_at_ = nullptr;
  DequantizeCall call_{};
  DequantizeKernel kernel_ = nullptr;
};

bool measure(int64_t target) {
#if !HWY_ARCH_X86
  (void)target;
  return false;
#else
  if (target != HWY_AVX3 && target != HWY_AVX3_DL) return false;  // 32-byte vectors never stage
  StagedTimer timer(target);
  if (!timer.valid()) return false;
  double staged = 1e30;
  double direct = 1e30;
  for (int round = 0; round < 16; ++round) {
    staged = std::min(staged, timer.run(StagedStores::kStaged));
    direct = std::min(direct, timer.run(StagedStores::kDirect));
  }
  constexpr double kMargin = 0.97;
  return staged <= kMargin * direct;
#endif
}

}  // namespace

void force_staged_stores(StagedStores choice) { forced().force(choice); }

StagedStores forced_staged_stores() { return forced().get(); }

bool stages_misaligned_output(int64_t target) {
  if (measuring != StagedStores::kAuto) return measuring == StagedStores::kStaged;
  const StagedStores choice = forced_staged_stores();
  if (choice != StagedStores::kAuto) return choice == StagedStores::kStaged;
  static OncePerTarget<bool> measured;
  return measured.get(target, measure);
}

}  // namespace qdq::detail::simd
