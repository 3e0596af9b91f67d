// Weight-only quantization of ONNX models (`qdq quantize`): selected float weights become quantized
// tensors feeding DequantizeLinear nodes, the weight-only QDQ form that ONNX Runtime, TensorRT and
// OpenVINO consume. Everything else in the model is kept as it was, unknown fields included.
//
// The codes are computed by qdq::quantize_linear at the output opset from the scales as stored, so the
// file holds exactly what QuantizeLinear computes; the report's errors come from qdq::dequantize_linear.
// Scale rules, weight selection and edge cases: docs/model-quantization.md ("Using qdq quantize").
//
// This header needs neither protobuf nor generated headers. Errors are qdq::Error with one line.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qdq/qdq.hpp"
#include "qdq_onnx.hpp"

namespace qdq::onnx {

/// The weight formats of `qdq quantize --format`.
enum class WeightFormat { kInt8, kUint8, kInt4, kUint4, kFloat8E4M3FN, kMxfp8, kMxfp4 };

/// The format's name as --format spells it ("int8", "mxfp4"). No allocation.
std::string_view weight_format_name(WeightFormat format);
/// Parses a --format name (exact, lower case); std::nullopt if unknown.
std::optional<WeightFormat> parse_weight_format(std::string_view name);

/// How one tensor is quantized: per tensor, per channel along `axis`, or in blocks of `block_size`
/// along `axis`.
struct WeightGranularity {
  enum class Kind { kPerTensor, kPerChannel, kBlocked };
  Kind kind = Kind::kPerTensor;
  int64_t axis = 0;
  int64_t block_size = 0;
  /// "per-tensor", "per-channel(axis=1)" or "blocked(axis=0,block=32)". Allocates the string.
  std::string to_string() const;
};

/// One weight quantized: the stored tensors and how well they reproduce the original.
struct QuantizedWeight {
  Tensor codes;                      // the quantized elements (INT8, UINT4, FLOAT8E4M3FN, ...)
  Tensor scale;                      // FLOAT/FLOAT16/BFLOAT16 like the weight, FLOAT8E8M0 for MX
  std::optional<Tensor> zero_point;  // integer formats only (zeros when symmetric)
  double sqnr_db = 0;                // 10·log10(Σw² / Σ(w−ŵ)²) over finite w, capped at 300
  double max_abs_error = 0;          // max |w − ŵ| over finite w
  uint64_t non_finite = 0;           // NaN and ±inf elements of the weight
};

/// The minimum ai.onnx opset at which `format` with `granularity` can be stored for a weight of
/// `weight_type` (per-axis 13, float16/bfloat16 scales and float8 19, int4/uint4 21, MX 24).
int64_t required_opset(WeightFormat format, const WeightGranularity& granularity, DataType weight_type);

/// Quantizes one weight (FLOAT, FLOAT16 or BFLOAT16) by `format`'s scale rule (symmetric unless
/// `symmetric` is false; only the integer formats have an asymmetric form) and QuantizeLinear at
/// `opset`, then measures the error with DequantizeLinear. `release(end)` (may be empty) is told when
/// the weight's bytes [0, end) have been read for the last time, so a mapping can drop them.
/// Allocates the codes, scales and chunk-sized scratch; threads as `execution` says (pieces of about
/// 256 KiB, in parallel on its parallel_for or else on helper threads started once for the call, each
/// quantized by a single-threaded kernel; results never depend on it). Throws qdq::Error for a weight
/// type or granularity the format cannot take.
QuantizedWeight quantize_weight(const TensorView& weight, WeightFormat format, const WeightGranularity& granularity,
                                bool symmetric, int64_t opset, const ExecutionOptions& execution = {},
                                const std::function<void(size_t end)>& release = {});

/// What quantize_model_file does.
struct QuantizeModelOptions {
  WeightFormat format = WeightFormat::kInt8;
  std::optional<int64_t> block_size;  // int4/uint4: 16..256, default 32; MX formats: 32 only
  std::optional<bool> symmetric;      // default: symmetric for int8/int4/float formats, not uint8/uint4
  int64_t min_elements = 1024;        // smaller weights are skipped
  std::vector<std::string> include;   // glob patterns (fnmatch) on tensor names; empty = all
  std::vector<std::string> exclude;
  std::vector<std::string> op_types;  // consumer ops to quantize for; empty = every supported one
  bool external_data = false;         // always write OUT.onnx.data (else when the input has external data or
                                      // the output would exceed 2 GiB)
  ExecutionOptions execution;
  /// Called before and after each tensor (done of total); may be empty.
  std::function<void(size_t done, size_t total, const std::string& tensor)> progress;
  /// Called with the staged output model (complete, next to its data file) before it is renamed into
  /// place; if it throws, nothing is written and the exception propagates. May be empty.
  std::function<void(const std::string& staged_model_path)> before_commit;
};

/// One quantized tensor in the report.
struct QuantizedTensorReport {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> consumers;  // "MatMul 'node'" (node index if unnamed)
  std::string format;
  std::string granularity;  // WeightGranularity::to_string()
  std::string note;         // why the granularity is not the format's usual one, else empty
  DataType weight_type = DataType::kFloat;
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;  // codes + scale + zero point
  double sqnr_db = 0;
  double max_abs_error = 0;
  uint64_t non_finite = 0;
};

/// One float weight that was left as it was, and why.
struct SkippedTensorReport {
  std::string name;
  std::string reason;
};

/// What quantize_model_file did.
struct ModelReport {
  std::string input;
  std::string output;
  std::string format;
  int64_t opset_from = 0, opset_to = 0;
  int64_t ir_version_from = 0, ir_version_to = 0;
  std::vector<std::string> conversions;  // the version converter's changes
  std::vector<QuantizedTensorReport> tensors;
  std::vector<SkippedTensorReport> skipped;
  bool external_data = false;
  uint64_t weight_bytes_before = 0, weight_bytes_after = 0;
  uint64_t model_bytes_before = 0, model_bytes_after = 0;
  double seconds = 0;
  std::optional<std::string> check_json;  // the --check script's JSON object, verbatim

  /// The report as one JSON object (the `qdq quantize --json` contract). Allocates the string.
  std::string to_json() const;
  /// The report as readable text, one line per tensor. Allocates the string.
  std::string to_text() const;
};

/// Reads the model at `input` (external data relative to its folder), quantizes the weights that
/// `options` select, raises the opset when the format needs it (convert_opset), and writes `output`
/// atomically: on any error (a qdq::Error naming the file and problem) nothing is written. Peak memory
/// is about the graph plus the largest weight; threads as options.execution says (its parallel_for,
/// else one set of helper threads started for the whole model).
ModelReport quantize_model_file(const std::string& input, const std::string& output,
                                const QuantizeModelOptions& options);

}  // namespace qdq::onnx
