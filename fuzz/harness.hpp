// The fuzz harnesses, as plain functions so that the libFuzzer targets (fuzz_*.cpp) and the
// regression tests (tests/robustness/regressions_test.cpp) run exactly the same code.
//
// Each function takes arbitrary bytes, drives qdq with them, swallows qdq::Error (the documented way
// to reject bad input) and checks qdq's invariants. A broken invariant prints one line starting with
// "qdq-fuzz invariant" to stderr and calls std::abort(), which libFuzzer records as a crash and a
// test run reports as a failure. Both return 0 (libFuzzer's "keep this input" convention).
#pragma once

#include <cstddef>
#include <cstdint>

/// Operators on fuzzed shapes, types, attributes, opsets, buffer sizes and data: quantize_linear,
/// dequantize_linear (and their *_output) and dynamic_quantize_linear. Checks that mismatched
/// buffers are rejected, that a rejected call leaves its output untouched, that a successful call's
/// output matches *_output and an independent oracle (for the float32/integer combinations), and
/// that the SIMD and scalar kernels, 1/2 threads and a custom ParallelFor give identical bytes.
int run_operator_case(const uint8_t* data, size_t size);

/// The bytes as a serialized TensorProto and as an ONNX ModelProto (qdq::onnx::parse_tensor /
/// parse_model); a tensor that parses must survive serialize → parse unchanged (raw and typed
/// storage), and a model that parses is run (run_model) on inputs synthesized from its declared
/// input types and shapes, with the SIMD and scalar kernels giving identical outputs.
/// Only available where qdq_onnx is built (QDQ_FUZZ_HAVE_ONNX).
int run_onnx_case(const uint8_t* data, size_t size);
