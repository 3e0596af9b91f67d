/// \file
/// qdq — ONNX QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, bit-exact, every opset.
///
/// The three operators take caller-owned, contiguous tensors in ONNX's layout (row-major; INT4, UINT4,
/// FLOAT4E2M1 packed two per byte and INT2, UINT2 four per byte, first element in the low bits;
/// multi-byte elements little-endian, i.e. native on the platforms qdq supports), so an ONNX
/// TensorProto's raw_data can be passed without copying.
///
/// Every call validates first, against the rules of the operator version the opset selects, and only
/// then writes the output: on any qdq::Error the output buffer is untouched.
///
/// Threads and stack: every function here may be called from any number of threads at once. Calls share
/// qdq's one thread pool; a call that finds it busy runs its tasks on its own thread. A call needs up to
/// about 56 KiB of stack on each thread that runs its tasks (the calling thread, qdq's pool workers or
/// the threads of an ExecutionOptions::parallel_for) — chunk scratch and vector registers spilled in the
/// SIMD kernels; about 17 KiB in the scalar path. Measured over every type family by
/// tests/unit/stack_use_test.cpp (x86-64, GCC 12, Release, AVX3), which checks it stays within 64 KiB:
/// give a thread that calls qdq 64 KiB of stack beyond its own needs.
///
/// Where the ONNX text and its reference implementation disagree, qdq follows the decisions listed in
/// docs/policy.md — e.g. QuantizeLinear divides in the type of y_scale (or `precision`), a NaN
/// quotient gives the integer type's minimum, ±inf saturates, NaN → FLOAT4E2M1 gives +6, ±inf →
/// FLOAT8E4M3FNUZ/E5M2FNUZ with saturate=1 gives NaN.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qdq/export.hpp"
#include "qdq/types.hpp"
#include "qdq/version.hpp"

