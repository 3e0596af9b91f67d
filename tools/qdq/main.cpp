// qdq — the command-line tool: run ONNX QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear
// models and check qdq against ONNX backend node tests.
//
// Exit codes: 0 success, 1 bad input or failed tests (one line on stderr), 2 bad usage.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <vector>

#include "commands.hpp"

namespace qdq::cli {

void report_error(std::string_view message) noexcept {
  try {
    std::string line = "qdq: ";
    for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  } catch (...) {
    std::fputs("qdq: error (out of memory while reporting it)\n", stderr);
  }
}

void print_line(std::string_view line) {
  std::cout.write(line.data(), static_cast<std::streamsize>(line.size()));
  std::cout.put('\n');
}

namespace {

// Output goes through std::cout; a failed write (EPIPE, ENOSPC, a closed descriptor) leaves it in a
// failed state, which is checked once here so that a truncated listing never exits 0.
int finish(int code) {
  errno = 0;
  std::cout.flush();
  if (!std::cout || std::ferror(stdout)) {
    const int error = errno;
    report_error(std::string("error writing to standard output") +
                 (error != 0 ? std::string(": ") + std::strerror(error) : std::string()));
    return code == 0 ? 1 : code;
  }
  return code;
}

int run_main(int argc, char** argv) {
  CLI::App app{"qdq: bit-exact ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear", "qdq"};
  app.set_version_flag("--version", std::string(qdq::version()), "Print qdq's version and exit");
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the subcommand name
  GlobalOptions globals;
  app.add_option("--threads", globals.threads,
                 "Threads per operator call (0 = QDQ_NUM_THREADS or all hardware threads)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            const bool digits =
                !value.empty() && value.size() <= 6 && value.find_first_not_of("0123456789") == std::string::npos;
            return digits ? std::string() : "'" + value + "' is not a thread count (0 to 999999)";
          },
          ""))
      ->type_name("N");
  app.add_flag("--force-scalar", globals.force_scalar, "Use the scalar reference kernels only");

  const std::vector<Command> commands = {
    register_run(app, globals),
    register_test(app, globals),
    register_quantize(app, globals),
    register_convert(app, globals),
#if defined(QDQ_CLI_HAVE_BENCH)
    register_bench(app, globals),
#endif
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      app.exit(e);  // --help / --version: prints to stdout
      return finish(0);
    }
    for (const Command& command : commands) {
      if (command.app->parsed() && command.usage_error_exit_code != 2) {
        report_error(std::string("error: ") + e.what() + " (see 'qdq " + command.app->get_name() + " --help')");
        return command.usage_error_exit_code;
      }
    }
    report_error(std::string(e.what()) + " (see 'qdq --help')");
    return 2;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return finish(command.run());
  }
  report_error("no subcommand given (see 'qdq --help')");
  return 2;
}

}  // namespace
}  // namespace qdq::cli

int main(int argc, char** argv) {
  // A reader that goes away (qdq test ... | head) must not kill qdq halfway through writing files;
  // the failed write is reported at exit instead.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return qdq::cli::run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    qdq::cli::report_error("out of memory");
  } catch (const std::exception& e) {
    qdq::cli::report_error(e.what());
  } catch (...) {
    qdq::cli::report_error("unknown error");
  }
  return 1;
}
