// `qdq test PATH...`: run ONNX backend node tests and compare with their expected outputs bit-exactly.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "qdq_onnx.hpp"

namespace qdq::cli {
namespace {

namespace fs = std::filesystem;

struct TestArguments {
  std::vector<std::string> paths;
  std::string dump_dir;
};

struct NodeTest {
  std::string name;
  fs::path folder;
};

bool is_node_test(const fs::path& folder) {
  std::error_code error;
  return fs::is_regular_file(folder / "model.onnx", error);
}

// Entries of `folder` whose names match `pattern` (one numeric capture), sorted by that number.
std::vector<std::pair<uint64_t, fs::path>> numbered_entries(const fs::path& folder, const std::regex& pattern,
                                                            bool directories) {
  std::vector<std::pair<uint64_t, fs::path>> found;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder, error)) {
    std::error_code kind_error;
    if (directories ? !entry.is_directory(kind_error) : !entry.is_regular_file(kind_error)) continue;
    const std::string name = entry.path().filename().string();
    std::smatch match;
    if (std::regex_match(name, match, pattern) && match[1].length() < 19) {
      found.emplace_back(std::stoull(match[1].str()), entry.path());
    }
  }
  if (error) throw Error(folder.string() + ": cannot list: " + error.message());
  std::sort(found.begin(), found.end());
  return found;
}

// input_0.pb ... input_{n-1}.pb: numbering must be contiguous, or the binding by position is wrong.
std::vector<fs::path> numbered_files(const fs::path& folder, const char* prefix) {
  const std::regex pattern(std::string(prefix) + "_([0-9]+)\\.pb");
  std::vector<fs::path> files;
  for (const auto& [number, path] : numbered_entries(folder, pattern, false)) {
    if (number != files.size()) {
      throw Error(folder.string() + ": " + prefix + "_" + std::to_string(files.size()) + ".pb is missing");
    }
    files.push_back(path);
  }
  return files;
}

// The folder's own name, also for "." or a path with a trailing slash.
std::string folder_name(const fs::path& folder) {
  std::error_code error;
  fs::path normal = fs::absolute(folder, error).lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();
  return normal.filename().string();
}

std::vector<NodeTest> collect_tests(const std::vector<std::string>& paths) {
  std::vector<NodeTest> tests;
  for (const std::string& path : paths) {
    const fs::path folder(path);
    std::error_code error;
    if (!fs::is_directory(folder, error)) {
      throw Error(path + ": " + (fs::exists(folder, error) ? "not a folder" : "no such folder"));
    }
    if (is_node_test(folder)) {
      tests.push_back({folder_name(folder), folder});
      continue;
    }
    std::vector<NodeTest> found;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
      std::error_code kind_error;
      if (entry.is_directory(kind_error) && is_node_test(entry.path())) {
        found.push_back({entry.path().filename().string(), entry.path()});
      }
    }
    if (error) throw Error(path + ": cannot list: " + error.message());
    if (found.empty()) throw Error(path + ": no node tests (no model.onnx here or in its subfolders)");
    std::sort(found.begin(), found.end(), [](const NodeTest& a, const NodeTest& b) { return a.name < b.name; });
    tests.insert(tests.end(), found.begin(), found.end());
  }
  return tests;
}

// One data set: std::nullopt if it passes, else why not.
std::optional<std::string> run_data_set(const onnx::Model& model, const fs::path& data_set, const std::string& name,
                                        const TestArguments& args, const GlobalOptions& globals) {
  std::vector<onnx::Tensor> inputs;
  for (const fs::path& file : numbered_files(data_set, "input"))
    inputs.push_back(onnx::read_tensor_file(file.string()));
  std::vector<onnx::Tensor> expected;
  for (const fs::path& file : numbered_files(data_set, "output")) {
    expected.push_back(onnx::read_tensor_file(file.string()));
  }
  const std::vector<onnx::Tensor> got = onnx::run_model(model, inputs, globals.execution());

  std::string problems;
  if (!args.dump_dir.empty()) {
    const fs::path dir = fs::path(args.dump_dir) / name;
    std::error_code error;
    fs::create_directories(dir, error);
    if (error) throw Error(dir.string() + ": cannot create the dump folder: " + error.message());
    std::vector<std::pair<std::string, const onnx::Tensor*>> files;
    for (size_t k = 0; k < got.size(); ++k) {
      files.emplace_back((dir / ("output_" + std::to_string(k) + ".pb")).string(), &got[k]);
    }
    onnx::write_tensor_files(files);
  }
  if (got.size() != expected.size()) {
    return "the model produced " + std::to_string(got.size()) + " outputs, the data set expects " +
           std::to_string(expected.size());
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (auto difference = onnx::compare_tensors(got[k], expected[k], "output_" + std::to_string(k))) {
      problems += (problems.empty() ? "" : "; ") + *difference;
    }
  }
  if (problems.empty()) return std::nullopt;
  return problems;
}

int run(const TestArguments& args, const GlobalOptions& globals) {
  const std::vector<NodeTest> tests = collect_tests(args.paths);
  size_t passed = 0;
  size_t failed = 0;
  auto outcome = [&](const std::string& name, const std::optional<std::string>& problem) {
    if (problem) {
      ++failed;
      std::string line = "FAIL " + name + ": ";
      for (char c : *problem) line += c == '\n' ? ' ' : c;
      print_line(line);
    } else {
      ++passed;
      print_line("PASS " + name);
    }
  };
  for (const NodeTest& test : tests) {
    std::vector<std::pair<uint64_t, fs::path>> data_sets;
    std::optional<onnx::Model> model;
    try {
      data_sets = numbered_entries(test.folder, std::regex("test_data_set_([0-9]+)"), true);
      if (data_sets.empty()) {
        outcome(test.name, "no test_data_set_N folder in " + test.folder.string());
        continue;
      }
      model = onnx::read_model_file((test.folder / "model.onnx").string());
    } catch (const std::exception& e) {
      outcome(test.name, std::string(e.what()));
      continue;
    }
    for (const auto& [number, data_set] : data_sets) {
      // A single data set keeps the plain test name, as ONNX's own runner reports it.
      const std::string name = data_sets.size() == 1 ? test.name : test.name + "/" + data_set.filename().string();
      try {
        outcome(name, run_data_set(*model, data_set, name, args, globals));
      } catch (const std::exception& e) {
        outcome(name, std::string(e.what()));
      }
    }
  }
  print_line(std::to_string(passed) + " passed, " + std::to_string(failed) + " failed");
  return failed == 0 ? 0 : 1;
}

}  // namespace

Command register_test(CLI::App& app, const GlobalOptions& globals) {
  auto args = std::make_shared<TestArguments>();
  CLI::App* sub =
      app.add_subcommand("test",
                         "Run ONNX backend node tests (model.onnx + test_data_set_N/) and compare every output "
                         "bit-exactly (any NaN equals any NaN of the same type)");
  sub->add_option("paths", args->paths, "A node-test folder, or a folder of node-test folders")
      ->required()
      ->type_name("PATH");
  sub->add_option("--dump-outputs", args->dump_dir, "Also write the computed outputs to DIR/<test name>/output_K.pb")
      ->type_name("DIR");
  return Command{sub, [args, &globals] { return run(*args, globals); }};
}

}  // namespace qdq::cli
