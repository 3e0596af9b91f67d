// qdq's benchmark core, shared by `qdq bench` and the Google Benchmark binary: a fixed list of
// QuantizeLinear/DequantizeLinear cases, each timed through the public API and set against the
// machine's limits measured in the same run: a streaming loop that reads and writes the same numbers
// of bytes (the better of normal and non-temporal stores), and in-cache ceiling loops (an inexact
// multiply-by-reciprocal quantize, a convert + fma dequantize).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qdq/qdq.hpp"

namespace qdq::bench {

struct BenchOptions {
  int64_t elements = int64_t{64} << 20;  // elements per case (shapes are rounded to fit)
  int threads = 1;                       // ExecutionOptions::num_threads; 0 = qdq's default
  std::string filter;                    // only cases whose name contains this text
  int repeats = 5;                       // timed samples per measurement; the median is reported
  bool force_scalar = false;             // time the scalar reference kernels
  bool compare_scalar = false;           // also time the scalar kernels, reported as extra rows
  bool compare_one_thread = false;       // also time each case on one thread, samples interleaved (means of 0.5 s each)
  int load = 0;                          // busy threads run beside the benchmark for its whole duration
  int offset = 0;                        // x and y start this many bytes past a cache line (0-63)
  // Buffers on 4 KiB pages, not transparent 2 MiB pages. In cache, a process's figures on 4 KiB pages
  // depend on where they land in the physically indexed L2 (bench_core.cpp's allocator).
  bool small_pages = false;
  std::string target;  // SIMD target of the kernels and references ("" = the best);
                       // qdq::set_simd_target refuses one the CPU or build lacks
};

struct BenchResult {
  std::string name;  // e.g. "quantize/float32->uint8/per-tensor"
  std::string op;    // "quantize", "dequantize" or "dynamic" (DynamicQuantizeLinear)
  std::string x;     // ONNX type names
  std::string y;
  std::string granularity;  // "per-tensor", "per-axis", "blocked-last", "blocked-axis0"
  int64_t block_size = 0;
  int64_t elements = 0;
  int threads = 1;
  std::string kernel;             // "simd" or "scalar"
  double seconds = 0;             // median time of one call (the mean, with compare_one_thread)
  double gelem_per_s = 0;         // 1e9 elements per second
  double gbps = 0;                // (bytes read + bytes written) / seconds / 1e9
  double stream_gbps = 0;         // the streaming loop on the same bytes, same run (medians, the faster of
                                  // the runs before and after the kernel): the better of
  double stream_normal_gbps = 0;  // normal stores
  double stream_nt_gbps = 0;      // and non-temporal stores (with the fence at the end of each part)
  double ratio = 0;               // gbps / stream_gbps
  // The in-cache ceiling for the operation, same run, same element count and threads: quantize cases
  // against ceiling_quantize_int8, dequantize cases against ceiling_dequantize_uint8.
  double ceiling_gelem_per_s = 0;
  double ceiling_ratio = 0;      // gelem_per_s / ceiling_gelem_per_s
  std::string reference;         // the limit that applies: "ceiling" in cache, else "streaming"
  double vs_reference = 0;       // ceiling_ratio or ratio, as `reference` says
  std::string reference_target;  // the Highway target the reference loops ran on, e.g. "AVX3"
  std::string target;            // the SIMD target the kernels ran on (qdq::simd_target(); --target)
  // How the kernel computes the quantize quotient here: "division" or, as measured for the target at
  // first use, "rounding check" or "Markstein reciprocal"; empty for dequantize.
  std::string routes;
  // The stores the kernel wrote y with: "normal" or "non-temporal" (qdq::output_stores for the
  // call's output bytes: QDQ_STREAM_STORES, or size and the library's one-time probe).
  std::string stores;
  // The requests for x's lines ahead of the loads (qdq::x_line_requests: "none", "L1" or "L1+L2";
  // DynamicQuantizeLinear's two loops as "range, quantize"); empty for the scalar kernels.
  std::string x_requests;
  int load = 0;    // busy threads that ran beside it
  int offset = 0;  // bytes past a cache line where x and y started
  // "2 MiB" where the larger of x and y lay on a transparent huge page (the default, where the kernel
  // grants it), else "4 KiB" (small_pages, a buffer under 16 KiB, or refused): see bench_core.cpp's
  // allocator for why.
  std::string pages;
  double one_thread_gelem_per_s = 0;  // the same case on one thread (compare_one_thread), else 0
  double vs_one_thread = 0;           // gelem_per_s / one_thread_gelem_per_s (compare_one_thread), else 0
  // compare_one_thread with more than one thread: the same tasks on the same number of threads with
  // no pool, a fixed share of them per thread and helpers that spin between calls (StaticSplit, in
  // bench_core.cpp), interleaved with the two above: the machine's own gain from more threads for
  // this work, against which the pool's is measured. Else 0.
  double static_split_gelem_per_s = 0;
  double vs_static_split = 0;  // gelem_per_s / static_split_gelem_per_s
};

/// One benchmark case with its tensors allocated: call run() to execute the operator once.
class PreparedCase {
 public:
  virtual ~PreparedCase() = default;
  virtual void run(const ExecutionOptions& options) = 0;
  /// The streaming reference: reads bytes_in() bytes and writes bytes_out() bytes, vectorised, with
  /// normal or non-temporal stores.
  virtual void stream(bool non_temporal) = 0;
  /// The reading reference: reads the bytes_in() bytes once more (whole multiples of 256 bytes), with
  /// or without asking for lines ahead, for a case whose operator reads x twice.
  virtual void read(bool prefetch) = 0;
  /// How many times the operator reads x: 2 for DynamicQuantizeLinear, whose range pass reads all of
  /// x before its quantize pass can start, else 1.
  virtual int input_passes() const = 0;
  virtual uint64_t bytes_in() const = 0;
  virtual uint64_t bytes_out() const = 0;
};

struct CaseInfo {
  std::string name;
  std::string op;
  DataType x;
  DataType y;
  std::string granularity;
  int64_t block_size;
  bool e8m0_scales = false;  // FLOAT8E8M0 scales (the MX formats), else scales of the float type
  bool symmetric = false;    // integer codes without a zero point input (symmetric quantization)
};

/// Cases whose input and output together take at most this many bytes are "in cache": their
/// reference is the ceiling loop (the L2 of the machines measured is 1-2 MiB per core).
constexpr uint64_t kInCacheBytes = uint64_t{2} << 20;

/// Every case, in the order they run.
const std::vector<CaseInfo>& all_cases();

/// Allocates and fills the tensors of a case with about `elements` elements (the exact count is
/// returned by elements()), x and y starting `offset` bytes (0-63) past a cache line (the reference
/// loops use line-aligned buffers of the same sizes); buffers of 16 KiB and more on transparent huge
/// pages (BenchOptions::small_pages says why). Single-threaded.
std::unique_ptr<PreparedCase> prepare_case(const CaseInfo& info, int64_t elements, int64_t* actual_elements,
                                           int offset = 0);

/// Runs the cases that match options.filter; `progress` (if set) gets each result as it is measured.
std::vector<BenchResult> run_benchmarks(const BenchOptions& options,
                                        const std::function<void(const BenchResult&)>& progress = {});

/// The results as a JSON array of objects (one per result, fields as in BenchResult).
std::string to_json(const std::vector<BenchResult>& results);

/// The results as an aligned text table, one line per result plus a header.
std::string to_table(const std::vector<BenchResult>& results);

/// One table row (without newline), and the header it lines up with; rows measured with
/// compare_one_thread have two more columns, which `thread_columns` adds to the header.
std::string table_header(bool thread_columns = false);
std::string table_row(const BenchResult& result);

}  // namespace qdq::bench
