// The qdq command line: one register_X function per subcommand, so a new subcommand (e.g. a later
// `qdq bench`) is one more .cpp file and one more line in main.cpp.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "qdq/qdq.hpp"

namespace qdq::cli {

/// Options given before or after the subcommand name (the app uses CLI11 fallthrough).
struct GlobalOptions {
  int threads = 0;            // --threads: ExecutionOptions::num_threads (0 = qdq's default)
  bool force_scalar = false;  // --force-scalar

  /// The ExecutionOptions these options describe. Allocates nothing.
  ExecutionOptions execution() const {
    ExecutionOptions options;
    options.num_threads = threads;
    if (force_scalar) options.force_scalar = true;
    return options;
  }
};

/// A registered subcommand: `app` is the CLI11 subcommand, `run` is called after a successful parse
/// if that subcommand was chosen and returns the process exit code. `run` may throw; main() turns any
/// exception into one line on stderr and exit code 1.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
  /// Exit code for a command line CLI11 cannot parse once this subcommand is named (2 = usage error;
  /// `quantize` promises 1 and "qdq: error: ..." for every failure).
  int usage_error_exit_code = 2;
};

/// `qdq run MODEL INPUT... [-o DIR]` (cmd_run.cpp).
Command register_run(CLI::App& app, const GlobalOptions& globals);

/// `qdq test PATH... [--dump-outputs DIR]` (cmd_test.cpp).
Command register_test(CLI::App& app, const GlobalOptions& globals);

/// `qdq quantize IN.onnx -o OUT.onnx --format F [...]` (cmd_quantize.cpp).
Command register_quantize(CLI::App& app, const GlobalOptions& globals);

/// `qdq bench [--json] [--size N] [--filter TEXT] [--repeats N] [--compare-scalar]` (cmd_bench.cpp;
/// built with QDQ_BUILD_BENCH).
Command register_bench(CLI::App& app, const GlobalOptions& globals);

/// `qdq convert IN.onnx -o OUT.onnx --opset N [--json]` (cmd_convert.cpp).
Command register_convert(CLI::App& app, const GlobalOptions& globals);

/// Installs SIGINT/SIGTERM/SIGHUP handlers that remove the staged files of every qdq::onnx::ModelWriter
/// (qdq::onnx::remove_temporary_model_files) and then re-raise the signal. For subcommands that write
/// models (cmd_quantize.cpp). Not thread-safe; call before writing.
void install_model_write_cleanup();

/// Prints "qdq: MESSAGE" as exactly one line on stderr (newlines in MESSAGE become spaces).
/// Thread-compatible; never throws.
void report_error(std::string_view message) noexcept;

/// Writes `line` and a newline to stdout. Output errors (a closed pipe: SIGPIPE is ignored, so writes
/// fail with EPIPE) are not reported here; main() checks stdout once at exit.
void print_line(std::string_view line);

}  // namespace qdq::cli
