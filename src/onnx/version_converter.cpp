#include "version_converter.hpp"

#include "onnx_subset.pb.h"
#include "qdq/types.hpp"

namespace qdq::onnx {

// Placeholder until the converter lands: refuses every conversion that would change a version.
OpsetConversion convert_opset(::onnx::ModelProto& model, int64_t target_opset) {
  OpsetConversion result;
  for (const auto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") result.from_opset = opset.version();
  }
  result.to_opset = result.from_opset;
  result.from_ir_version = result.to_ir_version = model.ir_version();
  if (target_opset > result.from_opset) {
    throw Error("convert_opset: raising opset " + std::to_string(result.from_opset) + " to " +
                std::to_string(target_opset) + " is not implemented yet");
  }
  return result;
}

}  // namespace qdq::onnx
