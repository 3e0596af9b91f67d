// libFuzzer target: hostile TensorProto / ModelProto bytes (see harness.hpp, run_onnx_case).
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return run_onnx_case(data, size); }
