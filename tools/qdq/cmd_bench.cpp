// `qdq bench [--json] [--size ELEMENTS] [--filter TEXT] [--repeats N] [--compare-scalar]
// [--compare-one-thread] [--load N] [--target NAME] [--offset BYTES] [--small-pages]`: time the
// QuantizeLinear/DequantizeLinear kernels on qdq's benchmark cases (bench/bench_core.hpp), each next to the machine's
// limits measured in the same run: a streaming loop over the same bytes (the better of normal and non-temporal stores)
// and, in cache, a ceiling loop (inexact multiply-by-reciprocal quantize, convert + fma dequantize). Threads come from
// the global
// --threads option (default here: 1); --force-scalar times the scalar reference kernels; --load N keeps N busy threads
// running beside it throughout; --target runs another SIMD target's kernels (and references); --offset puts x and y
// that many bytes past a cache line, as a caller's buffers may be (NumPy's often start 16 bytes in); --small-pages
// keeps the buffers off transparent huge pages.
#include <memory>
#include <string>

#include "bench_core.hpp"
#include "commands.hpp"

namespace qdq::cli {

Command register_bench(CLI::App& app, const GlobalOptions& globals) {
  struct Arguments {
    bool json = false;
    int64_t size = int64_t{64} << 20;
    std::string filter;
    int repeats = 5;
    bool compare_scalar = false;
    bool compare_one_thread = false;
    int load = 0;
    std::string target;
    int offset = 0;
    bool small_pages = false;
  };
  auto args = std::make_shared<Arguments>();
  CLI::App* sub = app.add_subcommand(
      "bench", "Measure kernel throughput against same-run streaming and in-cache ceiling references");
  sub->add_flag("--json", args->json, "Print the results as a JSON array");
  sub->add_option("--size", args->size, "Elements per case (default 67108864; e.g. 16384 for in-cache)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 40));
  sub->add_option("--filter", args->filter, "Only cases whose name contains TEXT (e.g. 'quantize/float32->uint8')");
  sub->add_option("--repeats", args->repeats, "Timed samples per measurement; the median is reported")
      ->check(CLI::Range(1, 1000));
  sub->add_flag("--compare-scalar", args->compare_scalar, "Also time the scalar reference kernels (extra rows)");
  sub->add_flag("--compare-one-thread", args->compare_one_thread,
                "Also time each case on one thread, interleaved with the --threads samples (extra columns)");
  sub->add_option("--load", args->load,
                  "Run N busy threads beside the benchmark for its whole duration (a loaded machine)")
      ->check(CLI::Range(0, 64));
  sub->add_option("--target", args->target,
                  "Run the SIMD kernels and references of this Highway target (AVX3, AVX2, SSE4, ...; default: the "
                  "best this CPU runs); an error where the CPU or the build lacks it");
  sub->add_option("--offset", args->offset,
                  "Start x and y this many bytes past a cache line (default 0), as a caller's buffers may")
      ->check(CLI::Range(0, 63));
  sub->add_flag("--small-pages", args->small_pages,
                "Put the buffers on ordinary 4 KiB pages instead of transparent 2 MiB pages (in cache, a run's figures "
                "then depend on where its pages land in the L2)");
  Command command;
  command.app = sub;
  command.run = [args, &globals]() {
    bench::BenchOptions options;
    options.elements = args->size;
    options.threads = globals.threads > 0 ? globals.threads : 1;
    options.filter = args->filter;
    options.repeats = args->repeats;
    options.force_scalar = globals.force_scalar;
    options.compare_scalar = args->compare_scalar;
    options.compare_one_thread = args->compare_one_thread;
    options.load = args->load;
    options.target = args->target;
    options.offset = args->offset;
    options.small_pages = args->small_pages;
    set_simd_target(options.target);  // refused before any output where the CPU or the build lacks it
    if (args->json) {
      print_line(bench::to_json(bench::run_benchmarks(options)));
    } else {
      print_line(bench::table_header(options.compare_one_thread));
      bench::run_benchmarks(options, [](const bench::BenchResult& r) { print_line(bench::table_row(r)); });
    }
    return 0;
  };
  return command;
}

}  // namespace qdq::cli
