// The shared shape of the kernels' run-time choices (kernels/simd/forced_choice.hpp): the environment
// variable's names, forcing and restoring, and one measurement per target under concurrent callers.
#include "kernels/simd/forced_choice.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

namespace qdq::detail::simd {
namespace {

enum class Flavour : int { kAuto = 0, kSweet = 1, kSour = 2 };

constexpr NamedChoice<Flavour> kFlavourNames[] = {
    {"sweet", Flavour::kSweet}, {"sour", Flavour::kSour}, {"tart", Flavour::kSour}};
constexpr const char* kVariable = "QDQ_TEST_FORCED_FLAVOUR";

Flavour from_environment(const char* value) {
  if (value == nullptr) {
    ::unsetenv(kVariable);
  } else {
    ::setenv(kVariable, value, 1);
  }
  const ForcedChoice<Flavour> choice(kVariable, kFlavourNames);
  ::unsetenv(kVariable);
  return choice.get();
}

TEST(ForcedChoiceTest, ReadsTheVariablesNamesAndNothingElse) {
  EXPECT_EQ(from_environment(nullptr), Flavour::kAuto);
  EXPECT_EQ(from_environment("sweet"), Flavour::kSweet);
  EXPECT_EQ(from_environment("sour"), Flavour::kSour);
  EXPECT_EQ(from_environment("tart"), Flavour::kSour);   // two names for one choice
  EXPECT_EQ(from_environment("Sweet"), Flavour::kAuto);  // names are exact
  EXPECT_EQ(from_environment(""), Flavour::kAuto);
  EXPECT_EQ(from_environment("bitter"), Flavour::kAuto);
}

ForcedChoice<Flavour>& flavour() {
  static ForcedChoice<Flavour> choice(kVariable, kFlavourNames);
  return choice;
}
void force_flavour(Flavour f) { flavour().force(f); }
Flavour forced_flavour() { return flavour().get(); }
using ScopedFlavour = ScopedForced<Flavour, force_flavour, forced_flavour>;

TEST(ForcedChoiceTest, ScopedForcingRestoresWhatItFound) {
  force_flavour(Flavour::kAuto);
  {
    const ScopedFlavour outer(Flavour::kSweet);
    EXPECT_EQ(forced_flavour(), Flavour::kSweet);
    {
      const ScopedFlavour inner(Flavour::kSour);
      EXPECT_EQ(forced_flavour(), Flavour::kSour);
    }
    EXPECT_EQ(forced_flavour(), Flavour::kSweet);
  }
  EXPECT_EQ(forced_flavour(), Flavour::kAuto);
}

TEST(ForcedChoiceTest, MeasuresOncePerTargetUnderConcurrentCallers) {
  OncePerTarget<int64_t> measured;
  std::atomic<int> measurements{0};
  const auto measure = [&](int64_t target) {
    measurements.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // others arrive while it measures
    return target + 7;
  };
  constexpr int64_t kTargets[] = {int64_t{1} << 4, int64_t{1} << 6, int64_t{1} << 62};
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round) {
        const int64_t target = kTargets[static_cast<size_t>(t + round) % 3];
        if (measured.get(target, measure) != target + 7) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(measurements.load(), 3);
  EXPECT_EQ(measured.get(kTargets[0], [](int64_t) -> int64_t { return -1; }), kTargets[0] + 7);
}

}  // namespace
}  // namespace qdq::detail::simd
