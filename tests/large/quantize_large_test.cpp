// `qdq quantize` on a model larger than protobuf's 2 GiB limit: 10 MatMul weights of [8192, 8192]
// float32 (2.5 GiB) in external data, quantized to int8 (per channel) and to int4 (blocks of 32) by a
// child `qdq quantize` process whose peak RSS (getrusage of the child) must stay near the largest
// tensor (256 MiB) plus the graph, not the model size. Needs about 3.5 GiB of disk in TMPDIR (or
// QDQ_LARGE_TMP), which is removed afterwards.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "onnx_subset.pb.h"

namespace {

namespace fs = std::filesystem;

constexpr int kWeights = 10;
constexpr int64_t kDim = 8192;
constexpr uint64_t kWeightBytes = uint64_t{kDim} * kDim * 4;  // 256 MiB

class LargeQuantize : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* base = std::getenv("QDQ_LARGE_TMP");
    std::string pattern =
        (base != nullptr ? std::string(base) : fs::temp_directory_path().string()) + "/qdq-large-quantize-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes dir_/big.onnx with its weights in big.onnx.data, one row at a time.
  void write_model() {
    onnx::ModelProto model;
    model.set_ir_version(10);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(21);
    auto* graph = model.mutable_graph();
    graph->set_name("large");
    auto* in = graph->add_input();
    in->set_name("x0");
    std::ofstream data(dir_ + "/big.onnx.data", std::ios::binary);
    std::vector<float> row(static_cast<size_t>(kDim));
    uint64_t state = 0x9E3779B97F4A7C15ull;
    // "x3", "w3", "mm3": appended, not "x" + std::to_string(k), in which GCC 12 reports a false
    // -Wrestrict.
    const auto numbered = [](const char* stem, int k) {
      std::string s = stem;
      s += std::to_string(k);
      return s;
    };
    for (int w = 0; w < kWeights; ++w) {
      const std::string name = numbered("w", w);
      auto* t = graph->add_initializer();
      t->set_name(name);
      t->set_data_type(1);
      t->add_dims(kDim);
      t->add_dims(kDim);
      t->set_data_location(1);
      auto add = [&](const char* k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", "big.onnx.data");
      add("offset", std::to_string(uint64_t(w) * kWeightBytes));
      add("length", std::to_string(kWeightBytes));
      for (int64_t r = 0; r < kDim; ++r) {
        for (auto& v : row) {
          state ^= state << 13;
          state ^= state >> 7;
          state ^= state << 17;
          v = static_cast<float>(static_cast<int32_t>(state >> 40) - (1 << 23)) * 1e-7f;
        }
        data.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size() * 4));
      }
      auto* node = graph->add_node();
      node->set_op_type("MatMul");
      node->set_name(numbered("mm", w));
      node->add_input(numbered("x", w));
      node->add_input(name);
      node->add_output(numbered("x", w + 1));
    }
    graph->add_output()->set_name(numbered("x", kWeights));
    data.close();
    ASSERT_TRUE(data.good());
    std::ofstream out(dir_ + "/big.onnx", std::ios::binary);
    ASSERT_TRUE(model.SerializeToOstream(&out));
  }

  // Runs qdq quantize in a child; returns its exit status and peak RSS in bytes; stdout to `report`.
  std::pair<int, uint64_t> quantize(const std::string& format, const std::string& output) {
    const std::string report = dir_ + "/report.json";
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::FILE* f = std::freopen(report.c_str(), "w", stdout);
      (void)f;
      const std::string input = dir_ + "/big.onnx";
      ::execl(QDQ_CLI, QDQ_CLI, "quantize", input.c_str(), "-o", output.c_str(), "--format", format.c_str(), "--json",
              static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    struct rusage usage {};
    EXPECT_EQ(::wait4(pid, &status, 0, &usage), pid);
    std::ifstream in(report);
    report_.assign(std::istreambuf_iterator<char>(in), {});
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), uint64_t(usage.ru_maxrss) * 1024};
  }

  std::string dir_;
  std::string report_;
};

TEST_F(LargeQuantize, PeakMemoryStaysNearTheLargestTensor) {
  write_model();
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(fs::file_size(dir_ + "/big.onnx.data"), kWeights * kWeightBytes);
  struct Case {
    const char* format;
    uint64_t data_bytes;  // codes of every weight, at least
  };
  for (const Case& c : {Case{"int8", kWeights * kWeightBytes / 4}, Case{"int4", kWeights * kWeightBytes / 8}}) {
    SCOPED_TRACE(c.format);
    const std::string output = dir_ + "/out.onnx";
    const auto [status, peak] = quantize(c.format, output);
    ASSERT_EQ(status, 0) << report_;
    EXPECT_NE(report_.find("\"tensors_quantized\": 10"), std::string::npos) << report_;
    EXPECT_NE(report_.find("\"external_data\": true"), std::string::npos);
    EXPECT_GE(fs::file_size(output + ".data"), c.data_bytes);
    std::printf("qdq quantize --format %s of %.2f GiB: peak RSS %.0f MiB\n", c.format,
                double(kWeights * kWeightBytes) / (1 << 30), double(peak) / (1 << 20));
    // Near the largest tensor plus the graph: far below the 2.5 GiB model and its 0.3-0.6 GiB output.
    EXPECT_LT(peak, kWeightBytes + (uint64_t{64} << 20));
    fs::remove(output);
    fs::remove(output + ".data");
  }
}

}  // namespace