namespace qdq {

/// How the codes of a 2/4-bit type (INT4, UINT4, INT2, UINT2, FLOAT4E2M1) lie in a tensor's bytes.
enum class CodeLayout : uint8_t {
  kPacked,     ///< ONNX's layout: two (4-bit) or four (2-bit) codes per byte, first in the low bits.
  kOnePerByte  ///< One code per byte, in its low bits (ml_dtypes' layout): an input's high bits are not
               ///< read; an output's bytes are the values as int8 (INT4, INT2) or uint8 (UINT4, UINT2).
};

/// A read-only view of a caller-owned tensor. `data` points at `size_bytes` bytes holding
/// element_count(shape) elements of `type` in ONNX's layout. The view does not own anything.
struct TensorView {
  DataType type = DataType::kUndefined;  ///< Element type.
  std::span<const int64_t> shape;        ///< Dimensions, row-major; empty = rank 0 (one element).
  const void* data = nullptr;            ///< The first byte of the elements.
  size_t size_bytes = 0;                 ///< Bytes at `data`: exactly storage_bytes(type, element_count(shape)).
  /// kOnePerByte: a 2/4-bit x of DequantizeLinear given one code per byte (size_bytes is then the
  /// element count), read in place, as fast as packed codes; every other operand must be kPacked.
  CodeLayout layout = CodeLayout::kPacked;
};

/// A writable view of a caller-owned output buffer; the same layout rules as TensorView.
struct MutableTensorView {
  DataType type = DataType::kUndefined;  ///< Element type.
  std::span<const int64_t> shape;        ///< Dimensions, row-major; empty = rank 0 (one element).
  void* data = nullptr;                  ///< The first byte of the output buffer.
  size_t size_bytes = 0;                 ///< Bytes at `data`: exactly storage_bytes(type, element_count(shape)).
  /// kOnePerByte: QuantizeLinear's INT4, UINT4, INT2 or UINT2 y written one value per byte (size_bytes
  /// is then the element count), as int8/uint8, from the 8-bit kernels; every other output is kPacked.
  CodeLayout layout = CodeLayout::kPacked;
};

/// What an operator will produce: the caller allocates `size_bytes` bytes for it.
struct TensorSpec {
  DataType type = DataType::kUndefined;  ///< Element type of the output.
  std::vector<int64_t> shape;            ///< Dimensions of the output.
  uint64_t size_bytes = 0;               ///< Bytes the output occupies in ONNX's layout.
};

/// QuantizeLinear's attributes. `opset` is the model's ai.onnx opset (>= 10); qdq runs the operator
/// version it selects (10, 13, 19, 21, 23, 24 or 25). An attribute left empty takes its default; one
/// set that the version does not define is an error (e.g. `axis` at opset 10, `precision` below 23).
struct QuantizeLinearAttributes {
  int64_t opset = 25;                   ///< The model's ai.onnx opset (>= 10).
  std::optional<int64_t> axis;          ///< default 1; negative counts from the back (v13+)
  std::optional<int64_t> saturate;      ///< default 1; float8 outputs only (v19+)
  std::optional<int64_t> block_size;    ///< default 0 = not blocked (v21+)
  std::optional<int64_t> output_dtype;  ///< default 0 = from the zero point, else UINT8 (v21+)
  std::optional<int64_t> precision;     ///< default 0 = the type of y_scale (v23+)
};

/// DequantizeLinear's attributes; the same conventions as QuantizeLinearAttributes.
struct DequantizeLinearAttributes {
  int64_t opset = 25;                   ///< The model's ai.onnx opset (>= 10).
  std::optional<int64_t> axis;          ///< default 1 (v13+)
  std::optional<int64_t> block_size;    ///< default 0 (v21+)
  std::optional<int64_t> output_dtype;  ///< default 0 = the type of x_scale (v23+)
};

/// A caller's parallel-for: run body(task) for every task in [0, tasks), in any order and on any
/// threads, and return when all have finished. qdq's results never depend on how tasks are spread.
using ParallelFor = std::function<void(size_t tasks, const std::function<void(size_t task)>& body)>;

/// How a call runs. The defaults read QDQ_NUM_THREADS and QDQ_FORCE_SCALAR from the environment,
/// once per process (at the first call that needs each).
struct ExecutionOptions {
  /// Threads to use: 0 = the process default (set_default_num_threads, else QDQ_NUM_THREADS, else the
  /// number of hardware threads). 1 = the calling thread only.
  int num_threads = 0;
  /// Use the scalar reference kernels even where a vectorised one exists (also QDQ_FORCE_SCALAR=1).
  bool force_scalar = false;
  /// If set, qdq hands its tasks (fixed-size pieces of the tensor, so results do not depend on how
  /// they are run) to this instead of its own thread pool; num_threads is then not used.
  ParallelFor parallel_for;
  /// When this call writes one part of a larger output that the caller fills with several calls (a
  /// tensor computed in slices of rows, say), that whole output's bytes: the vectorised kernels then
  /// choose their stores as for one call of that size (non-temporal past the caches, where this
  /// machine measured them faster). 0 = this call's own output. Never changes a result.
  uint64_t whole_output_bytes = 0;
};

/// Sets the process-wide default thread count used when ExecutionOptions::num_threads is 0
/// (0 restores the QDQ_NUM_THREADS / hardware default). Thread-safe.
QDQ_API void set_default_num_threads(int threads);

/// The thread count a call with num_threads = 0 would use now. Thread-safe.
QDQ_API int default_num_threads();

/// Runs body(task) once for every task in [0, tasks) on qdq's thread pool with the calling thread
/// taking part (or on options.parallel_for), as many threads as `options` say, and returns when all
/// have finished; for a caller's own work around qdq's calls (a tensor quantized slice by slice, each
/// slice followed by the caller's pass over it while it is in cache). A qdq call made inside body
/// runs on that task's thread. If tasks throw, one of their exceptions is rethrown after every task
/// has run. Allocates only what an exception needs; the pool starts its workers on first use.
QDQ_API void run_tasks(size_t tasks, const std::function<void(size_t task)>& body,
                       const ExecutionOptions& options = {});

/// Validates a QuantizeLinear node and returns its output's type, shape and byte size.
/// Throws qdq::Error naming the violated rule. Allocates only the returned shape; single-threaded.
/// `y_zero_point` may be null (absent).
QDQ_API TensorSpec quantize_linear_output(const QuantizeLinearAttributes& attributes, const TensorView& x,
                                          const TensorView& y_scale, const TensorView* y_zero_point);

/// Computes QuantizeLinear: y = saturate(round_half_even(x / y_scale) + y_zero_point), per-tensor,
/// per-axis or blocked as the scale's shape says. `y` must match quantize_linear_output exactly
/// (type, shape, byte size; or, one value per byte, the element count). Validates everything before
/// writing; on error throws qdq::Error and leaves `y` untouched. Allocates nothing proportional to the
/// tensor (fixed scratch on the stack: up to about 56 KiB per thread, see the top of this file; a
/// one-value-per-byte y with a zero point: its values, one byte per scale element); threads as
/// `options` say, with results independent of the thread count.
QDQ_API void quantize_linear(const QuantizeLinearAttributes& attributes, const TensorView& x, const TensorView& y_scale,
                             const TensorView* y_zero_point, const MutableTensorView& y,
                             const ExecutionOptions& options = {});

/// Validates a DequantizeLinear node and returns its output's type, shape and byte size.
/// Throws qdq::Error naming the violated rule. Allocates only the returned shape; single-threaded.
QDQ_API TensorSpec dequantize_linear_output(const DequantizeLinearAttributes& attributes, const TensorView& x,
                                            const TensorView& x_scale, const TensorView* x_zero_point);

/// Computes DequantizeLinear: y = (x − x_zero_point) · x_scale, the difference exact, the product in
/// float32 and rounded once to the output type. Same validation, allocation and threading contract
/// as quantize_linear.
QDQ_API void dequantize_linear(const DequantizeLinearAttributes& attributes, const TensorView& x,
                               const TensorView& x_scale, const TensorView* x_zero_point, const MutableTensorView& y,
                               const ExecutionOptions& options = {});

/// The scale and zero point DynamicQuantizeLinear derives from x.
struct DynamicQuantizationParameters {
  float y_scale = 0.0f;      ///< (max(0, max x) − min(0, min x)) / 255; docs/policy.md for edge cases.
  uint8_t y_zero_point = 0;  ///< saturate(round_half_even(−min(0, min x) / y_scale)).
};

/// Computes DynamicQuantizeLinear (opset >= 11): the uint8 scale and zero point covering
/// [min(0, min x), max(0, max x)], then y = QuantizeLinear(x) with them. `x` must be FLOAT with at
/// least one element; `y` UINT8 of x's shape. Throws qdq::Error before writing anything on bad input.
/// Allocates nothing proportional to the tensor; threads as `options` say (two passes: min/max, then
/// quantize), deterministic for any thread count.
QDQ_API DynamicQuantizationParameters dynamic_quantize_linear(const TensorView& x, const MutableTensorView& y,
                                                              const ExecutionOptions& options = {}, int64_t opset = 11);

/// The operator version (since-version) that a model opset selects for QuantizeLinear and
/// DequantizeLinear: 10, 13, 19, 21, 23, 24 or 25. Throws qdq::Error for an opset below 10.
QDQ_API int quantize_linear_version(int64_t opset);

/// How float32 QuantizeLinear to y_type divides by a scale that is not a power of two on this CPU's
/// SIMD target: "division", "rounding check", "code rounding check" or "Markstein reciprocal" (all
/// give the same codes; the faster is measured once per target at the first call, or
/// QDQ_QUANTIZE_ROUTE=divide|reciprocal forces one). For benchmark reports. Allocates nothing;
/// thread-safe.
QDQ_API const char* quantize_division_route(DataType y_type);

/// As quantize_division_route(y_type) for QuantizeLinear dividing in `division_type` (the scale's
/// type or `precision`): float16 and bfloat16 give "16-bit reciprocal" (a multiply whose product
/// rounds to the quotient's bits in that type), float64 (int32 scales) "division". Allocates
/// nothing; thread-safe.
QDQ_API const char* quantize_division_route(DataType y_type, DataType division_type);

/// Which stores the vectorised kernels write y with in a call whose output is `output_bytes` bytes:
/// "non-temporal" or "normal" (never a different result; "normal" where the scalar kernels run, as
/// under QDQ_FORCE_SCALAR=1). QDQ_STREAM_STORES=always|never forces one;
/// otherwise outputs from a threshold near the last-level cache stream where a one-time probe
/// measured non-temporal stores to be faster. For benchmark reports. The first call at or above the
/// threshold runs the probe (up to 80 MiB of buffers, about 30 ms); thread-safe.
QDQ_API const char* output_stores(uint64_t output_bytes);

/// Which of x's lines the vectorised loop `loop` ("quantize", "dequantize" or "range", the first
/// pass of DynamicQuantizeLinear) asks for ahead of its loads where x is `elements` of `x_type`:
/// "none", "L1" or "L1+L2" (never a different result; "none" where the scalar kernels run, and for
/// 2/4-bit and float4 x, which dequantize unpacks in cache first). Under 1 MiB of x "L1" ("none" for
/// dequantize), up to 16 MiB "L1+L2"; from 16 MiB, where x streams from memory, a one-time probe per
/// loop measures whether L1 alone runs it clearly faster than L1+L2 on this CPU (25–60 ms, at the
/// first such call, which this may be). QDQ_PREFETCH=none|l1|l2, or per loop range:l1,quantize:l2,..., forces them
/// from 1 MiB. For benchmark reports. Throws qdq::Error for another `loop` or a bad QDQ_PREFETCH;
/// thread-safe.
QDQ_API const char* x_line_requests(std::string_view loop, DataType x_type, uint64_t elements);

/// Makes every later call run the SIMD kernels of `target` (a Highway target name: "AVX3", "AVX2",
/// "SSE4", ...), or those of the best one this CPU runs for "". For benchmarks, to measure another
/// CPU's path on this one. Throws qdq::Error naming the target when qdq is not compiled for it or this
/// CPU cannot run it. Allocates only the error; not to be called while another call runs.
QDQ_API void set_simd_target(std::string_view target);

/// The SIMD target the calls run on now ("AVX3", ...; "" without SIMD kernels). Allocates the string.
QDQ_API std::string simd_target();

}  // namespace qdq
