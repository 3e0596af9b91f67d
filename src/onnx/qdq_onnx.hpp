// qdq::onnx — ONNX files for qdq's tools and tests: serialized TensorProto files (the backend tests'
// input_K.pb / output_K.pb), ONNX models made of QuantizeLinear, DequantizeLinear and
// DynamicQuantizeLinear nodes, and bit-exact comparison of tensors.
//
// The protobuf code is an implementation detail: this header needs neither protobuf nor generated
// headers. Every error is a qdq::Error whose message is one line that starts with the file (or the
// `what` the caller passed) and says what is wrong with it.
//
// Threading: every function here may be called from any thread on distinct objects; none keeps global
// state. run_model hands its ExecutionOptions to the operators, which may use several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "qdq/qdq.hpp"

namespace qdq::onnx {

/// An owned tensor in qdq's layout: row-major, sub-byte types packed (first element in the low bits,
/// padding bits zero), multi-byte elements little-endian — the TensorProto raw_data layout.
/// `data.size()` is always storage_bytes(type, element_count(shape)) for tensors made by this
/// library.
struct Tensor {
  DataType type = DataType::kUndefined;
  std::vector<int64_t> shape;  // empty = rank 0 (one element)
  std::vector<uint8_t> data;
  std::string name;  // the TensorProto's name; informational only (models bind by position)

