// The shape shared by the kernels' run-time choices (quotient routes, staged stores): a choice that an
// environment variable, a test or a benchmark may force for every target, and that is otherwise
// measured once per target at first use. Plain C++, header only.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <span>

namespace qdq::detail::simd {

/// A name an environment variable may give, and the choice it forces.
template <class Choice>
struct NamedChoice {
  const char* name;
  Choice choice;
};

/// The forced choice of an enum whose zero is kAuto ("not forced"). Starts as `variable` says: one of
/// `names` forces its choice, anything else (or nothing) is kAuto. Allocates nothing; atomic, but
/// meant to be forced while no kernel runs (tests, benchmarks).
template <class Choice>
class ForcedChoice {
 public:
  ForcedChoice(const char* variable, std::span<const NamedChoice<Choice>> names)
      : value_(static_cast<int>(from_environment(variable, names))) {}

  void force(Choice choice) { value_.store(static_cast<int>(choice), std::memory_order_relaxed); }
  Choice get() const { return static_cast<Choice>(value_.load(std::memory_order_relaxed)); }

 private:
  static Choice from_environment(const char* variable, std::span<const NamedChoice<Choice>> names) {
    const char* value = std::getenv(variable);
    if (value == nullptr) return Choice{};
    for (const NamedChoice<Choice>& named : names) {
      if (std::strcmp(value, named.name) == 0) return named.choice;
    }
    return Choice{};
  }

  std::atomic<int> value_;
};

/// Forces a choice through `Force` and restores the one `Forced` gave when it goes out of scope
/// (tests). Not thread-safe.
template <class Choice, void (*Force)(Choice), Choice (*Forced)()>
class ScopedForced {
 public:
  explicit ScopedForced(Choice choice) : previous_(Forced()) { Force(choice); }
  ~ScopedForced() { Force(previous_); }
  ScopedForced(const ScopedForced&) = delete;
  ScopedForced& operator=(const ScopedForced&) = delete;

 private:
  Choice previous_;
};

/// A value measured once per target (a Highway target bit) at the first call for that target, on the
/// calling thread, while other callers for it wait. Allocates nothing itself; thread-safe.
template <class Value>
class OncePerTarget {
 public:
  template <class Measure>
  Value get(int64_t target, Measure&& measure) {
    const auto index = static_cast<size_t>(std::countr_zero(static_cast<uint64_t>(target)) % kTargets);
    std::call_once(once_[index], [&] { values_[index] = measure(target); });
    return values_[index];  // written before any caller returns from call_once
  }

 private:
  static constexpr size_t kTargets = 64;
  std::array<std::once_flag, kTargets> once_;
  std::array<Value, kTargets> values_{};
};

}  // namespace qdq::detail::simd
