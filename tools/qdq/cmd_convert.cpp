// `qdq convert IN.onnx -o OUT.onnx --opset N [--json]`: raise a model's ai.onnx opset, converting every
// node whose operator changed so that the model computes exactly what it computed before.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>

#include "commands.hpp"
#include "model_io.hpp"
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
  // Model I/O as `qdq quantize` does it (model_io): external data locations checked when the model is
  // opened and its tensors copied to OUT.onnx.data next to the output, which may be in any folder; the
  // output is staged and renamed into place, and removed on an error or a signal.
  std::error_code same_error;
  if (std::filesystem::equivalent(args.input, args.output, same_error)) {
    throw Error(args.output + ": the output would replace the input model");
  }
  onnx::ModelSource source(args.input);
  ::onnx::ModelProto& model = source.model();
  int64_t from_opset = -1;
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") from_opset = opset.version();
  }
  if (from_opset < 0) throw Error(args.input + ": the model imports no ai.onnx opset");
  if (args.opset < from_opset) {
    throw Error(args.input + ": the model is at opset " + std::to_string(from_opset) + "; lowering it to " +
                std::to_string(args.opset) + " is not supported");
  }
  const onnx::OpsetConversion conversion = onnx::convert_opset(model, args.opset);
  onnx::WriteModelOptions write_options;
  // A model that keeps its tensors in external data keeps them there (it is usually large).
  onnx::for_each_tensor(model, [&](::onnx::TensorProto& t) {
    write_options.external_data = write_options.external_data || onnx::ModelSource::is_external(t);
  });
  install_model_write_cleanup();
  onnx::write_model_file(model, &source, args.output, write_options);

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
  CLI::App* sub =
      app.add_subcommand("convert",
                         "Raise an ONNX model's ai.onnx opset, rewriting every node whose operator changed so that the "
                         "model computes exactly the same; refuse (writing nothing) when a node cannot be converted");
  sub->add_option("model", args->input, "The ONNX model (.onnx)")->required()->type_name("IN.onnx");
  sub->add_option("-o,--output", args->output, "Where to write the converted model")->required()->type_name("OUT.onnx");
  sub->add_option("--opset", args->opset, "The ai.onnx opset to convert to")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->type_name("N");
  sub->add_flag("--json", args->json, "Print what changed as one JSON object");
  return Command{sub, [args] { return run(*args); }};
}

}  // namespace qdq::cli
