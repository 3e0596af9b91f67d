// Shared between the qdq_onnx sources; not installed, not for the tools.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "qdq_onnx.hpp"

namespace onnx {
class TensorProto;
}

namespace qdq::onnx {

struct Sizes {
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

// Element and byte counts of `dims` for `type`; qdq::Error starting with `what` for negative dims,
// counts overflowing 64 bits (elements: 63) or bytes that do not fit in size_t.
Sizes checked_sizes(DataType type, std::span<const int64_t> dims, const std::string& what);

// The conversions behind parse_tensor / serialize_tensor, for messages nested in a model.
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& what);
void tensor_to_proto(const Tensor& tensor, bool use_typed_fields, ::onnx::TensorProto& proto, const std::string& what);

// The whole file; qdq::Error naming `path` if it cannot be opened or read.
std::string read_file_bytes(const std::string& path);

}  // namespace qdq::onnx
