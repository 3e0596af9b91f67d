// Validation and the iteration plan: one call of an operator becomes a resolved, checked description
// (types, division type, plan) before any kernel runs. Kernels only ever see these structs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qdq/qdq.hpp"

namespace qdq::detail {

enum class Granularity { kPerTensor, kPerAxis, kBlocked };

/// The outer × axis × inner view of a tensor and where its scale/zero point live.
/// Element (o, i, n) — o < outer, i < axis_len, n < inner — is flat index (o·axis_len + i)·inner + n
/// and uses parameter index o·param_outer_stride + (i / block)·param_axis_stride + n·param_inner_stride.
struct Plan {
  Granularity granularity = Granularity::kPerTensor;
  int64_t elements = 0;
  int64_t outer = 1;
  int64_t axis_len = 1;
  int64_t inner = 1;
  int64_t block = 1;  // block_size for blocked, 1 otherwise
  int64_t param_outer_stride = 0;
  int64_t param_axis_stride = 0;
  int64_t param_inner_stride = 0;
};

/// A maximal run of consecutive elements whose parameter index is constant (step 0) or grows by one
/// per element (step 1): the unit every kernel works on.
struct Segment {
  int64_t count;
  int64_t param_index;
  int param_step;
};

/// The segment that starts at flat element `first` and ends no later than `limit`.
Segment segment_at(const Plan& plan, int64_t first, int64_t limit);

/// Walks the elements [begin, end) segment by segment, in pieces of at most `piece` elements:
/// fn(first, count, param_index, param_step) for each piece, in order.
template <class Fn>
void for_each_piece(const Plan& plan, int64_t begin, int64_t end, int64_t piece, Fn&& fn) {
  for (int64_t position = begin; position < end;) {
    const Segment segment = segment_at(plan, position, end);
    for (int64_t done = 0; done < segment.count; done += piece) {
      const int64_t count = segment.count - done < piece ? segment.count - done : piece;
      fn(position + done, count, segment.param_index + done * segment.param_step, segment.param_step);
    }
    position += segment.count;
  }
}

/// Everything a QuantizeLinear kernel needs, validated.
struct QuantizeCall {
  int version = 25;
  DataType x_type = DataType::kUndefined;
  DataType scale_type = DataType::kUndefined;
  DataType zero_point_type = DataType::kUndefined;  // kUndefined: no zero point
  DataType y_type = DataType::kUndefined;
  DataType division_type = DataType::kFloat;  // kFloat, kFloat16, kBFloat16 or kDouble
  bool saturate = true;
  Plan plan;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* zero_point = nullptr;
  std::span<const int64_t> y_shape;  // x's shape (the caller's storage; valid during the call)
  uint64_t y_bytes = 0;
};

/// Everything a DequantizeLinear kernel needs, validated.
struct DequantizeCall {
  int version = 25;
  DataType x_type = DataType::kUndefined;
  DataType scale_type = DataType::kUndefined;
  DataType zero_point_type = DataType::kUndefined;  // kUndefined: absent or not used (float8)
  DataType y_type = DataType::kUndefined;
  Plan plan;
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* zero_point = nullptr;
  std::span<const int64_t> y_shape;  // x's shape (the caller's storage; valid during the call)
  uint64_t y_bytes = 0;
};

/// An operator's name and version ("QuantizeLinear", 25), turned into the "QuantizeLinear-25"
/// prefix of an error message only when a check fails (nothing is allocated on the success path).
struct OpName {
  const char* name;
  int version;
  std::string str() const;
};

/// Checks a QuantizeLinear call against its version's rules; throws qdq::Error naming the rule.
QuantizeCall plan_quantize(const QuantizeLinearAttributes& attributes, const TensorView& x,
                           const TensorView& y_scale, const TensorView* y_zero_point);

/// Checks a DequantizeLinear call against its version's rules; throws qdq::Error naming the rule.
DequantizeCall plan_dequantize(const DequantizeLinearAttributes& attributes, const TensorView& x,
                               const TensorView& x_scale, const TensorView* x_zero_point);

/// Throws unless `y` is exactly the output described by (type, shape, bytes).
void check_output(const OpName& op, const MutableTensorView& y, DataType type, std::span<const int64_t> shape,
                  uint64_t bytes);

}  // namespace qdq::detail
