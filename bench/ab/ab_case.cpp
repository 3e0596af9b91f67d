// One side of scripts/ab_inprocess.sh: a shared library built from one build tree's qdq and bench
// cases, loaded beside the other side's by ab_driver so that both run in one process.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "bench_core.hpp"

namespace {
std::unique_ptr<qdq::bench::PreparedCase> prepared;
}  // namespace

/// Prepares the `qdq bench` case named `name` with about `elements` elements; returns the exact
/// count, or 0 where no case has that name. A blocked case's name may end in another block size
/// than the bench's (".../blocked-last-16" for ".../blocked-last-32"). QDQ_AB_TARGET, where set,
/// names the Highway target the kernels run on (as `qdq bench --target`), and QDQ_AB_OFFSET the
/// bytes past a cache line where x and y start (as `qdq bench --offset`). Allocates the case's
/// tensors; single-threaded.
extern "C" int64_t qdq_ab_prepare(const char* name, int64_t elements) {
  if (const char* target = std::getenv("QDQ_AB_TARGET"); target != nullptr && *target != '\0') {
    qdq::set_simd_target(target);
  }
  const std::string wanted = name;
  for (auto info : qdq::bench::all_cases()) {
    if (info.block_size > 0 && info.name != wanted) {
      const std::string suffix = "-" + std::to_string(info.block_size);
      const std::string stem = info.name.substr(0, info.name.size() - suffix.size());
      if (wanted.rfind(stem + "-", 0) == 0) {
        const std::string block = wanted.substr(stem.size() + 1);
        if (!block.empty() && block.find_first_not_of("0123456789") == std::string::npos) {
          info.block_size = std::stoll(block);
          info.name = wanted;
        }
      }
    }
    if (info.name != wanted) continue;
    int64_t actual = 0;
    const char* offset = std::getenv("QDQ_AB_OFFSET");
    prepared = qdq::bench::prepare_case(info, elements, &actual, offset != nullptr ? std::atoi(offset) : 0);
    return actual;
  }
  return 0;
}

/// Runs the prepared case `calls` times on one thread; returns the mean nanoseconds per call.
/// Allocates nothing of its own.
extern "C" double qdq_ab_time(int calls) {
  qdq::ExecutionOptions options;
  options.num_threads = 1;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) prepared->run(options);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / calls;
}
