// `qdq run MODEL INPUT... [-o DIR]`: evaluate a model on TensorProto files, write output_K.pb.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "commands.hpp"
#include "qdq_onnx.hpp"

namespace qdq::cli {
namespace {

struct RunArguments {
  std::string model;
  std::vector<std::string> inputs;
  std::string output_dir = ".";
};

int run(const RunArguments& args, const GlobalOptions& globals) {
  const onnx::Model model = onnx::read_model_file(args.model);
  std::vector<onnx::Tensor> inputs;
  inputs.reserve(args.inputs.size());
  for (const std::string& path : args.inputs) inputs.push_back(onnx::read_tensor_file(path));

  // Everything is computed before the first byte is written: a failing model leaves no files.
  const std::vector<onnx::Tensor> outputs = onnx::run_model(model, inputs, globals.execution());

  const std::filesystem::path dir(args.output_dir);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw Error(args.output_dir + ": cannot create the output folder: " + error.message());
  std::vector<std::pair<std::string, const onnx::Tensor*>> files;
  for (size_t k = 0; k < outputs.size(); ++k) {
    files.emplace_back((dir / ("output_" + std::to_string(k) + ".pb")).string(), &outputs[k]);
  }
  onnx::write_tensor_files(files);
  for (const auto& [path, tensor] : files) {
    print_line(path + ": " + tensor->name + " " + data_type_name(tensor->type) + " " + shape_to_string(tensor->shape));
  }
  return 0;
}

}  // namespace

Command register_run(CLI::App& app, const GlobalOptions& globals) {
  auto args = std::make_shared<RunArguments>();
  CLI::App* sub =
      app.add_subcommand("run",
                         "Evaluate an ONNX model of QuantizeLinear/DequantizeLinear/DynamicQuantizeLinear nodes on "
                         "TensorProto files and write output_K.pb for each graph output");
  sub->add_option("model", args->model, "The ONNX model (.onnx)")->required()->type_name("MODEL");
  sub->add_option("inputs", args->inputs, "Serialized TensorProto files, bound to the graph inputs in order")
      ->type_name("INPUT.pb");
  sub->add_option("-o,--output-dir", args->output_dir,
                  "Folder for output_K.pb (created if missing; default: the current folder)")
      ->type_name("DIR");
  return Command{sub, [args, &globals] { return run(*args, globals); }};
}

}  // namespace qdq::cli
