// Replays every fuzz input that ever crashed (tests/robustness/regressions/{operators,onnx}/) and the
// committed seed corpora (fuzz/corpus/{operators,onnx}/) through the fuzz harnesses themselves
// (fuzz/harness.hpp). A harness aborts on a broken invariant; the SIGABRT handler below names the
// file first, so a failure says which reproducer it was.
//
// Adding a regression: copy the crash file that libFuzzer wrote (crash-<sha1>) to
// tests/robustness/regressions/<target>/<short-name> and commit it; nothing else to change.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness.hpp"

namespace {

namespace fs = std::filesystem;

char g_current[4096] = "";

void name_on_abort(int) {
  const char prefix[] = "\nqdq robustness: the input that failed is ";
  (void)!write(2, prefix, sizeof prefix - 1);
  (void)!write(2, g_current, std::strlen(g_current));
  (void)!write(2, "\n", 1);
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename().string().front() != '.' &&
        entry.path().extension() != ".md") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Runs `harness` on every file of `dir`; returns how many there were. A missing or empty folder
/// is a failure unless `may_be_empty` (the open reproducers, which are none once all are fixed): a
/// renamed or emptied folder must not make a replay pass without replaying anything.
size_t replay(const fs::path& dir, int (*harness)(const uint8_t*, size_t), bool may_be_empty = false) {
  std::signal(SIGABRT, name_on_abort);
  const std::vector<fs::path> files = files_in(dir);
  if (!may_be_empty) {
    EXPECT_TRUE(fs::is_directory(dir)) << dir << " is not a folder";
    EXPECT_FALSE(files.empty()) << dir << " holds no input to replay";
  }
  for (const fs::path& file : files) {
    std::snprintf(g_current, sizeof g_current, "%s", file.c_str());
    const std::vector<uint8_t> bytes = read_bytes(file);
    EXPECT_EQ(harness(bytes.data(), bytes.size()), 0) << file;
  }
  std::signal(SIGABRT, SIG_DFL);
  return files.size();
}

TEST(FuzzRegressions, Operators) {
  const size_t n = replay(fs::path(QDQ_REGRESSIONS_DIR) / "operators", run_operator_case);
  std::printf("replayed %zu operator regressions\n", n);
}

TEST(FuzzRegressions, OperatorSeedCorpus) {
  EXPECT_GT(replay(fs::path(QDQ_CORPUS_DIR) / "operators", run_operator_case), 10u);
}

// Reproducers of problems reported but not fixed yet (they would abort under UBSan/ASan). Run with
// --gtest_also_run_disabled_tests; move a file up to regressions/<target>/ once it passes.
TEST(FuzzRegressions, DISABLED_Open) {
  replay(fs::path(QDQ_REGRESSIONS_DIR) / "open" / "operators", run_operator_case, true);
#ifdef QDQ_FUZZ_HAVE_ONNX
  replay(fs::path(QDQ_REGRESSIONS_DIR) / "open" / "onnx", run_onnx_case, true);
#endif
}

#ifdef QDQ_FUZZ_HAVE_ONNX
TEST(FuzzRegressions, Onnx) {
  const size_t n = replay(fs::path(QDQ_REGRESSIONS_DIR) / "onnx", run_onnx_case);
  std::printf("replayed %zu ONNX regressions\n", n);
}

TEST(FuzzRegressions, OnnxSeedCorpus) { EXPECT_GT(replay(fs::path(QDQ_CORPUS_DIR) / "onnx", run_onnx_case), 100u); }
#endif

}  // namespace
