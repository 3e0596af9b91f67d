// libFuzzer target: qdq's operators on hostile arguments (see harness.hpp, run_operator_case).
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { return run_operator_case(data, size); }