  /// A view of this tensor for qdq's operators. It borrows `shape` and `data`: valid until either is
  /// resized or the tensor is destroyed. Allocates nothing. An empty tensor gets a non-null pointer
  /// to a static byte, so operators never see a null pointer.
  TensorView view() const;
  /// The writable counterpart of view(), with the same lifetime rule.
  MutableTensorView mutable_view();
};

/// Allocates a zero-filled tensor of `type` and `shape`. Throws qdq::Error for a negative dimension,
/// an element or byte count overflowing 64 bits, or a type without a fixed size; std::bad_alloc if
/// memory runs out.
Tensor make_tensor(DataType type, std::vector<int64_t> shape, std::string name = {});

// ---------------------------------------------------------------------------------------------------
// Serialized TensorProto

/// Parses a serialized TensorProto. Accepts raw_data and every typed storage (float_data, int32_data,
/// int64_data, double_data, uint64_data) as packing.md §2 describes; sub-byte padding bits are
/// cleared. Rejects, with a qdq::Error whose message starts with `what`: bytes that are not a
/// TensorProto (corrupt or truncated), an unknown or unsupported data_type (UNDEFINED, STRING,
/// COMPLEX64/128), negative dims, element or byte counts overflowing 64 bits, a raw_data length or
/// a typed-entry count that does not match dims and type, elements stored in a typed field that
/// the type does not use, `segment`, and external data. Allocates the tensor (one copy of the
/// data) plus protobuf's parse buffers.
Tensor parse_tensor(std::string_view bytes, const std::string& what);

/// Reads a file holding one serialized TensorProto (an input_K.pb / output_K.pb) and parses it as
/// parse_tensor does, naming `path` in errors (also when the file cannot be opened or read).
Tensor read_tensor_file(const std::string& path);

/// Serializes `tensor` as a TensorProto: dims, data_type, name, and the elements either in raw_data
/// (the default, the convention of ONNX's numpy_helper.from_array) or, if `use_typed_fields`, in the
/// typed field packing.md §2 assigns to the type (int32_data for 8/16-bit integers, BOOL, FLOAT16,
/// BFLOAT16, float8, E8M0 and — one entry per packed byte — the 4- and 2-bit types; float_data,
/// int64_data, double_data, uint64_data for the rest). Throws qdq::Error if `tensor.data` does not
/// have the size its type and shape require, or the message would exceed protobuf's 2 GiB limit.
std::string serialize_tensor(const Tensor& tensor, bool use_typed_fields = false);

/// Writes serialize_tensor(tensor) (raw_data storage) to `path` atomically: the bytes go to a new
/// temporary file in the same folder, which is flushed, synced and then renamed over `path`. On any
/// failure the temporary file is removed and `path` is left as it was; throws qdq::Error naming
/// `path` and the system's reason.
void write_tensor_file(const std::string& path, const Tensor& tensor);

/// Writes several tensors as one step: every tensor is first serialized and written to a temporary
/// file next to its destination; only when all of them are written are they renamed into place. If
/// anything fails, the temporary files are removed (and destinations already renamed into place by
/// this call are removed again), so either all files appear or — barring a failing rename — none.
/// Throws qdq::Error naming the file that failed.
void write_tensor_files(const std::vector<std::pair<std::string, const Tensor*>>& files);

// ---------------------------------------------------------------------------------------------------
// Models

/// One attribute of a node. qdq's operators only take INT attributes; others are kept so that the
/// error can name them.
struct Attribute {
  std::string name;
  int32_t type = 0;  // AttributeProto.AttributeType: 2 = INT
  int64_t i = 0;
};

/// One node of a graph, as stored in the file.
struct Node {
  std::string name;
  std::string op_type;
  std::string domain;               // "" or "ai.onnx" = the default ONNX domain
  std::vector<std::string> inputs;  // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;
};

/// A graph input or output: name plus, where the model declares them, element type and shape.
struct ValueInfo {
  std::string name;
  DataType type = DataType::kUndefined;  // kUndefined = not declared
  /// Declared shape; std::nullopt = unknown rank. A symbolic or missing dimension is -1.
  std::optional<std::vector<int64_t>> shape;
};

/// A parsed ONNX model, reduced to what run_model needs.
struct Model {
  std::string path;   // the file it came from (or the `what` given to parse_model), for messages
  int64_t opset = 0;  // version of the default ("" / "ai.onnx") domain's opset_import
  std::string graph_name;
  std::vector<Node> nodes;         // in file order, which run_model evaluates in
  std::vector<ValueInfo> inputs;   // graph.input, including any that are initializers
  std::vector<ValueInfo> outputs;  // graph.output
  std::vector<Tensor> initializers;
};

/// Parses a serialized ModelProto and checks that run_model can evaluate it: a graph is present, the
/// default domain has exactly one opset version, every node is QuantizeLinear, DequantizeLinear or
/// DynamicQuantizeLinear in the default domain, with only INT attributes the operator defines and
/// no more inputs/outputs than it has. Shapes and types are checked later by the operators.
/// Initializers are parsed as parse_tensor does. Throws qdq::Error starting with `what`. Allocates
/// the model (including copies of the initializers).
Model parse_model(std::string_view bytes, const std::string& what);

/// Reads and parses an ONNX model file (see parse_model); errors name `path`.
Model read_model_file(const std::string& path);

/// Evaluates `model`'s nodes in file order and returns its graph outputs in graph.output order.
/// `inputs` bind by position to the graph inputs that are not initializers (their names in the
/// tensors are ignored); each must match the element type and the fixed dimensions the model
/// declares. Node inputs resolve to graph inputs, initializers, or outputs of earlier nodes; an
/// empty name is an omitted optional input. Output tensors are named after the graph outputs.
/// QuantizeLinear/DequantizeLinear run the operator version model.opset selects;
/// DynamicQuantizeLinear yields y (UINT8, x's shape), y_scale (FLOAT, rank 0) and y_zero_point
/// (UINT8, rank 0). Throws qdq::Error (message starting with model.path, naming the node) for any
/// operator error, unknown value, or input count/type mismatch. Allocates every intermediate and
/// output tensor (intermediates live until the call returns); threads as `options` say.
std::vector<Tensor> run_model(const Model& model, const std::vector<Tensor>& inputs,
                              const ExecutionOptions& options = {});

// ---------------------------------------------------------------------------------------------------
// Comparison and printing

/// The storage code of element `index` (0-based, row-major) of `tensor`: the nibble or bit pair of a
/// packed type, the little-endian bit pattern otherwise (zero-extended to 64 bits). No allocation;
/// `index` must be below the element count.
uint64_t element_code(const Tensor& tensor, uint64_t index);

/// A readable rendering of one element code of `type`: integers in decimal, floats as the shortest
/// decimal that identifies the value ("nan", "inf", "-0"); narrow types (at most 16 bits) and floats
/// append the hex code, e.g. "-8 (0x8)", "1.125 (0x39)", "nan (0x7fc00000)". Allocates the string.
std::string format_element(DataType type, uint64_t code);

/// Compares `got` with `expected` bit-exactly: same type, same shape, same element codes, except
/// that any NaN equals any NaN of the same type (sign and payload ignored); −0 and +0 differ, and
/// sub-byte padding is ignored. Returns std::nullopt when they match, else a one-line description
/// of the first difference relative to `label`, e.g.
/// "output_0[3] = 0x39 ..., expected ... (2 of 12 elements differ)" or
/// "output_0 is FLOAT16 [2], expected FLOAT [2]". Allocates only the message.
std::optional<std::string> compare_tensors(const Tensor& got, const Tensor& expected, std::string_view label);

}  // namespace qdq::onnx
