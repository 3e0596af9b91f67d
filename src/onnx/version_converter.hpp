// Raising a model's ai.onnx opset: the nodes whose operator changed between two versions are
// rewritten so that the model computes exactly what it computed before (ONNX's version converter
// does the same job in Python; this one works on qdq's protobuf messages in place, so fields qdq
// does not know survive).
//
// Internal to qdq_onnx and the tools: it needs the generated onnx_subset.pb.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
}

namespace qdq::onnx {

/// What convert_opset changed, for reports.
struct OpsetConversion {
  int64_t from_opset = 0;
  int64_t to_opset = 0;
  int64_t from_ir_version = 0;
  int64_t to_ir_version = 0;
  /// One line per rewritten node, e.g. "Squeeze 'sq1': axes attribute -> input (13)".
  std::vector<std::string> changes;
};

/// The newest ai.onnx opset the generated operator table (op_versions.inc) knows. Allocates nothing.
int64_t max_supported_opset();

/// The least IR version a model importing ai.onnx `opset` needs (0 if unknown). Allocates nothing.
int64_t min_ir_version_for_opset(int64_t opset);

/// Raises `model`'s ai.onnx opset_import to `target_opset` (and its ir_version to the least one that
/// opset needs, if lower), converting every default-domain node of the main graph and of every
/// subgraph (If/Loop/Scan bodies) whose operator has a different since-version at the two opsets.
/// A target at or below the current opset changes nothing. Throws qdq::Error — before changing
/// anything — naming the op, its node and both versions when a node cannot be converted exactly (the
/// first such node, and how many more there are). New inputs are int64/float initializers of the graph
/// that holds the node (subgraphs get their own). Model-local functions that import ai.onnx below the
/// target are converted the same way (new constants become Constant nodes) and their import raised; one
/// importing a newer ai.onnx than the target is an error. Allocates the nodes and initializers it adds;
/// single-threaded.
OpsetConversion convert_opset(::onnx::ModelProto& model, int64_t target_opset);

}  // namespace qdq::onnx
