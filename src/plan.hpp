// Validation: one call of an operator becomes a resolved, checked description (types, division type,
// plan; see iteration_plan.hpp) before any kernel runs. Kernels only ever see those structs.
#pragma once

#include <cstdint>
#include <string>

#include "iteration_plan.hpp"
#include "qdq/qdq.hpp"

namespace qdq::detail {

/// An operator's name and version ("QuantizeLinear", 25), turned into the "QuantizeLinear-25"
/// prefix of an error message only when a check fails (nothing is allocated on the success path).
struct OpName {
  const char* name;
  int version;
  std::string str() const;
};

/// Checks a QuantizeLinear call against its version's rules; throws qdq::Error naming the rule.
QuantizeCall plan_quantize(const QuantizeLinearAttributes& attributes, const TensorView& x, const TensorView& y_scale,
                           const TensorView* y_zero_point);

/// Checks a DequantizeLinear call against its version's rules; throws qdq::Error naming the rule.
DequantizeCall plan_dequantize(const DequantizeLinearAttributes& attributes, const TensorView& x,
                               const TensorView& x_scale, const TensorView* x_zero_point);

/// Throws unless `y` is exactly the output described by (type, shape, bytes).
void check_output(const OpName& op, const MutableTensorView& y, DataType type, std::span<const int64_t> shape,
                  uint64_t bytes);

}  // namespace qdq::detail
