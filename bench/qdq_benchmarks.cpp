// Google Benchmark front end for qdq's benchmark cases (bench_core.hpp): every case at an in-cache
// size (16 Ki elements) and a memory-bound size (64 Mi elements; set QDQ_BENCH_ELEMENTS to change),
// for the vectorised and the scalar kernels, each next to its streaming reference.
//
//   qdq_benchmarks --benchmark_filter='quantize/float32->uint8' --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "bench_core.hpp"

namespace {

using qdq::bench::CaseInfo;
using qdq::bench::PreparedCase;

/// Tensors stay allocated between benchmarks of the same case and size.
PreparedCase& prepared(const CaseInfo& info, int64_t elements, int64_t* actual) {
  static std::map<std::pair<std::string, int64_t>, std::pair<std::unique_ptr<PreparedCase>, int64_t>> cache;
  auto& slot = cache[{info.name, elements}];
  if (!slot.first) {
    cache.clear();  // keep at most one large case in memory
    auto& fresh = cache[{info.name, elements}];
    fresh.first = qdq::bench::prepare_case(info, elements, &fresh.second);
    *actual = fresh.second;
    return *fresh.first;
  }
  *actual = slot.second;
  return *slot.first;
}

// The bytes one call moves: x read as often as the operator reads it, y written once.
int64_t traffic_bytes(const PreparedCase& c) {
  return static_cast<int64_t>(c.bytes_in() * static_cast<uint64_t>(c.input_passes()) + c.bytes_out());
}

void run_kernel(benchmark::State& state, const CaseInfo* info, int64_t elements, bool scalar) {
  int64_t actual = 0;
  PreparedCase& c = prepared(*info, elements, &actual);
  qdq::ExecutionOptions options;
  options.num_threads = static_cast<int>(state.range(0));
  options.force_scalar = scalar;
  for (auto _ : state) c.run(options);
  state.SetItemsProcessed(state.iterations() * actual);
  state.SetBytesProcessed(state.iterations() * traffic_bytes(c));
}

void run_stream(benchmark::State& state, const CaseInfo* info, int64_t elements, bool non_temporal) {
  int64_t actual = 0;
  PreparedCase& c = prepared(*info, elements, &actual);
  for (auto _ : state) {
    if (c.input_passes() == 2) c.read(false);  // the operator's traffic (qdq bench takes the faster read)
    c.stream(non_temporal);
  }
  state.SetItemsProcessed(state.iterations() * actual);
  state.SetBytesProcessed(state.iterations() * traffic_bytes(c));
}

int register_all() {
  int64_t large = int64_t{64} << 20;
  if (const char* env = std::getenv("QDQ_BENCH_ELEMENTS")) large = std::atoll(env);
  for (const CaseInfo& info : qdq::bench::all_cases()) {
    for (int64_t elements : {int64_t{16384}, large}) {
      const std::string suffix = "/" + std::to_string(elements);
      benchmark::RegisterBenchmark((info.name + suffix + "/simd").c_str(), run_kernel, &info, elements, false)
          ->Arg(1)
          ->Arg(2)
          ->UseRealTime();
      benchmark::RegisterBenchmark((info.name + suffix + "/scalar").c_str(), run_kernel, &info, elements, true)
          ->Arg(1)
          ->UseRealTime();
      benchmark::RegisterBenchmark((info.name + suffix + "/stream").c_str(), run_stream, &info, elements, false)
          ->UseRealTime();
      benchmark::RegisterBenchmark((info.name + suffix + "/stream-nt").c_str(), run_stream, &info, elements, true)
          ->UseRealTime();
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
