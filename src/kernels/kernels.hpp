// Kernel entry points. A kernel processes the flat elements [begin, end) of a validated call; `begin`
// is a multiple of 4 (so packed outputs are written in whole bytes per task) and `end` is either a
// multiple of 4 or the tensor's end. Kernels never throw and never allocate on the heap.
#pragma once

#include <cstdint>

#include "iteration_plan.hpp"

namespace qdq::detail {

using QuantizeKernel = void (*)(const QuantizeCall& call, void* y, int64_t begin, int64_t end);
using DequantizeKernel = void (*)(const DequantizeCall& call, void* y, int64_t begin, int64_t end);

/// The scalar reference kernels: every type combination, the oracle for the vectorised ones.
void quantize_scalar(const QuantizeCall& call, void* y, int64_t begin, int64_t end);
void dequantize_scalar(const DequantizeCall& call, void* y, int64_t begin, int64_t end);

/// The fastest kernel for this call on this CPU, chosen once per call; the scalar kernel where no
/// vectorised one covers the combination, or when `force_scalar` is set.
QuantizeKernel select_quantize_kernel(const QuantizeCall& call, bool force_scalar);
DequantizeKernel select_dequantize_kernel(const DequantizeCall& call, bool force_scalar);

}  // namespace qdq::detail
