// Kernel entry points. A kernel processes the flat elements [begin, end) of a validated call; `begin`
// is a multiple of 4 (so packed outputs are written in whole bytes per task) and `end` is either a
// multiple of 4 or the tensor's end. Where the call's `columns` is set (a row-tile task,
// RowTileTasks), only those columns of each row in [begin, end). Kernels never throw and never
// allocate on the heap.
#pragma once

#include <cstdint>

#include "iteration_plan.hpp"

namespace qdq::detail {

/// How a vectorised kernel writes y. kStream: the whole cache lines of each task with non-temporal
/// stores (no read for ownership of lines that are about to be overwritten) and one store fence at
/// the task's end, so that the pool's completion of the task also publishes its data. The bytes
/// written are the same either way.
enum class StoreMode { kNormal, kStream };

using QuantizeKernel = void (*)(const QuantizeCall& call, void* y, int64_t begin, int64_t end);
using DequantizeKernel = void (*)(const DequantizeCall& call, void* y, int64_t begin, int64_t end);

/// The scalar reference kernels: every type combination, the oracle for the vectorised ones.
void quantize_scalar(const QuantizeCall& call, void* y, int64_t begin, int64_t end);
void dequantize_scalar(const DequantizeCall& call, void* y, int64_t begin, int64_t end);

/// Whether the quantize kernel that select_quantize_kernel chooses for `call` shares a row tile's
/// reciprocals between the rows of a row-tile task (simd::shares_row_reciprocals on this CPU's target;
/// never the scalar kernel), so that such tasks pay even where rows are short. Allocates nothing;
/// thread-safe (the first call on a target may time its quotient routes).
bool quantize_shares_row_reciprocals(const QuantizeCall& call, bool force_scalar);

/// DynamicQuantizeLinear's range of float32 values: min and max of the non-NaN values with 0 included
/// (std::min/std::max from 0, so -0 never replaces +0), and whether any value is NaN.
struct FloatRange {
  float lo = 0.0f;
  float hi = 0.0f;
  bool nan = false;
};

/// The range of x[begin, end); `elements`, x's whole count, tells a vectorised kernel whether x
/// streams from memory (it never changes the result).
using RangeKernel = FloatRange (*)(const float* x, int64_t begin, int64_t end, int64_t elements);

/// The scalar reference of the range, the oracle for the vectorised one.
FloatRange range_scalar(const float* x, int64_t begin, int64_t end, int64_t elements);

/// The vectorised range kernel for this CPU, or range_scalar (forced, or no SIMD target), for an x
/// of `x_bytes` (prepare_line_requests: the first large x measures the range loop's line requests).
RangeKernel select_range_kernel(bool force_scalar, uint64_t x_bytes);

/// The fastest kernel for this call on this CPU, chosen once per call; the scalar kernel where no
/// vectorised one covers the combination, or when `force_scalar` is set. The vectorised kernel's
/// StoreMode comes from choose_store_mode (store_policy.hpp) for `store_bytes`: the call's output
/// size, or the larger output it is part of (ExecutionOptions::whole_output_bytes).
QuantizeKernel select_quantize_kernel(const QuantizeCall& call, bool force_scalar, uint64_t store_bytes);
DequantizeKernel select_dequantize_kernel(const DequantizeCall& call, bool force_scalar, uint64_t store_bytes);

}  // namespace qdq::detail
