// How the vectorised quantize kernels form x / s for float32 division by one scale held in a register:
// the division, or Markstein's corrected reciprocal (quantize-inl.h), which gives the same correctly
// rounded quotient. Which is faster depends on the target and the CPU (vdivps at 512 bits is slow on
// Intel, fast at 256 bits on Zen 3), so each target measures both once, at first use. Plain C++.
#pragma once

#include <cstdint>

namespace qdq::detail::simd {

enum class QuotientRoute : int { kAuto = 0, kDivide = 1, kMarkstein = 2 };

/// Forces the route of every target (kAuto: the measured one) until forced again; starts as
/// QDQ_QUANTIZE_ROUTE (auto|divide|markstein, anything else = auto) says. Allocates nothing;
/// atomic, but meant to be called while no kernel runs (tests, benchmarks).
void force_quotient_route(QuotientRoute route);

/// The forced route (kAuto where none is). Allocates nothing; thread-safe.
QuotientRoute forced_quotient_route();

/// The route `target`'s kernels take: the forced one, or the faster of the two measured once at first
/// use (about a hundred microseconds, on the calling thread; thread-safe); always kDivide on a target
/// without fused multiply-add. Allocates only a small buffer while measuring.
QuotientRoute quotient_route(int64_t target);

/// "division" or "Markstein reciprocal" ("auto" for kAuto). Allocates nothing.
const char* quotient_route_name(QuotientRoute route);

/// Writes the Markstein route's quotients x[i] / s of `target` to q[0, n) and returns true, or
/// returns false where the route does not apply (no fused multiply-add, or |s| outside [2^-62, 2^62]).
/// For tests. Allocates nothing; thread-safe.
bool markstein_quotients(int64_t target, float s, const float* x, float* q, int64_t n);

/// Restores the forced route it found when it goes out of scope (tests). Not thread-safe.
class ScopedQuotientRoute {
 public:
  explicit ScopedQuotientRoute(QuotientRoute route) : previous_(forced_quotient_route()) {
    force_quotient_route(route);
  }
  ~ScopedQuotientRoute() { force_quotient_route(previous_); }
  ScopedQuotientRoute(const ScopedQuotientRoute&) = delete;
  ScopedQuotientRoute& operator=(const ScopedQuotientRoute&) = delete;

 private:
  QuotientRoute previous_;
};

}  // namespace qdq::detail::simd
