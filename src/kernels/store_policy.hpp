// When the vectorised kernels write y with non-temporal stores (StoreMode::kStream): for outputs
// above a threshold taken from the cache sizes the OS reports, and only where a one-time probe
// measured non-temporal stores to be faster on this machine. QDQ_STREAM_STORES overrides it.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace qdq::detail {

/// QDQ_STREAM_STORES: auto (the default) decides by size and measurement; always and never force it.
enum class StorePolicy { kAuto, kAlways, kNever };

/// The policy a QDQ_STREAM_STORES value names (nullptr or empty: auto), or a qdq::Error naming the
/// bad value. Allocates only for the error; thread-safe.
StorePolicy parse_store_policy(const char* value);

/// What the one-time probe measured: the GB/s (bytes read and written) of the same widening loop
/// with non-temporal stores (the fastest pass) and with ordinary stores (their write-backs included;
/// that rate over the median round's gain), and whether the former won clearly enough to be used.
struct StreamProbe {
  uint64_t output_bytes = 0;  // the widening loop's output; 0 where the probe did not run
  double normal_gbps = 0;
  double stream_gbps = 0;
  double gain = 0;  // the median round's ordinary-store time over its non-temporal time
  bool stream_wins = false;
};

/// The output size in bytes from which auto streams, from the cache sizes the OS reports (sysfs):
/// twice the last-level cache where it is at most 32× the per-core L2, else the smaller of the two
/// and 16× the L2 (32 MiB where sysfs reports neither), at least 4 MiB. Reads sysfs once per
/// process; thread-safe.
uint64_t stream_threshold_bytes();

/// Runs the probe once per process (a byte buffer widened to four times its size, dequantize's
/// traffic, the output twice the last-level cache within [8 MiB, 64 MiB], written sixteen times and
/// timed fifteen: about 50 ms on the 2-core Zen 4 VM with faulting the buffers in) and returns its result;
/// later calls return the same. Allocates the buffers for the probe only; thread-safe.
const StreamProbe& stream_probe();

/// The stores for a call that writes `output_bytes`: QDQ_STREAM_STORES (read once per process) if
/// always or never; under auto, kStream when the output is at least stream_threshold_bytes() and
/// stream_probe() found non-temporal stores faster (the probe runs at the first such call only),
/// kNormal otherwise and on machines without vectorised kernels. Throws qdq::Error for a bad
/// QDQ_STREAM_STORES; thread-safe.
StoreMode choose_store_mode(uint64_t output_bytes);

}  // namespace qdq::detail
