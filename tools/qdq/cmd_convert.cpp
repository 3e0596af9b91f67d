// `qdq convert IN.onnx -o OUT.onnx --opset N [--json]`: raise a model's ai.onnx opset, converting every
// node whose operator changed so that the model computes exactly what it computed before.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "commands.hpp"
#include "onnx_subset.pb.h"
#include "version_converter.hpp"

namespace qdq::cli {
namespace {

struct ConvertArguments {
  std::string input;
  std::string output;
  int64_t opset = 0;
  bool json = false;
};

// ---- Model file I/O -------------------------------------------------------------------------------
// Kept in this section on purpose: it is to be replaced by src/onnx/model_io (external data, shared
// atomic writes) when that lands. Models with external data are read and written as they are: the
// tensors' locations are relative to the model's folder, so the output must go next to the input.

::onnx::ModelProto read_model_proto(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(path + ": cannot open: " + std::strerror(errno));
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) throw Error(path + ": cannot read");
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw Error(path + ": not an ONNX model (the protobuf does not parse)");
  }
  return model;
}

// Temporary file next to `path` (same file system), fsync, then rename: a reader sees the old file or
// the whole new one, and an error leaves nothing behind.
void write_model_proto(const std::string& path, const ::onnx::ModelProto& model) {
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error(path + ": the model does not serialize (over 2 GB?)");
  static std::atomic<unsigned> counter{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) throw Error(path + ": cannot create a temporary file: " + std::strerror(errno));
  }
  if (fd < 0) throw Error(path + ": cannot create a temporary file: too many name collisions");
  const char* p = bytes.data();
  size_t left = bytes.size();
  int error = 0;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(temp.c_str());
    throw Error(path + ": cannot write: " + std::strerror(error));
  }
}

bool has_external_data(const ::onnx::GraphProto& graph) {
  for (const auto& tensor : graph.initializer()) {
    if (tensor.data_location() == 1) return true;
  }
  for (const auto& node : graph.node()) {
    for (const auto& a : node.attribute()) {
      if (a.has_t() && a.t().data_location() == 1) return true;
      if (a.has_g() && has_external_data(a.g())) return true;
      for (const auto& g : a.graphs()) {
        if (has_external_data(g)) return true;
      }
    }
  }
  return false;
}

// External data locations are relative to the model's folder: until model_io copies the data, the
// output must be written into the input's folder, where they still resolve.
void check_external_data_folder(const ::onnx::ModelProto& model, const std::string& input,
                                const std::string& output) {
  if (!has_external_data(model.graph())) return;
  std::error_code error;
  const auto in_dir = std::filesystem::weakly_canonical(std::filesystem::absolute(input).parent_path(), error);
  const auto out_dir = std::filesystem::weakly_canonical(std::filesystem::absolute(output).parent_path(), error);
  if (error || in_dir != out_dir) {
    throw Error(input + ": the model keeps tensors in external data files; write the converted model into " +
                "the same folder (" + in_dir.string() + ")");
  }
}
// ---------------------------------------------------------------------------------------------------

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

int run(const ConvertArguments& args) {
  ::onnx::ModelProto model = read_model_proto(args.input);
  int64_t from_opset = -1;
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") from_opset = opset.version();
  }
  if (from_opset < 0) throw Error(args.input + ": the model imports no ai.onnx opset");
  if (args.opset < from_opset) {
    throw Error(args.input + ": the model is at opset " + std::to_string(from_opset) + "; lowering it to " +
                std::to_string(args.opset) + " is not supported");
  }
  check_external_data_folder(model, args.input, args.output);
  const onnx::OpsetConversion conversion = onnx::convert_opset(model, args.opset);
  write_model_proto(args.output, model);

  if (args.json) {
    std::ostringstream out;
    out << "{\"input\": " << json_string(args.input) << ", \"output\": " << json_string(args.output)
        << ", \"from_opset\": " << conversion.from_opset << ", \"to_opset\": " << conversion.to_opset
        << ", \"from_ir_version\": " << conversion.from_ir_version
        << ", \"to_ir_version\": " << conversion.to_ir_version << ", \"changes\": [";
    for (size_t k = 0; k < conversion.changes.size(); ++k) {
      out << (k == 0 ? "" : ", ") << json_string(conversion.changes[k]);
    }
    out << "]}";
    print_line(out.str());
    return 0;
  }
  print_line(args.output + ": ai.onnx opset " + std::to_string(conversion.from_opset) + " -> " +
             std::to_string(conversion.to_opset) + ", IR version " + std::to_string(conversion.from_ir_version) +
             " -> " + std::to_string(conversion.to_ir_version) + ", " + std::to_string(conversion.changes.size()) +
             " node" + (conversion.changes.size() == 1 ? "" : "s") + " rewritten");
  for (const std::string& change : conversion.changes) print_line("  " + change);
  return 0;
}

}  // namespace

Command register_convert(CLI::App& app, const GlobalOptions& /*globals*/) {
  auto args = std::make_shared<ConvertArguments>();
  CLI::App* sub = app.add_subcommand(
      "convert", "Raise an ONNX model's ai.onnx opset, rewriting every node whose operator changed so that the "
                 "model computes exactly the same; refuse (writing nothing) when a node cannot be converted");
  sub->add_option("model", args->input, "The ONNX model (.onnx)")->required()->type_name("IN.onnx");
  sub->add_option("-o,--output", args->output, "Where to write the converted model")->required()->type_name(
      "OUT.onnx");
  sub->add_option("--opset", args->opset, "The ai.onnx opset to convert to")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->type_name("N");
  sub->add_flag("--json", args->json, "Print what changed as one JSON object");
  return Command{sub, [args] { return run(*args); }};
}

}  // namespace qdq::cli
