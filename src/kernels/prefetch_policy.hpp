// Which lines of a large x the vectorised loops ask for ahead of their loads (software prefetch):
// on some CPUs the requests keep memory busy where the hardware prefetchers alone would not (the
// Intel Xeon: 1.2–1.4× at 64 Mi elements), on others they only take load slots and fill buffers the
// hardware prefetchers would have used (Zen 3 at 64 Mi elements: DynamicQuantizeLinear 1.08×,
// 16-bit dequantize 1.15× faster without the L2 ones). A one-time probe measures each kind of loop
// with each choice; QDQ_PREFETCH overrides it.
#pragma once

#include <cstdint>

namespace qdq::detail {

/// The loops that read a large x: DynamicQuantizeLinear's range pass, the quantize loop, the
/// dequantize loop (8/16-bit and float8 x, read where it is).
enum class ReadingLoop : uint8_t { kRange, kQuantize, kDequantize };
inline constexpr int kReadingLoops = 3;

/// What such a loop asks for: nothing, x's lines 1 KiB ahead into L1, or those and 4 KiB ahead into
/// L2.
enum class LineRequests : uint8_t { kNone, kL1, kL1AndL2 };

/// x from this size on asks for lines into L2 at all (line_requests); a smaller x is in the cache
/// when it is hot (an engine's activations), and there L2 requests cost 4 % of an in-cache call for
/// nothing.
inline constexpr uint64_t kLineRequestsFromBytes = uint64_t{1} << 20;

/// x from this size on streams from memory: its loops take the measured requests.
inline constexpr uint64_t kMeasuredFromBytes = uint64_t{16} << 20;

/// The requests `loop` makes for an x of `x_bytes`, 1 MiB or more: QDQ_PREFETCH (read once per
/// process) where it names them; else, from kMeasuredFromBytes on, what prepare_line_requests
/// measured for that loop on this CPU, and L1 and L2 below it (and until the probe has run: the
/// choice measured on the Intel Xeon, where an x in its caches gained from them). Allocates nothing;
/// thread-safe; cheap (an atomic load).
LineRequests line_requests(ReadingLoop loop, uint64_t x_bytes);

/// Before a call whose `loop` reads an x of `x_bytes`: from kMeasuredFromBytes on, under QDQ_PREFETCH
/// auto for that loop, measures once per process which of kL1 and kL1AndL2 runs that loop faster
/// from memory (the probe: the library's own operator on a 32 MiB x, 16 MiB for dequantize, written
/// with non-temporal stores before each timed call, one thread, each choice three times; 25–60 ms
/// per loop on the 2-core Zen 3, at the first such call only), keeping L1 and L2 unless L1 alone is
/// at least 3 % faster. Throws qdq::Error for a bad QDQ_PREFETCH (at any size). Allocates the
/// probe's buffers (up to 48 MiB) only; thread-safe.
void prepare_line_requests(ReadingLoop loop, uint64_t x_bytes);

/// What the probe of `loop` measured: seconds per call with each choice (0 where it has not run,
/// and under QDQ_PREFETCH). Thread-safe.
struct LineRequestProbe {
  double l1_seconds = 0;
  double l1_and_l2_seconds = 0;
};
LineRequestProbe line_request_probe(ReadingLoop loop);

/// The name of a choice: "none", "L1", "L1+L2".
const char* line_requests_name(LineRequests requests);

/// For tests: makes line_requests(loop) return *requests on every thread until called with nullptr
/// (back to the setting or the measurement). Results never depend on it. Thread-safe.
void force_line_requests(ReadingLoop loop, const LineRequests* requests);

}  // namespace qdq::detail
