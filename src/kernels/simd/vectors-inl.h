// The vector types every kernel uses (float32 lanes and their integer twins), the chunk size, and
// partial loads and stores that never touch memory past the caller's data.
//
// Included once per Highway target (foreach_target.h), hence the toggle guard instead of #pragma once.
#if defined(QDQ_SIMD_VECTORS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QDQ_SIMD_VECTORS_INL_H_
#undef QDQ_SIMD_VECTORS_INL_H_
#else
#define QDQ_SIMD_VECTORS_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"  // FlushStream, for the callers of StreamBytes
#include "hwy/highway.h"
#include "kernels/prefetch_policy.hpp"

HWY_BEFORE_NAMESPACE();
namespace qdq::detail::simd {
namespace HWY_NAMESPACE {
#if QDQ_SIMD_HAS_KERNELS

namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::RebindToSigned<DF>;
using DU = hn::RebindToUnsigned<DF>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;

/// Elements per chunk: a multiple of 4 (whole bytes of 2/4-bit data) and of every vector length.
constexpr int64_t kChunk = 1024;

/// How far ahead of its loads a loop reading x asks for x's lines: into L1 one kilobyte ahead,
/// and where x is large, into L2 four. The hardware prefetchers alone keep too few lines in flight
/// for a loop that also computes, even from L2, and out of cache they stop at each 4 KiB page,
/// where the L2 requests keep the lines coming (Intel Xeon, 64 Mi elements, against L1 requests
/// 2 KiB ahead alone: quantize 1.2–1.4×, DynamicQuantizeLinear 1.2×, 16-bit dequantize outputs
/// 1.2–1.3×; docs/performance.md, "x's lines into L1 and L2"). Zen 3 streams some of these loops
/// faster without the L2 requests: which ones take them is measured per CPU (prefetch_policy.hpp).
constexpr uintptr_t kPrefetchL1Bytes = 1024;
constexpr uintptr_t kPrefetchL2Bytes = 4096;

/// Whether a call whose x occupies `x_bytes` may ask for lines into L2: from kLineRequestsFromBytes.
HWY_INLINE bool PrefetchesIntoL2(uint64_t x_bytes) { return x_bytes >= kLineRequestsFromBytes; }

/// Whether a call that writes `y_bytes` has y past L1 (from 64 KiB) and written with ordinary stores
/// (under 4 MiB, where QDQ_STREAM_STORES=auto never streams: stream_threshold_bytes), so that its
/// loops ask for y's lines ahead as they do for x's. (Forced streaming writes such a y through a
/// stage; the requests then only cost time.)
HWY_INLINE bool OutputInL2(uint64_t y_bytes) {
  return y_bytes >= (uint64_t{64} << 10) && y_bytes < (uint64_t{4} << 20);
}

/// Asks for the lines of [at, at + bytes) into L2 (prefetcht1). An integer address: past the end of
/// x it points at nothing, and a prefetch there does nothing.
HWY_INLINE void PrefetchIntoL2(uintptr_t at, uintptr_t bytes) {
#if defined(__GNUC__) || defined(__clang__)
  for (uintptr_t line = 0; line < bytes; line += 64) __builtin_prefetch(reinterpret_cast<const void*>(at + line), 0, 2);
#else
  (void)at;
  (void)bytes;
#endif
}

/// The requests a loop makes for the lines ahead of its loads (PrefetchAhead).
struct LineAhead {
  bool into_l1 = false;
  bool into_l2 = false;
};

/// The requests a loop makes for an x of `x_bytes`: from kLineRequestsFromBytes on, `requests`
/// (line_requests: measured for that loop on this CPU where x streams from memory); below, `small`
/// (L1 only where the loop makes any).
HWY_INLINE LineAhead LineAheadFor(LineRequests requests, uint64_t x_bytes, LineAhead small) {
  if (!PrefetchesIntoL2(x_bytes)) return small;
  switch (requests) {
    case LineRequests::kNone: return {};
    case LineRequests::kL1: return {true, false};
    case LineRequests::kL1AndL2: return {true, true};
  }
  return small;
}

/// Asks for the `bytes` (whole lines) of x (or y) from address `at` on: kPrefetchL1Bytes ahead into
/// L1 and kPrefetchL2Bytes ahead into L2, as `ahead` says. Integer addresses, as above.
HWY_INLINE void PrefetchAhead(uintptr_t at, uintptr_t bytes, LineAhead ahead) {
  if (ahead.into_l1) {
    for (uintptr_t line = 0; line < bytes; line += 64)
      hwy::Prefetch(reinterpret_cast<const uint8_t*>(at + kPrefetchL1Bytes + line));
  }
  if (ahead.into_l2) PrefetchIntoL2(at + kPrefetchL2Bytes, bytes);
}

/// PrefetchAhead for a loop that reads downwards: the lines the same distances below [at, at + bytes).
HWY_INLINE void PrefetchBehind(uintptr_t at, uintptr_t bytes, LineAhead ahead) {
  if (ahead.into_l1) {
    for (uintptr_t line = 0; line < bytes; line += 64)
      hwy::Prefetch(reinterpret_cast<const uint8_t*>(at - kPrefetchL1Bytes + line));
  }
  if (ahead.into_l2) PrefetchIntoL2(at - kPrefetchL2Bytes, bytes);
}

// ---------------------------------------------------------------------------------------------
// Loads. `n` is the number of valid lanes (1..Lanes); partial vectors are zero-padded through a
// stack buffer so that nothing is read past the caller's data.

template <class T, class D>
HWY_INLINE hn::Vec<D> LoadPartial(D d, const T* p, size_t n) {
  if (n == hn::Lanes(d)) return hn::LoadU(d, p);
  HWY_ALIGN T buffer[HWY_MAX_BYTES / sizeof(T)] = {};
  std::memcpy(buffer, p, n * sizeof(T));
  return hn::Load(d, buffer);
}

template <class T, class D>
HWY_INLINE void StorePartial(D d, hn::Vec<D> v, T* p, size_t n) {
  if (n == hn::Lanes(d)) {
    hn::StoreU(v, d, p);
    return;
  }
  HWY_ALIGN T buffer[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(v, d, buffer);
  std::memcpy(p, buffer, n * sizeof(T));
}

// ---------------------------------------------------------------------------------------------
// Non-temporal stores (StoreMode::kStream). The kernels write each chunk's output to a buffer on
// the stack as usual and copy it to y here, so that every store helper, whatever its width and
// whatever y's alignment, gets the same whole aligned vectors. The copy stays in L1 and costs
// little next to the read for ownership of every output line it saves.

/// Bytes of a cache line: the unit a non-temporal store should fill completely.
constexpr uintptr_t kCacheLine = 64;

/// The bytes of a streamed output's last partial line that StreamBytes holds back: [start, start + n)
/// of the line that begins at `start`, until the next contiguous piece completes the line (which then
/// goes out as a whole non-temporal line) or the task ends (FlushStreamCarry). Without it, a y off a
/// line boundary had a partial line written with ordinary stores at every piece boundary, and that
/// store's read for ownership held the stores behind it: 0.64-0.68 of streaming against 0.89 aligned
/// (dequantize uint8 -> float32, 64 Mi, 4 KiB pieces). One per thread: a task runs on one thread.
struct StreamCarry {
  uint8_t* start = nullptr;
  size_t n = 0;
  alignas(64) uint8_t bytes[kCacheLine];
};

inline StreamCarry& ThreadStreamCarry() {
  static thread_local StreamCarry carry;
  return carry;
}

/// Writes out the bytes StreamBytes held back, with ordinary stores. Every kernel that streams calls
/// it at the end of its task, before the fence.
HWY_INLINE void FlushStreamCarry() {
  StreamCarry& carry = ThreadStreamCarry();
  if (carry.n != 0) std::memcpy(carry.start, carry.bytes, carry.n);
  carry.n = 0;
}

/// Copies n bytes from src to dst: the whole cache lines of dst with non-temporal stores (Stream)
/// of whole aligned vectors, the partial line at the start with ordinary stores, and the partial line
/// at the end held back (StreamCarry) for the next piece, which completes it if it starts where this
/// one ends. The caller flushes the carry (FlushStreamCarry) and fences (hwy::FlushStream) at the end
/// of its task, before anyone else reads dst.
HWY_INLINE void StreamBytes(const uint8_t* src, size_t n, uint8_t* dst) {
  const hn::ScalableTag<uint8_t> d;
  const size_t lanes = hn::Lanes(d);
  static_assert(HWY_MAX_BYTES <= kCacheLine || HWY_MAX_BYTES % kCacheLine == 0);
  const size_t align = lanes > kCacheLine ? lanes : kCacheLine;  // a whole line, or one vector
  StreamCarry& carry = ThreadStreamCarry();
  if (carry.n != 0) {
    if (dst == carry.start + carry.n && align == kCacheLine) {
      const size_t take = std::min(n, kCacheLine - carry.n);
      std::memcpy(carry.bytes + carry.n, src, take);
      carry.n += take;
      if (carry.n < kCacheLine) return;
      for (size_t k = 0; k < kCacheLine; k += lanes) hn::Stream(hn::Load(d, carry.bytes + k), d, carry.start + k);
      carry.n = 0;
      src += take;
      dst += take;
      n -= take;
    } else {
      FlushStreamCarry();
    }
  }
  const size_t head = (align - reinterpret_cast<uintptr_t>(dst) % align) % align;
  if (head >= n) {
    std::memcpy(dst, src, n);
    return;
  }
  std::memcpy(dst, src, head);
  const size_t lines_end = head + (n - head) / align * align;
  size_t i = head;
  for (; i + lanes <= lines_end; i += lanes) hn::Stream(hn::LoadU(d, src + i), d, dst + i);
  if (i == n) return;
  if (align == kCacheLine) {
    // dst + i starts a line: held back for the next piece.
    std::memcpy(carry.bytes, src + i, n - i);
    carry.start = dst + i;
    carry.n = n - i;
    return;
  }
  std::memcpy(dst + i, src + i, n - i);
}

/// Where a path writes the output bytes of one chunk or piece that belong in y at `dst`: at Out(),
/// which is dst itself or, streaming or `staged`, the caller's stage (vector-aligned, room for the
/// piece); then Finish(bytes) copies the staged bytes to dst, with StreamBytes or memcpy (a no-op
/// where Out() is dst). Not for QuantizeUniformBlocks, whose stage gathers the runs of several
/// blocks before it is copied.
class PieceOutput {
 public:
  PieceOutput(uint8_t* stage, bool stream, uint8_t* dst, bool staged = false)
      : out_(stream || staged ? stage : dst), dst_(dst), stream_(stream) {}
  uint8_t* Out() const { return out_; }
  void Finish(size_t bytes) const {
    if (stream_) {
      StreamBytes(out_, bytes, dst_);
    } else if (out_ != dst_) {
      std::memcpy(dst_, out_, bytes);
    }
  }

 private:
  uint8_t* out_;
  uint8_t* dst_;
  bool stream_;
};

/// body(k, n) for the vectors of [0, count): whole vectors first (n is then the constant lane
/// count, so partial-vector branches fold away), then one partial vector if count is not a multiple.
template <class Body>
HWY_INLINE void ForEachVector(int64_t count, Body&& body) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t k = 0;
  for (; k + lanes <= count; k += lanes) body(k, static_cast<size_t>(lanes));
  if (k < count) body(k, static_cast<size_t>(count - k));
}

/// a[i] −= b[i] modulo 2^8 for i in [0, count), a whole vector at a time, then 16 bytes, then the
/// rest; reads and writes nothing past count. (The unpacking that fills such buffers stores whole
/// vectors from 256 packed bytes on, 16 bytes below: there a wide load of its recent stores is not
/// forwarded, a stall or two per short segment, where the 16-byte loop cost 18 % of int4 blocked
/// along axis 0 on Zen 3.)
HWY_INLINE void SubtractBytesInPlace(uint8_t* a, const uint8_t* b, int64_t count) {
  const hn::ScalableTag<uint8_t> d;
  const hn::CappedTag<uint8_t, 16> d8;
  const size_t wide = hn::Lanes(d);
  const size_t lanes = hn::Lanes(d8);
  const auto n = static_cast<size_t>(count);
  size_t i = 0;
  for (; i + wide <= n; i += wide) hn::StoreU(hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, a + i);
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Sub(hn::LoadU(d8, a + i), hn::LoadU(d8, b + i)), d8, a + i);
  if (i < n) StorePartial(d8, hn::Sub(LoadPartial(d8, a + i, n - i), LoadPartial(d8, b + i, n - i)), a + i, n - i);
}

#endif  // QDQ_SIMD_HAS_KERNELS
}  // namespace HWY_NAMESPACE
}  // namespace qdq::detail::simd
HWY_AFTER_NAMESPACE();

#endif  // QDQ_SIMD_VECTORS_INL_H_
