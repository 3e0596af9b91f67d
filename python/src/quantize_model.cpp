// _qdq.quantize_model: qdq::onnx::quantize_model_file (`qdq quantize`) for Python. The report comes
// back as the same JSON text `qdq quantize --json` prints (ModelReport::to_json), which the Python
// layer turns into a dict, so there is one renderer of the report. qdq::Error becomes ValueError
// (the module's translator). The GIL is released while the model is read, quantized and written; it is
// taken back between tensors only to let a pending Ctrl-C (KeyboardInterrupt) stop the call, in which
// case the staged output is removed and nothing is written.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "quantize_model.hpp"

namespace py = pybind11;

namespace {

// Thrown out of the progress callback when a Python signal handler raised (the Python error stays set
// on this thread until the GIL is held again and it is rethrown as py::error_already_set).
struct Interrupted {};

// quantize_model_file with the command's options; returns ModelReport::to_json(). Allocates what the
// model needs (the graph plus one weight); runs on qdq's thread pool (`num_threads`, 0 = default).
std::string quantize_model(const std::string& input, const std::string& output, const std::string& format,
                           std::optional<int64_t> block_size, std::optional<bool> symmetric, int64_t min_elements,
                           const std::vector<std::string>& include, const std::vector<std::string>& exclude,
                           const std::vector<std::string>& op_types, bool external_data, int num_threads) {
  const std::optional<qdq::onnx::WeightFormat> weight_format = qdq::onnx::parse_weight_format(format);
  if (!weight_format) {
    throw qdq::Error("unknown format '" + format + "' (int8, uint8, int4, uint4, float8e4m3fn, mxfp8, mxfp4)");
  }
  if (num_threads < 0) throw qdq::Error("num_threads must be >= 0, got " + std::to_string(num_threads));
  qdq::onnx::QuantizeModelOptions options;
  options.format = *weight_format;
  options.block_size = block_size;
  options.symmetric = symmetric;
  options.min_elements = min_elements;
  options.include = include;
  options.exclude = exclude;
  options.op_types = op_types;
  options.external_data = external_data;
  options.execution.num_threads = num_threads;
  options.progress = [](size_t, size_t, const std::string&) {
    py::gil_scoped_acquire acquire;
    if (PyErr_CheckSignals() != 0) throw Interrupted{};
  };
  try {
    py::gil_scoped_release release;
    // As `qdq quantize` does: writing over the input would destroy the model while it is being read.
    std::error_code same_error;
    if (std::filesystem::equivalent(input, output, same_error)) {
      throw qdq::Error(output + ": the output would replace the input model");
    }
    return qdq::onnx::quantize_model_file(input, output, options).to_json();
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
}

}  // namespace

// Called from module.cpp's PYBIND11_MODULE when the module is built with ONNX file support.
void register_quantize_model(py::module_& m) {
  m.def("quantize_model", &quantize_model, py::arg("input"), py::arg("output"), py::arg("format"),
        py::arg("block_size").none(true), py::arg("symmetric").none(true), py::arg("min_elements"), py::arg("include"),
        py::arg("exclude"), py::arg("op_types"), py::arg("external_data"), py::arg("num_threads"));
}
