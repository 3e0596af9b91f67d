// The store policy of the vectorised kernels; see store_policy.hpp. Measured on the Intel Xeon of
// docs/performance.md ("Non-temporal stores"): they lose in and near the L2, are level up to 16 MiB
// of output and win from 32 MiB (about 2× at 64 MiB and above). That VM reports the host's 300 MiB
// L3, shared with other guests, so the reported LLC alone would put the threshold 10× too high: the
// threshold is capped at 16 × the per-core L2, which is where the gain started there. On Zen 4
// (32 MiB L3, 1 MiB L2s) they win from twice the L3 (docs/performance.md, "Zen 4").
#include "kernels/store_policy.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kernels/simd/simd_kernels.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

/// A sysfs cache size ("48K", "2048K", "1M"), or 0 where it does not parse.
uint64_t parse_cache_size(const std::string& text) {
  size_t used = 0;
  uint64_t value = 0;
  try {
    value = std::stoull(text, &used);
  } catch (...) {
    return 0;
  }
  const std::string unit = text.substr(used, text.find_first_of(" \n", used) - used);
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return unit.empty() ? value : 0;
}

/// The first line of a sysfs file, or "" where it cannot be read.
std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct CacheSizes {
  uint64_t l2 = 0;   // per core
  uint64_t llc = 0;  // the highest level's size
};

/// CPU 0's data and unified caches as Linux reports them; zeros where it does not.
CacheSizes read_cache_sizes() {
  CacheSizes sizes;
  int llc_level = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    const std::string level_text = read_line(dir + "level");
    if (level_text.empty()) break;
    if (read_line(dir + "type") == "Instruction") continue;
    const int level = std::atoi(level_text.c_str());
    const uint64_t size = parse_cache_size(read_line(dir + "size"));
    if (level == 2) sizes.l2 = size;
    if (level >= llc_level && size > 0) {
      llc_level = level;
      sizes.llc = size;
    }
  }
  return sizes;
}

/// read_cache_sizes(), once per process (the threshold and the probe both need them).
const CacheSizes& cache_sizes() {
  static const CacheSizes sizes = read_cache_sizes();
  return sizes;
}

StorePolicy environment_policy() {
  static const StorePolicy policy = parse_store_policy(std::getenv("QDQ_STREAM_STORES"));
  return policy;
}

/// The probe's output size: twice the last-level cache the OS reports, within [8 MiB, 64 MiB]. An
/// output that the cache holds keeps its dirty lines there while a pass is timed, and ordinary stores
/// then look as fast as non-temporal ones or faster: on Zen 4 (32 MiB L3) an 8 MiB probe measured
/// them 1.1x faster, while the kernels' 64 Mi dequantize ran 1.25-1.7x faster streaming.
size_t probe_output_bytes() {
  const uint64_t llc = cache_sizes().llc;
  return static_cast<size_t>(std::clamp<uint64_t>(2 * llc, 8 * kMiB, 64 * kMiB));
}

