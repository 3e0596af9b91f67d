// `qdq quantize IN.onnx -o OUT.onnx --format F ...`: weight-only quantization of a model
// (qdq::onnx::quantize_model_file), its report, and the optional --check against the original.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "model_io.hpp"
#include "quantize_model.hpp"

extern char** environ;

namespace qdq::cli {
namespace {

struct QuantizeArguments {
  std::string input;
  std::string output;
  std::string format;
  int64_t block_size = 32;
  bool symmetric = false;
  bool asymmetric = false;
  int64_t min_elements = 1024;
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  std::vector<std::string> op_types;
  bool external_data = false;
  bool json = false;
  bool check = false;
  std::vector<std::string> check_inputs;
  std::string check_evaluator = "auto";
  CLI::Option* block_size_option = nullptr;
};

std::string executable_folder() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.parent_path().string();
}

// QDQ_CHECK_SCRIPT, else check_model.py next to the executable (build tree), else the installed copy.
std::string find_check_script() {
  if (const char* env = std::getenv("QDQ_CHECK_SCRIPT"); env != nullptr && *env != '\0') return env;
  const std::string folder = executable_folder();
  std::error_code error;
  for (const std::string& candidate : {folder + "/check_model.py", folder + "/../share/qdq/check_model.py"}) {
    if (!folder.empty() && std::filesystem::is_regular_file(candidate, error)) return candidate;
  }
  throw Error("--check: check_model.py not found next to the qdq executable or in ../share/qdq (set QDQ_CHECK_SCRIPT)");
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  size_t begin = text.find_last_of('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end - begin + 1);
}

// Runs the check script on the original and the staged quantized model; returns its JSON object, or
// with text output (no --json) the table it prints with --text.
std::string run_check(const QuantizeArguments& args, const std::string& quantized) {
  const char* python_env = std::getenv("QDQ_PYTHON");
  const std::string python = python_env != nullptr && *python_env != '\0' ? python_env : "python3";
  std::vector<std::string> argv = {python, find_check_script(), args.input, quantized};
  for (const std::string& input : args.check_inputs) {
    argv.push_back("--input");
    argv.push_back(input);
  }
  argv.push_back("--evaluator");
  argv.push_back(args.check_evaluator);
  if (!args.json) argv.push_back("--text");
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw Error(std::string("--check: pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw Error(std::string("--check: pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, raw.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (spawned != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw Error("--check: cannot run '" + python + "': " + std::strerror(spawned));
  }
  std::string out, err;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&out, &err};
  int open_count = 2;
  while (open_count > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || fds[k].revents == 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[k].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[k]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_count;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string reason = last_line(err);
    if (reason.empty()) {
      reason = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                 : "killed by signal " + std::to_string(WTERMSIG(status));
    }
    throw Error("--check failed: " + reason);
  }
  const size_t begin = out.find_first_not_of(" \t\r\n");
  const size_t end = out.find_last_not_of(" \t\r\n");
  if (!args.json) {
    if (begin == std::string::npos) throw Error("--check: the check script printed nothing");
    return out.substr(begin, end - begin + 1);
  }
  if (begin == std::string::npos || out[begin] != '{' || out[end] != '}') {
    throw Error("--check: the check script did not print one JSON object");
  }
  return out.substr(begin, end - begin + 1);
}

// One line on stderr, redrawn in place; only called when stderr is a terminal.
void draw_progress(size_t done, size_t total, const std::string& tensor) {
  constexpr int kWidth = 30;
  const int filled = total == 0 ? kWidth : static_cast<int>(done * kWidth / total);
  std::string line = "\r[" + std::string(static_cast<size_t>(filled), '#') +
                     std::string(static_cast<size_t>(kWidth - filled), ' ') + "] " + std::to_string(done) + "/" +
                     std::to_string(total) + " " + tensor;
  if (line.size() > 100) line.resize(100);
  line += "\033[K";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

int run(QuantizeArguments& args, const GlobalOptions& globals) {
  try {
    if (args.input.empty()) throw Error("no input model given");
    if (args.output.empty()) throw Error("no output given (-o OUT.onnx)");
    const std::optional<onnx::WeightFormat> format = onnx::parse_weight_format(args.format);
    if (args.format.empty()) throw Error("--format is required (int8, uint8, int4, uint4, float8e4m3fn, mxfp8, mxfp4)");
    if (!format) {
      throw Error("unknown --format '" + args.format + "' (int8, uint8, int4, uint4, float8e4m3fn, mxfp8, mxfp4)");
    }
    if (!args.check && (!args.check_inputs.empty())) throw Error("--check-input needs --check");
    for (const std::string& input : args.check_inputs) {
      if (input.find('=') == std::string::npos || input.front() == '=') {
        throw Error("--check-input '" + input + "' is not NAME=FILE.pb");
      }
    }
    std::error_code same_error;
    if (std::filesystem::equivalent(args.input, args.output, same_error)) {
      throw Error(args.output + ": the output would replace the input model");
    }
    onnx::QuantizeModelOptions options;
    options.format = *format;
    if (args.block_size_option != nullptr && args.block_size_option->count() > 0) options.block_size = args.block_size;
    if (args.symmetric) options.symmetric = true;
    if (args.asymmetric) options.symmetric = false;
    options.min_elements = args.min_elements;
    options.include = args.include;
    options.exclude = args.exclude;
    options.op_types = args.op_types;
    options.external_data = args.external_data;
    options.execution = globals.execution();
    const bool tty = ::isatty(2) == 1;
    if (tty) options.progress = draw_progress;
    std::string check_output;  // JSON with --json, else the script's --text table
    if (args.check) {
      options.before_commit = [&](const std::string& staged) {
        if (tty) std::fputs("\r\033[Kchecking against the original...", stderr);
        check_output = run_check(args, staged);
        if (tty) std::fputs("\r\033[K", stderr);
      };
    }
    install_model_write_cleanup();
    onnx::ModelReport report = onnx::quantize_model_file(args.input, args.output, options);
    if (tty) std::fputs("\r\033[K", stderr);
    if (args.json) {
      if (args.check) report.check_json = check_output;
      print_line(report.to_json());
    } else {
      std::string text = report.to_text();
      if (!text.empty() && text.back() == '\n') text.pop_back();
      if (args.check) text += "\n" + check_output;
      print_line(text);
    }
    return 0;
  } catch (const std::bad_alloc&) {
    report_error("error: out of memory");
  } catch (const std::exception& e) {
    if (::isatty(2) == 1) std::fputs("\r\033[K", stderr);
    report_error(std::string("error: ") + e.what());
  }
  return 1;
}

// SIGINT/SIGTERM/SIGHUP while a model is being written: remove the staged files, then die of the
// signal as the shell expects.
extern "C" void remove_staged_files_and_reraise(int signal_number) {
  qdq::onnx::remove_temporary_model_files();
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

}  // namespace

void install_model_write_cleanup() {
  struct sigaction action {};
  action.sa_handler = remove_staged_files_and_reraise;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &action, nullptr);
}

Command register_quantize(CLI::App& app, const GlobalOptions& globals) {
  auto args = std::make_shared<QuantizeArguments>();
  CLI::App* sub = app.add_subcommand(
      "quantize",
      "Quantize a model's float weights (MatMul, Gemm, Conv, ConvTranspose, LSTM/GRU/RNN, Gather) into "
      "a weight-only QDQ model");
  sub->add_option("input", args->input, "The float model (.onnx; external data next to it)")->type_name("IN.onnx");
  sub->add_option("-o,--output", args->output, "The quantized model to write")->type_name("OUT.onnx");
  sub->add_option("--format", args->format, "int8, uint8, int4, uint4, float8e4m3fn, mxfp8 or mxfp4")
      ->type_name("FORMAT");
  args->block_size_option =
      sub->add_option("--block-size", args->block_size, "Block size of int4/uint4 (16..256, default 32)")
          ->type_name("N");
  auto* symmetric = sub->add_flag("--symmetric", args->symmetric, "Zero point at the middle of the range");
  auto* asymmetric = sub->add_flag("--asymmetric", args->asymmetric, "Zero point from min/max (integer formats)");
  symmetric->excludes(asymmetric);
  sub->add_option("--min-elements", args->min_elements, "Skip weights with fewer elements (default 1024)")
      ->type_name("N");
  sub->add_option("--include", args->include, "Only weights whose name matches this glob (repeatable)")
      ->type_name("GLOB")
      ->expected(1)
      ->take_all();
  sub->add_option("--exclude", args->exclude, "Skip weights whose name matches this glob (repeatable)")
      ->type_name("GLOB")
      ->expected(1)
      ->take_all();
  sub->add_option("--op-types", args->op_types, "Only weights read by these ops, e.g. MatMul,Gemm")
      ->delimiter(',')
      ->expected(1)
      ->take_all()
      ->type_name("OPS");
  sub->add_flag("--external-data", args->external_data, "Write tensors to OUT.onnx.data (automatic over 2 GiB)");
  sub->add_flag("--json", args->json, "Print the report as one JSON object");
  sub->add_flag("--check", args->check, "Compare the outputs with the original's (tools/qdq/check_model.py)");
  sub->add_option("--check-input", args->check_inputs, "An input for --check (repeatable)")
      ->type_name("NAME=FILE.pb")
      ->expected(1)
      ->take_all();
  sub->add_option("--check-evaluator", args->check_evaluator, "auto, onnxruntime or reference (default auto)")
      ->check(CLI::IsMember({"auto", "onnxruntime", "reference"}))
      ->type_name("EVALUATOR");
  return Command{sub, [args, &globals] { return run(*args, globals); }, 1};
}

}  // namespace qdq::cli