StreamProbe run_probe() {
  StreamProbe probe;
  const int64_t target = simd::best_target();
  if (target == 0) return probe;  // no vectorised kernels: nothing would stream
  // Dequantize's traffic (four bytes written per byte read, both from memory): on Zen 4 ordinary
  // stores fill a buffer past the cache within 0.9-1.2x the time of non-temporal ones, but lose
  // 1.3x once each line's read-for-ownership competes with a read stream. A few tens of ms in all,
  // faulting the buffers in included (64 MiB + 16 MiB there).
  const size_t bytes = probe_output_bytes();
  // One block for both buffers, on 2 MiB pages where the kernel grants them: with 4 KiB pages
  // faulting the 80 MiB in took two thirds of the probe's time.
  constexpr size_t kHugePage = 2 * kMiB;
  const size_t block_bytes = (bytes + bytes / 4 + kHugePage - 1) / kHugePage * kHugePage;
  const std::unique_ptr<uint8_t, decltype(&std::free)> block(
      static_cast<uint8_t*>(std::aligned_alloc(kHugePage, block_bytes)), &std::free);
  if (block == nullptr) return probe;  // no memory to measure with: ordinary stores
#ifdef MADV_HUGEPAGE
  ::madvise(block.get(), block_bytes, MADV_HUGEPAGE);  // advice: where refused, the pages stay 4 KiB
#endif
  uint8_t* const buffer = block.get();
  uint8_t* const source = block.get() + bytes;
  std::memset(source, 0x5A, bytes / 4);
  // Ordinary stores leave their lines dirty in the cache, and the last of them are not written back
  // while the pass is timed: the pass after it pays. The outputs this decides for are larger than
  // the cache and pay as they go, so the ordinary stores are charged for their write-backs: the
  // non-temporal pass that follows an ordinary one must first write those lines back, and its time
  // beyond a non-temporal pass over clean lines is theirs. Each round: a non-temporal pass after a
  // non-temporal one (clean lines), an ordinary pass, a non-temporal pass after it. Each round's
  // gain is taken within the round and the median round decides: on Zen 4, where the gain is
  // small (1.05-1.3x per round), the fastest pass of each kind taken over three rounds read
  // 0.98-1.18x and chose ordinary stores in 1 of 12 processes, which then ran 64 Mi blocked
  // dequantize 2.2x slower. The first, untimed pass faults the pages in.
  simd::widen_lines(target, source, buffer, bytes, StoreMode::kStream);
  const auto timed_pass = [&](StoreMode mode) {
    const auto start = std::chrono::steady_clock::now();
    simd::widen_lines(target, source, buffer, bytes, mode);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  constexpr int kRounds = 5;
  std::array<double, kRounds> gains{};
  double fastest_stream = 1e30;
  for (double& gain : gains) {
    const double clean_stream = timed_pass(StoreMode::kStream);
    const double normal = timed_pass(StoreMode::kNormal);
    const double stream_after_normal = timed_pass(StoreMode::kStream);
    gain = (normal + std::max(0.0, stream_after_normal - clean_stream)) / clean_stream;
    fastest_stream = std::min(fastest_stream, clean_stream);
  }
  std::nth_element(gains.begin(), gains.begin() + kRounds / 2, gains.end());
  probe.output_bytes = bytes;
  probe.gain = gains[kRounds / 2];
  const auto traffic = static_cast<double>(bytes + bytes / 4);
  probe.stream_gbps = traffic / fastest_stream * 1e-9;
  probe.normal_gbps = probe.stream_gbps / probe.gain;
  // Non-temporal stores cost the kernels that are not memory-bound a copy through a stage (0.8-0.9x
  // on Zen 4), so a tie keeps ordinary stores: a 2 % margin. Every machine measured so far gained
  // from them past its cache (Zen 3 1.2-1.7x, the Xeon about 2x, Zen 4 1.05-1.3x).
  probe.stream_wins = probe.gain >= 1.02;
  return probe;
}

}  // namespace

StorePolicy parse_store_policy(const char* value) {
  if (value == nullptr || value[0] == '\0' || std::strcmp(value, "auto") == 0) return StorePolicy::kAuto;
  if (std::strcmp(value, "always") == 0) return StorePolicy::kAlways;
  if (std::strcmp(value, "never") == 0) return StorePolicy::kNever;
  throw Error(std::string("QDQ_STREAM_STORES is '") + value + "', but must be auto, always or never");
}

uint64_t stream_threshold_bytes() {
  static const uint64_t threshold = [] {
    const CacheSizes& sizes = cache_sizes();
    uint64_t t = 32 * kMiB;
    if (sizes.l2 > 0 && sizes.llc > 0) {
      // A last-level cache of at most 32 L2s is the machine's own (Zen 4: 32 MiB over 1 MiB L2s):
      // there outputs up to twice its size still gain from it, as the input and output of a call
      // repeated on the same buffers stay in it (Zen 4, one thread: 2/4-bit dequantize to float32
      // 0.41-0.59x streaming at 16 MiB of output, 0.63-0.98x at 32 MiB, 0.91-1.08x at 64 MiB). A
      // larger one is a host's, shared (the Intel Xeon's 300 MiB), or spread over many small L2s
      // (Zen 3: 32 MiB over 512 KiB), where streaming won from 16x the L2.
      t = sizes.llc <= 32 * sizes.l2 ? 2 * sizes.llc : std::min(sizes.llc, 16 * sizes.l2);
    } else if (sizes.llc > 0) {
      t = sizes.llc;
    } else if (sizes.l2 > 0) {
      t = 16 * sizes.l2;
    }
    return std::max(t, 4 * kMiB);
  }();
  return threshold;
}

const StreamProbe& stream_probe() {
  static const StreamProbe probe = run_probe();
  return probe;
}

StoreMode choose_store_mode(uint64_t output_bytes) {
  switch (environment_policy()) {
    case StorePolicy::kAlways: return StoreMode::kStream;
    case StorePolicy::kNever: return StoreMode::kNormal;
    case StorePolicy::kAuto: break;
  }
  if (output_bytes < stream_threshold_bytes()) return StoreMode::kNormal;
  return stream_probe().stream_wins ? StoreMode::kStream : StoreMode::kNormal;
}

}  // namespace qdq::detail
